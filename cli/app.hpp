#pragma once
// The shared body of the `gparity` executables: builds the CLI11 app from a list of command
// registrars, parses, runs the chosen action and maps errors to exit codes (2 for bad input).

#include <initializer_list>

#include "cli/command.hpp"

namespace gparity::cli {

using Registrar = void (*)(CLI::App&, Action&);

int run_app(int argc, char** argv, std::initializer_list<Registrar> registrars);

/// `gparity run` lives in the separate executable gparity-run (next to gparity), so that the
/// other commands start without loading LibTorch. Replaces this process with it when argv[1]
/// is "run"; returns (with an exit code) only if that is impossible.
int exec_runtime_command(int argc, char** argv);

/// Lists `run` in `gparity --help`; the command itself is dispatched before parsing.
void register_run_forwarder(CLI::App& app, Action& action);

}  // namespace gparity::cli
