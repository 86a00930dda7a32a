#pragma once
// `--group NAME=RANKS` and `--flight-recorder PATH` for the commands that hoist process-group
// names (`graph hoist`, `graph devices`, `replay`): the group table comes from the dumps given, else from
// the rank<r>_flight_recorder.json files found beside the graph source, plus the --group specs.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/model/graph/process_groups.hpp"

namespace gparity::cli {

struct GroupOptions {
  std::vector<std::string> specs;
  std::vector<std::string> dumps;
  bool no_discovery = false;

  void add_to(CLI::App* cmd) {
    cmd->add_option(
        "--group", specs,
        "Process group NAME=RANK,RANK,... (repeatable; ranges like 0-3 allowed), e.g. --group 3=0,1");
    cmd->add_option("--flight-recorder", dumps,
                    "Flight Recorder dump(s) or run folder(s) whose pg_config names the groups (repeatable; "
                    "default: rank<r>_flight_recorder.json beside SOURCE or in its parent)");
    cmd->add_flag("--no-flight-recorder", no_discovery,
                  "Do not look for Flight Recorder dumps beside SOURCE");
  }

  /// The table, and in `used` the dumps it was read from (for reports).
  [[nodiscard]] model::ProcessGroupTable load(const std::string& source,
                                              std::vector<std::string>& used) const {
    used = dumps;
    if (used.empty() && !no_discovery) used = model::flight_recorder_dumps_near(source);
    return model::load_group_table(used, specs);
  }
};

}  // namespace gparity::cli
