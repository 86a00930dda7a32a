#include "diff/runs/run_evidence.hpp"

#include <algorithm>

#include "diff/runs/lost_nodes.hpp"
#include "diff/runs/run_values.hpp"

namespace gparity::diff::runs {

using model::RankTrace;
using model::RunSource;
using nlohmann::json;

RankEvidence gather_evidence(const RankTrace& t, const CompareOptions& o) {
  RankEvidence e;
  e.present = true;
  for (const auto& [step, i] : step_index(t, o)) e.steps.push_back(step);
  e.nodes = t.nodes.size();
  for (const auto& table : t.params_tables) e.params = std::max(e.params, table.params.size());
  for (const auto& ev : t.events) {
    // A failure after the last step compared does not touch the evidence compared.
    if (ev.kind == "failure" && !(ev.step && o.last_step && *ev.step > *o.last_step))
      e.failures.push_back(ev);
  }
  return e;
}

namespace {

// An untrusted manifest's step count must not cost unbounded memory.
constexpr std::int64_t kMaxDeclaredSteps = 10'000'000;

/// Steps a run declares, sorted: the manifest's 1..steps (inside the window) and every step any
/// of its ranks recorded (formats with no manifest declare only the latter).
std::vector<std::int64_t> declared_steps(const RunSource& run, const std::vector<RankEvidence>& ev,
                                         const CompareOptions& o) {
  std::vector<std::int64_t> d;
  for (const auto& e : ev) d.insert(d.end(), e.steps.begin(), e.steps.end());
  if (run.manifest.steps) {
    const std::int64_t lo = std::max<std::int64_t>(1, o.first_step.value_or(1));
    const std::int64_t hi = std::min(*run.manifest.steps, o.last_step.value_or(*run.manifest.steps));
    for (std::int64_t s = lo; s <= hi && s - lo < kMaxDeclaredSteps; ++s) d.push_back(s);
  }
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  return d;
}

/// Across nodes (diff/runs/lost_nodes.hpp): a node whose every rank was lost is named with its
/// ranks, ahead of the ranks' own findings.
void add_lost_nodes(const RunSource& run, const std::string& which, const std::vector<RankEvidence>& ev,
                    RunEvidence& out) {
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(run.manifest.world_size));
  for (std::size_t r = 0; r < outcomes.size() && r < ev.size(); ++r) {
    outcomes[r] = {ev[r].present, out.incomplete_ranks.contains(static_cast<int>(r)), !ev[r].failures.empty(),
                   ev[r].steps.empty() ? std::nullopt : std::optional(ev[r].steps.back())};
  }
  for (std::size_t r = ev.size(); r < outcomes.size(); ++r) outcomes[r].incomplete = true;
  std::vector<Finding> lost;
  for (const auto& n : lost_nodes(run.manifest.ranks, outcomes)) {
    Finding f{Severity::Incomplete,
              "node_lost",
              {},
              "",
              {{"run", which}, {"node", n.node}, {"host", n.host}, {"ranks", n.ranks}}};
    f.where.rank = n.ranks.front();
    f.message = lost_node_message(which, n);
    lost.push_back(std::move(f));
    out.stopped_ranks.insert(n.ranks.begin(), n.ranks.end());
  }
  out.findings.insert(out.findings.begin(), lost.begin(), lost.end());
}

}  // namespace

