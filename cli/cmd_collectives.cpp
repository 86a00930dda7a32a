// `gparity collectives PATH... [--baseline PATH]...`: per rank, the collective sequence from
// Flight Recorder dumps and TORCH_TRACE graphs; do all ranks of each stream agree, and what
// changed against a baseline (reorderings as permutations, changes as changes). Everything is
// computed in diff/collectives; this file parses options and picks the reporters.

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/report_options.hpp"
#include "diff/collectives/collectives.hpp"

namespace gparity::cli {
namespace {

struct CollectivesArgs {
  std::vector<std::string> paths;
  std::vector<std::string> baseline;
  ReportOptions report;
};

}  // namespace

void register_collectives(CLI::App& app, Action& action) {
  auto a = std::make_shared<CollectivesArgs>();
  CLI::App* cmd = app.add_subcommand(
      "collectives",
      "Per rank, the collective sequence (kind, sizes, dtypes) from Flight Recorder dumps "
      "(rank<r>_flight_recorder.json) and TORCH_TRACE graphs (_c10d_functional ops, wait_tensor): do all "
      "ranks of each process group / graph issue the same sequence? With --baseline, what was reordered "
      "(shown as a permutation), changed, added or removed. Exit 0 same, 1 different, 2 bad input.");
  cmd->add_option("PATH", a->paths, "Run folders (dumps and/or trace/), dump files or TORCH_TRACE logs")
      ->required();
  cmd->add_option("--baseline", a->baseline, "The baseline run, in the same forms (repeatable)");
  add_report_options(*cmd, a->report);
  cmd->callback([a, &action] {
    action = [a] {
      const auto run = diff::load_collectives(a->paths);
      std::optional<diff::CollectiveRun> base;
      if (!a->baseline.empty()) base = diff::load_collectives(a->baseline);
      ReportSinks sinks(a->report, "gparity.collectives");
      return diff::report_collectives(run, base ? &*base : nullptr, sinks.consumer());
    };
  });
}

}  // namespace gparity::cli
