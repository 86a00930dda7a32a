// gparity: the command-line front end. Parsing and comparing live in the libraries; this file
// only lists the commands. `gparity run` is forwarded to gparity-run (LibTorch).

#include <iostream>
#include <string_view>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  using namespace gparity::cli;
  try {
    if (argc > 1 && (std::string_view(argv[1]) == "run" || std::string_view(argv[1]) == "replay"))
      return exec_runtime_command(argc, argv);
    return run_app(argc, argv,
                   {register_hash, register_run_forwarder, register_compare, register_gate, register_graph,
                    register_graph_diff, register_collectives, register_buckets, register_nccl_rings});
  } catch (...) {
    std::cerr << "gparity: internal error\n";
    return kExitBadInput;
  }
}
