// `gparity collectives PATH... [--baseline PATH]...`: per rank, the collective sequence from
// Flight Recorder dumps and TORCH_TRACE graphs; do all ranks of each stream agree, and what
// changed against a baseline (reorderings as permutations, changes as changes); orders across
// process groups, hangs and deadlock cycles (diff/collectives/schedule.hpp). Everything is
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
  bool no_schedules = false;
  ReportOptions report;
};

}  // namespace

void register_collectives(CLI::App& app, Action& action) {
  auto a = std::make_shared<CollectivesArgs>();
  CLI::App* cmd = app.add_subcommand(
      "collectives",
      "Per rank, the collective sequence (kind, sizes, dtypes) from Flight Recorder dumps "
      "(rank<r>_flight_recorder.json) and TORCH_TRACE graphs (_c10d_functional ops, wait_tensor): do all "
      "ranks of each process group / graph issue the same sequence? Across groups: ranks that issue two "
      "groups' collectives in opposite orders, and from dumps of a hung job who waits for whom, the deadlock "
      "cycle and its cause (an order inversion or a skipped collective). With --baseline, what was "
      "reordered (shown as a permutation), changed, added, removed or moved across another group's "
      "collective. Dumps are told by content; a dump's rank is its file name's (rank<r>_..., or PyTorch's "
      "TORCH_FR_DUMP_TEMP_FILE + rank). Exit 0 same, 1 different, hung or a dump missing, 2 bad input.");
  cmd->add_option("PATH", a->paths, "Run folders (dumps and/or trace/), dump files or TORCH_TRACE logs")
      ->required();
  cmd->add_option("--baseline", a->baseline, "The baseline run, in the same forms (repeatable)");
  cmd->add_flag("--no-schedules", a->no_schedules,
                "Leave out the analyses across process groups (order inversions, hangs, missing dumps, moves "
                "against the baseline): per-group checks only");
  add_report_options(*cmd, a->report);
  cmd->callback([a, &action] {
    action = [a] {
      const auto run = diff::load_collectives(a->paths);
      std::optional<diff::CollectiveRun> base;
      if (!a->baseline.empty()) base = diff::load_collectives(a->baseline);
      ReportSinks sinks(a->report, "gparity.collectives");
      diff::CollectiveOptions options;
      options.schedules = !a->no_schedules;
      return diff::report_collectives(run, base ? &*base : nullptr, sinks.consumer(), options);
    };
  });
}

}  // namespace gparity::cli
