// gparity-run: the LibTorch half of the CLI (`gparity run`), kept in its own executable so that
// every other command starts without loading LibTorch.

#include <iostream>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  using namespace gparity::cli;
  try {
    return run_app(argc, argv, {{"run", register_run}, {"replay", register_replay}});
  } catch (...) {
    std::cerr << "gparity: internal error\n";
    return kExitBadInput;
  }
}
