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
                   {{"hash", register_hash},
                    {"run", register_run_forwarder},
                    {"compare", register_compare},
                    {"gate", register_gate},
                    {"graph", register_graph},
                    {"graph", register_graph_diff},
                    {"collectives", register_collectives},
                    {"buckets", register_buckets},
                    {"nccl-rings", register_nccl_rings},
                    {"ops", register_ops}},
                   AppExit::now);
  } catch (...) {
    std::cerr << "gparity: internal error\n";
    return kExitBadInput;
  }
}
