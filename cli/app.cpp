#include "cli/app.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "core/model/base/output_error.hpp"
#include "hash/block_view.hpp"

namespace gparity::cli {

namespace {

// The chosen action, with errors mapped to exit codes (bad input and unwritable output: 2). A message may
// quote an input (a name, a line of a file): it is printed through display_lines, so its control characters
// are shown escaped (its own line breaks, such as a list of candidates, are kept).
int run_action(const Action& action) {
  try {
    return action ? action() : kExitBadInput;
  } catch (const model::InputError& e) {
    std::cerr << "gparity: error: " << model::display_lines(e.what()) << '\n';
  } catch (const model::OutputError& e) {  // a report or output file not written: never a verdict
    std::cerr << "gparity: error: " << model::display_lines(e.what()) << '\n';
  } catch (const hash::BlockError& e) {
    std::cerr << "gparity: error: " << model::display_lines(e.what()) << '\n';
  } catch (const std::exception& e) {
    std::cerr << "gparity: internal error: " << model::display_lines(e.what()) << '\n';
  }
  return kExitBadInput;
}

int finish(int rc, AppExit how) {
  if (how == AppExit::return_code) return rc;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}

}  // namespace

int run_app(int argc, char** argv, std::initializer_list<NamedRegistrar> registrars, AppExit how) {
  CLI::App app{
      "gparity: prove distributed PyTorch training runs are bitwise identical to their "
      "eager baselines, and show where they are not.\n"
      "Exit codes: 0 parity, 1 divergence or incomplete evidence, 2 bad input, usage or nothing compared."};
  app.name("gparity");
  app.require_subcommand(1);
  app.set_version_flag("--version", "gparity 0.1.0");

  Action action;
  const std::string_view first = argc > 1 ? argv[1] : "";
  const bool named = std::any_of(registrars.begin(), registrars.end(),
                                 [&](const NamedRegistrar& r) { return r.command == first; });
  for (const NamedRegistrar& r : registrars)
    if (!named || r.command == first) r.add(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return finish(rc == 0 ? kExitParity : kExitBadInput, how);
  }
  return finish(run_action(action), how);
}

int exec_runtime_command(int argc, char** argv) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto runner = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / "gparity-run";
  if (!std::filesystem::exists(runner)) {
    std::cerr << "gparity: error: `gparity run` needs " << runner.string()
              << ", which is built only with LibTorch (GPARITY_WITH_TORCH=ON)\n";
    return kExitBadInput;
  }
  std::vector<char*> args(argv, argv + argc);
  std::string name = runner.string();
  args[0] = name.data();
  args.push_back(nullptr);
  ::execv(name.c_str(), args.data());
  std::cerr << "gparity: error: cannot start " << name << ": " << std::strerror(errno) << '\n';
  return kExitBadInput;
}

void register_run_forwarder(CLI::App& app, Action& /*action*/) {
  app.add_subcommand("run",
                     "Train the built-in debug model on N ranks over c10d (Gloo on CPU, NCCL on GPU) "
                     "and record a trace (see `gparity run --help`).")
      ->allow_extras();
  app.add_subcommand("replay",
                     "Run captured graphs in C++ on every rank and hash every node "
                     "(see `gparity replay --help`).")
      ->allow_extras();
}

}  // namespace gparity::cli
