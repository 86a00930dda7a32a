// gparity: the command-line front end. Parsing and comparing live in the libraries; this file
// only dispatches and maps errors to exit codes.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/command.hpp"
#include "core/model/input_error.hpp"
#include "hash/block_view.hpp"

int main(int argc, char** argv) {
  using namespace gparity::cli;
  CLI::App app{
      "gparity: prove distributed PyTorch training runs are bitwise identical to their "
      "eager baselines, and show where they are not.\n"
      "Exit codes: 0 parity, 1 divergence, 2 bad input or usage."};
  app.name("gparity");
  app.require_subcommand(1);
  app.set_version_flag("--version", "gparity 0.1.0");

  Action action;
  register_hash(app, action);
  register_graph(app, action);
  register_graph_diff(app, action);
  register_compare(app, action);
  register_gate(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitParity : kExitBadInput;
  }
  try {
    return action ? action() : kExitBadInput;
  } catch (const gparity::model::InputError& e) {
    std::cerr << "gparity: error: " << e.what() << '\n';
    return kExitBadInput;
  } catch (const gparity::hash::BlockError& e) {
    std::cerr << "gparity: error: " << e.what() << '\n';
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "gparity: internal error: " << e.what() << '\n';
    return kExitBadInput;
  }
}
