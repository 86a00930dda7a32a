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
};

/// Compares one rank of both runs. `hashes` false: scalars only (layouts differ).
RankResult compare_rank(const model::RankTrace& b, const model::RankTrace& c, int rank, bool hashes,
                        const CompareOptions& o);

}  // namespace gparity::diff::runs
