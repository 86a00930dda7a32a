#include "tests/reliability/hostile_inputs.hpp"

#include "tests/reliability/hostile/formats.hpp"

namespace gparity::testing {

const std::vector<HostileInput>& hostile_inputs() {
  static const std::vector<HostileInput> inputs = [] {
    std::vector<HostileInput> all;
    const hostile::InputAdder add{all};
    hostile::add_any_inputs(add);
    hostile::add_run_inputs(add);
    hostile::add_checkpoint_inputs(add);
    hostile::add_graph_inputs(add);
    hostile::add_flight_recorder_inputs(add);
    hostile::add_plan_inputs(add);
    return all;
  }();
  return inputs;
}

const std::vector<std::string>& hostile_kinds() {
  static const std::vector<std::string> kinds = {
      "empty file",
      "empty folder",
      "wrong format",
      "truncated at every record boundary",
      "zero ranks",
      "one side empty",
      "ranks mixed from two runs",
      "duplicate ranks",
      "pickle GLOBAL/REDUCE of os.system / builtins.eval / subprocess.Popen",
      "pickle 2^40 length claim",
      "10^6-deep nesting",
      "zip 2^40 declared sizes or ../ names",
      "safetensors header longer than the file",
      "DCP metadata past a file's end",
      "symlink loop",
      "non-UTF-8 and control characters in names",
      "NaN/Inf in JSON",
      "100 MB single line",
      "full disk",
      "read-only output folder",
  };
  return kinds;
}

std::map<std::string, std::string> standard_vars(const std::filesystem::path& dir) {
  return {{"tmp", dir.string()},
          {"out", (dir / "out").string()},
          {"eager", (hostile::kRuns / "eager").string()},
          {"eager_repeat", (hostile::kRuns / "eager_repeat").string()},
          {"compile", (hostile::kRuns / "compile").string()},
          {"policy", (hostile::kRuns / "gate.json").string()},
          {"samples", (hostile::kSource / "samples").string()},
          {"data", hostile::kData.string()}};
}

}  // namespace gparity::testing
