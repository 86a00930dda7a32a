#include "diff/collectives/collectives.hpp"

#include <map>

#include "diff/collectives/collectives_internal.hpp"
#include "diff/report/evidence.hpp"

// `gparity collectives`' report: the checks (collectives_checks.cpp) in order, the verdict and
// the evidence of what was compared.

namespace gparity::diff {
namespace {

using collectives::check_across_ranks;
using collectives::check_against_baseline;
using collectives::check_p2p;
using collectives::check_states;
using collectives::cross_check_graphs;
using collectives::join;
using collectives::rank_name;
using collectives::Tally;

std::uint64_t op_count(const RankCollectives& rc) {
  std::uint64_t n = 0;
  for (const auto& s : rc.streams) n += s.ops.size();
  return n;
}

EvidenceSide collective_side(const CollectiveRun& run, std::string role) {
  EvidenceSide side;
  side.role = std::move(role);
  side.input = run.path;
  std::size_t streams = 0;
  std::size_t ranks = 0;
  for (const auto& rc : run.ranks) {
    side.items += op_count(rc);
    streams += rc.streams.size();
    ranks += rc.streams.empty() ? 0 : 1;
    for (const auto& why : rc.nothing) side.nothing += (side.nothing.empty() ? "" : "; ") + why;
  }
  side.detail = std::to_string(side.items) + " collectives in " + std::to_string(streams) + " streams on " +
                std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  // "x.pkl is a pickle but ..." already names its input; drop the repeated path in front.
  if (side.items == 0 && !side.nothing.empty() && side.nothing.starts_with(side.input + " "))
    side.nothing = side.nothing.substr(side.input.size() + 1);
  else if (side.items == 0 && !side.nothing.empty())
    side.nothing = "yielded no collectives: " + side.nothing;
  for (const auto f : kCollectiveFormats) side.tried.emplace_back(f);
  return side;
}

/// What the collective check compared: every op of every rank (ranks only), or the ops of the
/// candidate's streams that the baseline's same rank also has; per rank, its ops on each side.
Evidence collective_evidence(const CollectiveRun& run, const CollectiveRun* baseline) {
  Evidence e;
  e.what = "collectives";
  if (baseline != nullptr) e.sides.push_back(collective_side(*baseline, "baseline"));
  e.sides.push_back(collective_side(run, baseline != nullptr ? "candidate" : "run"));
  std::map<std::int32_t, RankEvidenceCount> ranks;
  const auto input = [](const RankCollectives& rc) { return join(rc.sources, ", "); };
  for (const auto& rc : run.ranks) {
    auto& r = ranks[rc.rank];
    r.rank = rc.rank;
    r.candidate = op_count(rc);
    r.input = input(rc);
    if (r.candidate == 0) r.nothing = join(rc.nothing, "; ");
    if (baseline == nullptr) {
      e.compared += r.candidate;
      continue;
    }
    const auto* rb = baseline->rank(rc.rank);
    if (rb == nullptr) continue;
    for (const auto& s : rc.streams)
      if (const auto* sb = rb->find(s.name)) e.compared += std::min(s.ops.size(), sb->ops.size());
  }
  if (baseline != nullptr) {
    for (const auto& rb : baseline->ranks) {
      auto& r = ranks[rb.rank];
      r.rank = rb.rank;
      r.baseline = op_count(rb);
      if (r.input.empty()) r.input = input(rb);
      if (r.baseline == 0 && r.nothing.empty()) r.nothing = join(rb.nothing, "; ");
    }
  }
  for (auto& [rank, r] : ranks) e.ranks.push_back(std::move(r));
  return e;
}

}  // namespace

int report_collectives(const CollectiveRun& run, const CollectiveRun* baseline, FindingConsumer& out,
                       const CollectiveOptions& options) {
  ReportHeader h;
  h.title = "gparity collectives";
  h.candidate = run.path;
  h.baseline = baseline != nullptr ? baseline->path : "(none: ranks only)";
  h.mode = "exact (kind, arguments, sizes, dtypes)";
  for (const auto& rc : run.ranks)
    h.notes.push_back(rank_name(rc.rank) + ": " + std::to_string(rc.streams.size()) + " streams from " +
                      join(rc.sources, ", "));
  out.begin(h);
  Tally t;
  const auto problems = [&](const CollectiveRun& r) {
    for (const auto& p : r.problems) {
      Finding f;
      f.severity = Severity::Warning;
      f.kind = "collective_input_problem";
      f.message = p;
      out.finding(f);
      t.see(f.severity);
    }
  };
  if (baseline != nullptr) problems(*baseline);
  problems(run);
  check_across_ranks(run, out, t);
  check_p2p(run, out, t);
  check_states(run, out, t);
  cross_check_graphs(run, out, t);
  if (baseline != nullptr) check_against_baseline(*baseline, run, out, t);
  if (options.schedules) {
    check_order_inversions(run, out, t);
    check_hang(run, out, t);
    if (baseline != nullptr) check_order_moves(*baseline, run, out, t);
  }

  Verdict v;
  v.exit_code = exit_code_for(t.worst);
  const bool same = t.rank_mismatches + t.reordered + t.changed + t.added + t.removed + t.graph_mismatches +
                        t.inversions + t.moved + t.deadlocks + t.never_arrived ==
                    0;
  if (t.deadlocks > 0)
    v.headline = "collectives deadlock: " + std::to_string(t.deadlocks) + " wait-for cycle" +
                 (t.deadlocks > 1 ? "s" : "") + " across ranks (cause and fix in the findings)";
  else if (t.never_arrived > 0)
    v.headline = "collectives hang: a rank never arrived at a collective the others wait in";
  else if (!same)
    v.headline = "collectives differ";
  else if (t.worst == Severity::Incomplete)
    v.headline = "collectives: incomplete evidence (a rank's dump is missing)";
  else
    v.headline = baseline ? "collectives: every rank agrees and matches the baseline"
                          : "collectives: every rank of every stream issues the same sequence";
  v.summary.push_back(std::to_string(t.streams) + " streams on " + std::to_string(run.ranks.size()) +
                      " ranks; " + std::to_string(t.rank_mismatches) + " rank mismatches; " +
                      std::to_string(t.rooted) + " root/non-root record pairs matched by the rooted rule; " +
                      std::to_string(t.unfinished) + " Flight Recorder entries not completed");
  if (t.graph_checked > 0)
    v.summary.push_back(std::to_string(t.graph_checked) + " graphs checked against the Flight Recorder; " +
                        std::to_string(t.graph_mismatches) + " mismatches");
  if (options.schedules)
    v.summary.push_back("across process groups: " + std::to_string(t.inversions) + " order inversions; " +
                        std::to_string(t.deadlocks) + " deadlocks; " + std::to_string(t.never_arrived) +
                        " collectives a rank never arrived at");
  if (baseline != nullptr)
    v.summary.push_back(
        "against the baseline: " + std::to_string(t.reordered) + " reorderings, " +
        std::to_string(t.changed) + " changed, " + std::to_string(t.added) + " added, " +
        std::to_string(t.removed) + " removed" +
        (options.schedules ? ", " + std::to_string(t.moved) + " moved across another group's" : ""));
  v.data = {{"streams", t.streams},
            {"ranks", run.ranks.size()},
            {"rank_mismatches", t.rank_mismatches},
            {"reorderings", t.reordered},
            {"changed", t.changed},
            {"added", t.added},
            {"removed", t.removed},
            {"rooted_pairs", t.rooted},
            {"not_completed", t.unfinished},
            {"p2p_pairs", t.p2p_pairs},
            {"graphs_checked", t.graph_checked},
            {"graph_mismatches", t.graph_mismatches}};
  if (options.schedules) {
    v.data["order_inversions"] = t.inversions;
    v.data["deadlock_count"] = t.deadlocks;
    v.data["never_arrived"] = t.never_arrived;
    if (baseline != nullptr) v.data["moved"] = t.moved;
    for (auto& [key, value] : t.schedule.items()) v.data[key] = value;
  }
  return finish_verdict(v, collective_evidence(run, baseline), out);
}

}  // namespace gparity::diff
