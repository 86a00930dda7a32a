#pragma once
// The findings of an op-level comparison, for compare_op_logs (op_compare.cpp): what a
// divergence says (message, JSON values), a step's summary, each side's hash functions, damaged
// lines and ranks or steps on one side only, and the account the evidence rule reads. Internal
// to diff/ops.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diff/ops/op_compare.hpp"
#include "diff/ops/op_sides.hpp"
#include "diff/report/evidence.hpp"

namespace gparity::diff::ops::detail {

/// Passes findings on and keeps the worst severity that fails the comparison (--allow-incomplete:
/// missing evidence is reported but does not fail).
struct Emitter {
  FindingConsumer& out;
  const OpCompareOptions& o;
  SideWords words;
  Severity worst = Severity::Info;

  void emit(Finding f) {
    if (f.severity == Severity::Incomplete && o.allow_incomplete) {
      // still reported; does not fail the comparison
    } else if (static_cast<int>(f.severity) > static_cast<int>(worst)) {
      worst = f.severity;
    }
    out.finding(f);
  }
};

/// Artifact text in a report: model::display_text (controls and invalid UTF-8 as \xNN).
std::string printable(std::string_view s);
/// "aten::gelu (layers.0, train.py:37)".
std::string op_text(const model::ops::OpLog& log, const model::ops::OpRecord& r);
/// {op, index, log, line, phase, module, source}.
nlohmann::json record_json(const model::ops::OpLog& log, const model::ops::OpRecord& r);
/// "rank 1", "ranks 2, 3".
std::string ranks_text(const std::vector<int>& ranks);
/// A collective's group: {name, ranks} (ranks null where the log does not list them).
nlohmann::json group_json(const model::ops::OpLog& log, const model::ops::OpRecord& r);

/// The finding of a rank's first divergent op in a step (`follow_up`: a later step of a rank that
/// already diverged).
Finding divergence_finding(const RankVerdict& rv, const StepVerdict& sv, const OpDivergence& d,
                           const HashChoice& choice, std::size_t max_listed, bool follow_up,
                           const SideWords& w);
/// What one rank-step compared (info).
Finding step_info(const RankVerdict& rv, const StepVerdict& sv, const SideWords& w);
/// A side's records of a step that stop short (incomplete): where, why, and what was not compared.
Finding cut_finding(const RankVerdict& rv, const StepVerdict& sv, const StepCut& cut, const SideWords& w);
/// "the compiled records of step 1 stop at rank-1.jsonl:64 (aten::addmm)": the rank's summary.
std::string cut_text(const StepVerdict& sv, const StepCut& cut, const SideWords& w);
/// Every log of a side must carry the same hash functions; returns the spec or reports why not.
std::optional<model::ops::HashSpec> side_spec(const std::vector<RankLogs>& side, const std::string& which,
                                              Emitter& em);
/// Damaged and truncated logs of a side, by line.
void damage(const std::vector<RankLogs>& side, const std::string& which, Emitter& em);
/// Ranks and steps that only one side has: missing evidence.
void presence(const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled, Emitter& em);
/// The rank a divergence verdict leads with: the one whose first divergence starts there
/// (`starts_here` on its cause), earliest step first; else the earliest divergent rank. Rank
/// verdicts with first_divergent() -> a step verdict with `step` and `first->cause`; at least one
/// rank diverged.
template <typename RankVerdictT, typename StartsHere>
const RankVerdictT* lead_rank(const std::vector<RankVerdictT>& verdicts, StartsHere starts_here) {
  const RankVerdictT* lead = nullptr;
  for (const bool origin_only : {true, false}) {
    for (const auto& v : verdicts) {
      const auto* s = v.first_divergent();
      if (!s || (origin_only && !starts_here(s->first->cause))) continue;
      if (!lead || s->step < lead->first_divergent()->step) lead = &v;
    }
    if (lead) break;
  }
  return lead;
}

/// The report header's notes on the deciding hash functions (hash_tensor's weakness, xxh3 and
/// shard as identities, norm alone) and on --allow-incomplete.
std::vector<std::string> hash_notes(const std::optional<HashChoice>& choice, const OpCompareOptions& o);

/// What each side's logs are, for a report's mode line: "gparity op records", "PyTorch DebugMode
/// logs", or both ("gparity op records vs PyTorch DebugMode logs"); a side without a log counts as
/// DebugMode's.
std::string log_kinds(const model::ops::OpLog* baseline, const model::ops::OpLog* candidate);
/// Whether a side's log is DebugMode's (its own hashing ops around each launch are then passed over).
bool is_debugmode_log(const model::ops::OpLog* log);
/// Ends a comparison of op logs: the verdict through the evidence rule (op_evidence), so that
/// nothing compared is never parity.
int finish_op_verdict(Verdict v, const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled,
                      const OpCompareOptions& o, const std::optional<HashChoice>& choice,
                      std::uint64_t compared, std::string nothing_why, FindingConsumer& out);
/// What the comparison had to work with, for the evidence rule (diff/report/evidence.hpp).
Evidence op_evidence(const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled,
                     const OpCompareOptions& o, const HashChoice* choice, std::uint64_t compared,
                     std::string nothing_why);

}  // namespace gparity::diff::ops::detail
