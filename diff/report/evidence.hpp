#pragma once
// The one evidence rule every verdict finishes through: green means evidence was compared and
// found equal, never "nothing disagreed because nothing was there". Each engine says what it
// compared (Evidence: the unit, what each side yielded, per-rank counts, the inputs that yielded
// nothing and what was tried on them) and, before out.end(), calls enforce_evidence. The rule:
//  - a side that yielded nothing, or nothing compared across the sides, is never parity: exit 2,
//    headline "NOTHING COMPARED: <why>", an Error finding "nothing_compared" and one
//    "input_yielded_nothing" per empty side naming the input and the formats/readers tried;
//  - a rank whose input yielded nothing, while the comparison has evidence elsewhere, is missing
//    evidence (an Incomplete finding "rank_without_evidence", exit 1 unless incomplete evidence
//    is allowed), never an agreeing rank;
//  - every verdict carries the counts: a summary line "compared: ..." and result.evidence.
// Front ends that print their own text (graph ranks / diff / devices) use rule_on directly.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "diff/report/finding.hpp"

namespace gparity::diff {

/// What one side of a comparison yielded: the baseline, the candidate, or the one run whose ranks
/// are checked against each other ("run").
struct EvidenceSide {
  std::string role;         // "baseline", "candidate" or "run"
  std::string input;        // what was read (paths, space-separated)
  std::uint64_t items = 0;  // items of Evidence::what this side yielded
  /// Human count for the summary, e.g. "12 steps x 300 parameters on 4 ranks"; empty: "<items> <what>".
  std::string detail;
  /// When items == 0 and the reader knows why: a predicate on the input ("is a pickle but holds no
  /// Flight Recorder entries", "recorded no step").
  std::string nothing;
  std::vector<std::string> tried;  // formats / readers tried on the input
};

/// Items of one rank on each side (one-sided evidence: `candidate` is the run's).
struct RankEvidenceCount {
  int rank = 0;
  std::uint64_t baseline = 0;
  std::uint64_t candidate = 0;
  std::string input;    // the rank's input, when it has one of its own
  std::string nothing;  // why that input yielded nothing, when the reader knows ("x.pkl is a pickle but ...")
  /// The engine's own Incomplete finding already names this rank's missing evidence: the rule
  /// counts the rank but adds no second finding.
  bool reported = false;
};

struct Evidence {
  /// The unit compared: "steps x parameters", "collectives", "nodes", "parameters", "graphs", ...
  std::string what;
  /// Baseline then candidate; or one side "run" for checks across the ranks of one run.
  std::vector<EvidenceSide> sides;
  /// Items compared across the sides (pairs checked); for one run, the items checked.
  std::uint64_t compared = 0;
  /// Per rank, when the verdict is per rank. A rank listed here with no item on a side is missing
  /// evidence; list only the ranks the comparison expects.
  std::vector<RankEvidenceCount> ranks;
  /// Missing evidence on some ranks does not fail the verdict (still reported, and named).
  bool allow_incomplete = false;
  /// The engine's reason when nothing was compared; empty: composed from the sides.
  std::string nothing_why;
};

/// What the rule decides about an Evidence, independent of any verdict.
struct EvidenceRuling {
  /// 2: nothing compared; 1: some rank has no evidence (missing evidence, not allowed); 0: enough.
  int exit_code = 0;
  bool nothing_compared = false;
  std::vector<int> ranks_without_evidence;
  /// "NOTHING COMPARED: ..." or "INCOMPLETE: ..." when exit_code != 0; empty otherwise.
  std::string headline;
  /// nothing_compared / input_yielded_nothing (Error), rank_without_evidence (Incomplete).
  std::vector<Finding> findings;
  /// "compared: 12 steps x 300 parameters on 4 ranks each side", then, when missing evidence is
  /// allowed, "missing evidence on rank 3: allowed (--allow-incomplete)" for ranks not reported.
  std::vector<std::string> summary;
  /// result.evidence: {"what", "compared", "nothing_compared", "ranks_without_evidence",
  /// "<role>": {"input", "items", "detail", "nothing", "tried"}, "ranks": [...]}.
  nlohmann::json json;
};

EvidenceRuling rule_on(const Evidence& e);

/// Applies the rule to a verdict the engine has decided: emits the rule's findings to `out`,
/// appends the "compared: ..." summary line, merges result.evidence into v.data["evidence"]
/// (keys the engine put there stay), and lowers the verdict: nothing compared is exit 2 with the
/// rule's headline (unless the input was already bad: exit 2 with its own headline); a rank
/// without evidence turns parity into exit 1 "INCOMPLETE: ...". Call it just before out.end(v).
void enforce_evidence(Verdict& v, const Evidence& e, FindingConsumer& out);

/// enforce_evidence, then out.end(v); returns v.exit_code.
int finish_verdict(Verdict& v, const Evidence& e, FindingConsumer& out);

}  // namespace gparity::diff