RunEvidence assess_evidence(const RunSource& run, const std::string& which,
                            const std::vector<RankEvidence>& ev, const CompareOptions& o) {
  RunEvidence out;
  const auto declared = declared_steps(run, ev, o);
  const std::string declared_by =
      run.manifest.steps ? "the manifest declares " + std::to_string(*run.manifest.steps) + " steps"
                         : "other ranks of the run recorded them";
  const int world = run.manifest.world_size;
  const auto listed = [&run](int r) {
    return std::any_of(run.ranks.begin(), run.ranks.end(),
                       [r](const model::RankEntry& e) { return e.rank == r; });
  };
  json failures = json::array();
  for (int r = 0; r < world; ++r) {
    const RankEvidence none;
    const auto& e = static_cast<std::size_t>(r) < ev.size() ? ev[static_cast<std::size_t>(r)] : none;
    const std::string who = which + " rank " + std::to_string(r);
    if (!e.present) {
      out.incomplete_ranks.insert(r);
      out.stopped_ranks.insert(r);
      // A rank entry that is not present was reported when the run was opened (its file path).
      if (listed(r)) continue;
      Finding f{Severity::Incomplete, "missing_rank", {}, "", {{"run", which}}};
      f.where.rank = r;
      f.message = who + " recorded nothing (world size " + std::to_string(world) + ")";
      out.findings.push_back(std::move(f));
      continue;
    }
    out.steps_recorded += e.steps.size();
    for (const auto& fe : e.failures) {
      Finding f{Severity::Incomplete, "rank_failure", {}, "", {{"run", which}, {"data", fe.data}}};
      f.where.rank = r;
      f.where.step = fe.step;
      f.message = who + " failed" + (fe.step ? " at step " + std::to_string(*fe.step) : std::string()) +
                  ": " + (fe.message.empty() ? "(no message)" : fe.message);
      out.findings.push_back(std::move(f));
      out.incomplete_ranks.insert(r);
      out.stopped_ranks.insert(r);
      failures.push_back({{"run", which},
                          {"rank", r},
                          {"step", fe.step ? json(*fe.step) : json(nullptr)},
                          {"message", fe.message}});
    }
    std::vector<std::int64_t> missing;
    std::set_difference(declared.begin(), declared.end(), e.steps.begin(), e.steps.end(),
                        std::back_inserter(missing));
    if (missing.empty()) continue;
    out.incomplete_ranks.insert(r);
    const bool tail = e.steps.empty() || missing.front() > e.steps.back();
    if (e.steps.empty() || missing.back() > e.steps.back()) out.stopped_ranks.insert(r);
    Finding f{Severity::Incomplete,
              "steps_not_recorded",
              {},
              "",
              {{"run", which}, {"steps", step_ranges(missing)}, {"count", missing.size()}}};
    f.where.rank = r;
    f.where.step = missing.front();
    const std::string steps = std::string(missing.size() == 1 ? "step " : "steps ") + step_ranges(missing);
    if (e.steps.empty()) {
      f.message = who + " recorded no step: " + steps + " missing (" + declared_by + ")";
    } else if (tail) {
      f.message = who + " stopped after step " + std::to_string(e.steps.back()) + ": " + steps +
                  " missing (" + declared_by + ")";
    } else {
      f.message = who + " did not record " + steps + " (" + declared_by + ")";
    }
    if (tail && e.failures.empty()) f.message += "; no failure event of its own: killed or lost";
    out.findings.push_back(std::move(f));
  }
  add_lost_nodes(run, which, ev, out);
  out.data = {
      {"world_size", world},
      {"declared_steps", step_ranges(declared)},
      {"manifest_steps", run.manifest.steps ? json(*run.manifest.steps) : json(nullptr)},
      {"incomplete_ranks", std::vector<int>(out.incomplete_ranks.begin(), out.incomplete_ranks.end())},
      {"failures", failures},
      {"complete", out.findings.empty() && out.incomplete_ranks.empty()}};
  return out;
}

namespace {

/// One run's side of the evidence: step and node records over its ranks, inside the window.
EvidenceSide side_evidence(const RunSource& run, const char* role, const std::vector<RankEvidence>& ev) {
  EvidenceSide s;
  s.role = role;
  s.input = run.path;
  s.tried = {std::string(model::run_format_name(run.format))};
  std::set<std::int64_t> steps;
  std::size_t nodes = 0;
  std::size_t params = 0;
  std::size_t ranks = 0;
  for (const auto& e : ev) {
    s.items += e.items();
    ranks += e.items() > 0 ? 1 : 0;
    steps.insert(e.steps.begin(), e.steps.end());
    nodes += e.nodes;
    params = std::max(params, e.params);
  }
  if (!steps.empty() || nodes == 0)
    s.detail = std::to_string(steps.size()) + " steps x " + std::to_string(params) + " parameters";
  if (nodes > 0) s.detail += (s.detail.empty() ? "" : ", ") + std::to_string(nodes) + " node records";
  s.detail += " on " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  if (s.items == 0) s.nothing = "recorded no step";
  return s;
}

}  // namespace

Evidence run_evidence(const RunSource& base, const std::vector<RankEvidence>& ev_b, const RunSource& cand,
                      const std::vector<RankEvidence>& ev_c, const std::set<int>& reported, bool same_layout,
                      const CompareOptions& o) {
  Evidence e;
  const auto nodes = [](const std::vector<RankEvidence>& ev) {
    std::size_t steps = 0;
    std::size_t n = 0;
    for (const auto& r : ev) {
      steps += r.steps.size();
      n += r.nodes;
    }
    return steps == 0 && n > 0;
  };
  e.what = nodes(ev_b) || nodes(ev_c) ? "node records" : "steps";
  e.sides = {side_evidence(base, "baseline", ev_b), side_evidence(cand, "candidate", ev_c)};
  e.allow_incomplete = o.allow_incomplete;
  if (same_layout) {
    const RankEvidence none;
    const auto at = [&none](const std::vector<RankEvidence>& ev, int r) -> const RankEvidence& {
      return static_cast<std::size_t>(r) < ev.size() ? ev[static_cast<std::size_t>(r)] : none;
    };
    for (int r = 0; r < base.manifest.world_size; ++r)
      e.ranks.push_back({r, at(ev_b, r).items(), at(ev_c, r).items(), "", "", reported.contains(r)});
  }
  return e;
}

}  // namespace gparity::diff::runs
