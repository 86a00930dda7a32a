#pragma once
// The shared body of the `gparity` executables: builds the CLI11 app from a list of command
// registrars, parses, runs the chosen action and maps errors to exit codes (2 for bad input).

#include <initializer_list>
#include <string_view>

#include "cli/command.hpp"

namespace gparity::cli {

using Registrar = void (*)(CLI::App&, Action&);

/// A registrar and the top-level command it adds (several may add to one command).
struct NamedRegistrar {
  std::string_view command;
  Registrar add;
};

/// How run_app ends: by returning the exit code, or by ending the process with it once the output
/// is flushed, without tearing down the CLI11 tree and static objects one by one (the kernel
/// frees a process's memory at once; about 0.1 ms of a small command). Only for processes whose
/// objects hold nothing that must be released by hand (no LibTorch, no process groups).
enum class AppExit { return_code, now };

/// Builds the app and runs it. When argv[1] names a command, only that command's registrars run:
/// building every command's options costs more than a small command's work (0.4 ms of each
/// `gparity` start, on a tool run once per file in scripts). Anything else (`--help`,
/// `--version`, a typo) gets every command, so help lists them all and typos get suggestions.
int run_app(int argc, char** argv, std::initializer_list<NamedRegistrar> registrars,
            AppExit how = AppExit::return_code);

/// `gparity run` lives in the separate executable gparity-run (next to gparity), so that the
/// other commands start without loading LibTorch. Replaces this process with it when argv[1]
/// is "run"; returns (with an exit code) only if that is impossible.
int exec_runtime_command(int argc, char** argv);

/// Lists `run` in `gparity --help`; the command itself is dispatched before parsing.
void register_run_forwarder(CLI::App& app, Action& action);

}  // namespace gparity::cli
