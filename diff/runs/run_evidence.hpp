#pragma once
// Missing evidence of a run (internal to diff/runs): what each rank recorded inside the step
// window, judged against what the run declares (world size, manifest steps, steps other ranks
// recorded), and the evidence sides the report's "nothing compared" rule reads
// (diff/report/evidence.hpp).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/model/run/run_source.hpp"
#include "diff/report/evidence.hpp"
#include "diff/report/finding.hpp"
#include "diff/runs/run_compare.hpp"

namespace gparity::diff::runs {

/// What one rank of one run holds as evidence, gathered while it is loaded.
struct RankEvidence {
  bool present = false;
  std::vector<std::int64_t> steps;  // recorded, inside the step window, ascending
  std::vector<model::EventRecord> failures;
  std::size_t nodes = 0;   // replay node records
  std::size_t params = 0;  // parameters of its largest params table
  [[nodiscard]] std::size_t items() const noexcept { return steps.size() + nodes; }
};

/// What a rank of a run holds: its steps inside the window and its failure events.
RankEvidence gather_evidence(const model::RankTrace& t, const CompareOptions& o);

/// Missing evidence of one run: failure events, ranks with no trace, declared steps not recorded.
struct RunEvidence {
  std::vector<Finding> findings;  // all Severity::Incomplete
  std::set<int> incomplete_ranks;
  // Ranks the run itself says stopped short: recorded nothing, failed, declared steps missing past
  // their last step, or on a lost node. Steps they lack against the other run are missing evidence.
  std::set<int> stopped_ranks;
  std::size_t steps_recorded = 0;  // step records over all ranks, inside the window
  nlohmann::json data = nlohmann::json::object();
};

RunEvidence assess_evidence(const model::RunSource& run, const std::string& which,
                            const std::vector<RankEvidence>& ev, const CompareOptions& o);

/// Both runs' evidence; per rank when both runs have the same layout (a rank the engine already
/// named as incomplete is marked reported).
Evidence run_evidence(const model::RunSource& base, const std::vector<RankEvidence>& ev_b,
                      const model::RunSource& cand, const std::vector<RankEvidence>& ev_c,
                      const std::set<int>& reported, bool same_layout, const CompareOptions& o);

}  // namespace gparity::diff::runs
