#pragma once
// One rank of both runs, step by step (internal to diff/runs): missing and extra steps, loss and
// grad norm (bitwise or within the tolerance), every per-parameter hash array both record
// (aligned by parameter name). The engine (run_compare.cpp) runs it per rank on its workers.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "diff/replay/node_compare.hpp"
#include "diff/report/finding.hpp"
#include "diff/runs/run_compare.hpp"

namespace gparity::diff::runs {

/// Steps one run's rank recorded and the other's did not, held until both runs' evidence is known
/// (settle_steps).
struct StepGaps {
  std::vector<std::int64_t> only_b, only_c;    // in baseline only, in candidate only
  std::optional<std::int64_t> last_b, last_c;  // the last step each side's rank recorded (in the window)
  std::optional<std::int64_t> values_first;    // first divergence in the steps both recorded
  nlohmann::json values_first_detail = nlohmann::json::object();
};

struct RankResult {
  std::vector<Finding> findings;
  std::vector<Check> checks;
  nlohmann::json data = nlohmann::json::object();
  std::optional<std::int64_t> first_divergence;
  bool compared = false;
  std::optional<model::DeviceMemoryPeaks> memory_b, memory_c;  // "device_memory" events, if any
  std::optional<NodeRankResult> nodes;  // replay runs: node records, classified across ranks later
  // What was compared, for "nothing compared" and gate requirements.
  std::size_t values_compared = 0;  // scalar and hash-array comparisons
  std::size_t steps_compared = 0;
  std::size_t params_compared = 0;
  StepGaps gaps;
};

/// Compares one rank of both runs. `hashes` false: scalars only (layouts differ). Its missing and
/// extra steps are left in `gaps` for settle_steps.
RankResult compare_rank(const model::RankTrace& b, const model::RankTrace& c, int rank, bool hashes,
                        const CompareOptions& o);

/// Settles the steps one side's rank lacks (call once, after compare_rank). Steps past the last
/// one a rank recorded, where that rank's own run says it stopped (`base_stopped`,
/// `cand_stopped`: failed, killed, lost, recorded nothing), are missing evidence
/// ("steps_not_compared", Incomplete). Steps missing in the middle of a record, or past the end of
/// a rank that ended normally, are divergences ("missing_steps", "extra_steps") at their first step.
void settle_steps(RankResult& r, int rank, bool base_stopped, bool cand_stopped);

}  // namespace gparity::diff::runs
