#pragma once
// How a `gparity` subcommand plugs into the CLI: each cmd_<name>.cpp defines one register_*
// function that adds its CLI11 subcommand and sets the action main() runs after parsing.
// Actions return the process exit code: 0 parity / 1 divergence / 2 bad input or usage.

#include <functional>

namespace CLI {
class App;
}

namespace gparity::cli {

inline constexpr int kExitParity = 0;
inline constexpr int kExitDivergence = 1;
inline constexpr int kExitBadInput = 2;

using Action = std::function<int()>;

void register_hash(CLI::App& app, Action& action);
#if GPARITY_WITH_TORCH
void register_run(CLI::App& app, Action& action);
void register_replay(CLI::App& app, Action& action);
#endif
void register_graph(CLI::App& app, Action& action);
/// Adds `ranks`, `diff` and `devices` under `graph` (creating `graph` if no one did).
void register_graph_diff(CLI::App& app, Action& action);
/// Adds `hoist` under the `graph` subcommand (cmd_graph_hoist.cpp).
void register_graph_hoist(CLI::App& graph, Action& action);
void register_compare(CLI::App& app, Action& action);
void register_gate(CLI::App& app, Action& action);
void register_collectives(CLI::App& app, Action& action);
void register_buckets(CLI::App& app, Action& action);
void register_nccl_rings(CLI::App& app, Action& action);
/// `gparity ops show` (cmd_ops.cpp).
void register_ops(CLI::App& app, Action& action);

struct ReportOptions;
/// --json, --junit FILE, --markdown FILE, --json-file FILE, --verbose (cmd_compare.cpp).
void add_report_options(CLI::App& cmd, ReportOptions& r);

}  // namespace gparity::cli
