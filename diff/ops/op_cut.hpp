#pragma once
// A step recorded in part (op_compare.hpp's StepCut), for judge_op_logs (op_verdicts.cpp): where
// one side's records of a step stop short of the other's (a rank killed mid-step, a log cut inside
// the step), the eager ops past it marked NotRecorded, the step's StepCut set. Internal to
// diff/ops; defined in op_compare.cpp (the library's source list is fixed in diff/CMakeLists.txt).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "diff/ops/op_compare.hpp"
#include "diff/ops/op_sides.hpp"

namespace gparity::diff::ops::detail {

/// The steps each rank recorded on one side, from every log of the rank.
using SideSteps = std::map<int, std::set<std::int64_t>>;
SideSteps side_steps(const std::vector<RankLogs>& side);

/// What says one side's records of a step (the slice `s`, which ends its log) stopped short:
/// `certain` when the log's last line is cut; else what makes it likely, or "" (no sign): the
/// side recorded no later step of the rank while the run has one (a rank killed mid-run).
struct StopSign {
  bool certain = false;
  std::string why;
  [[nodiscard]] bool stopped() const noexcept { return certain || !why.empty(); }
};
StopSign stop_sign(const OpSlice& s, int rank, const std::string& side, const SideSteps& mine,
                   const SideSteps& theirs);

/// Judges whether a step that ends a side's log was cut there (StepCut); called on each aligned
/// step before its first divergence is chosen, so nothing past a cut is ever one.
void judge_cuts(StepVerdict& sv, int rank, const HashChoice& choice, const SideSteps& eager_steps,
                const SideSteps& compiled_steps, const SideWords& w);

/// A rank's check: fails on a divergence, passes without a step recorded in part, and with one
/// fails unless incomplete evidence is allowed (skipped then). The op and the kernel comparison.
inline Check::Outcome rank_outcome(bool diverged, bool cut, bool allow_incomplete) {
  if (diverged) return Check::Outcome::Fail;
  if (!cut) return Check::Outcome::Pass;
  return allow_incomplete ? Check::Outcome::Skipped : Check::Outcome::Fail;
}

/// The eager position where the compiled records of the step stop (a compiled StepCut), else its
/// end: the rank's records of the step for the cross-rank causal order end there.
std::uint32_t compiled_end(const StepVerdict& sv);

}  // namespace gparity::diff::ops::detail
