#include "diff/runs/run_compare.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "core/model/base/input_error.hpp"
#include "diff/collectives/nccl_rings.hpp"
#include "diff/replay/node_compare.hpp"
#include "diff/report/evidence.hpp"
#include "diff/report/ranges_text.hpp"
#include "diff/runs/lost_nodes.hpp"
#include "diff/runs/rank_compare.hpp"
#include "diff/runs/run_evidence.hpp"
#include "diff/runs/run_values.hpp"
#include "diff/runs/shard_sums.hpp"

namespace gparity::diff {
namespace {

using model::RankTrace;
using model::RunSource;
using nlohmann::json;
using runs::assess_evidence;
using runs::compare_rank;
using runs::compare_sums;
using runs::gather_evidence;
using runs::Interner;
using runs::RankEvidence;
using runs::RankResult;
using runs::run_evidence;
using runs::ShardSums;

/// Peak reserved device memory, candidate over baseline, per rank that has both (CUDA-graph
/// runs against eager ones: docs/cuda-graphs.md). Null when no rank has both.
json memory_ratio(const std::vector<RankResult>& results) {
  json ranks = json::array();
  double worst = 0;
  for (std::size_t r = 0; r < results.size(); ++r) {
    const auto& b = results[r].memory_b;
    const auto& c = results[r].memory_c;
    if (!b || !c || b->peak_reserved <= 0) continue;
    const double ratio = static_cast<double>(c->peak_reserved) / static_cast<double>(b->peak_reserved);
    worst = std::max(worst, ratio);
    ranks.push_back({{"rank", r},
                     {"baseline_mode", b->mode},
                     {"candidate_mode", c->mode},
                     {"baseline_peak_reserved", b->peak_reserved},
                     {"candidate_peak_reserved", c->peak_reserved},
                     {"baseline_peak_allocated", b->peak_allocated},
                     {"candidate_peak_allocated", c->peak_allocated},
                     {"reserved_ratio", ratio}});
  }
  if (ranks.empty()) return nullptr;
  return {{"ranks", ranks}, {"max_reserved_ratio", worst}};
}

Severity issue_severity(model::TraceIssue::Kind k) {
  switch (k) {
    case model::TraceIssue::Kind::TruncatedTail: return Severity::Warning;
    case model::TraceIssue::Kind::Note: return Severity::Info;
    case model::TraceIssue::Kind::MissingFile: return Severity::Incomplete;  // a missing rank
    default: return Severity::Error;
  }
}

const char* issue_kind(model::TraceIssue::Kind k) {
  switch (k) {
    case model::TraceIssue::Kind::TruncatedTail: return "truncated_tail";
    case model::TraceIssue::Kind::CorruptLine: return "corrupt_line";
    case model::TraceIssue::Kind::MissingFile: return "missing_rank_file";
    case model::TraceIssue::Kind::Note: return "note";
  }
  return "issue";
}

Finding issue_finding(const model::TraceIssue& i, const char* which, std::optional<int> rank) {
  Finding f;
  f.severity = issue_severity(i.kind);
  f.kind = issue_kind(i.kind);
  f.where.source = i.source;
  f.where.line = i.line;
  f.where.rank = rank;
  f.message = std::string(which) + ": " + i.problem;
  return f;
}
/// The process groups a replay run recorded (manifest "replay.groups"); empty when it has none.
causality::GroupTable replay_groups(const RunSource& run, std::vector<Finding>& problems) {
  const auto r = run.manifest.extra.find("replay");
  if (r == run.manifest.extra.end() || !r->is_object() || !r->contains("groups")) return {};
  try {
    return causality::group_table_from_json(r->at("groups"));
  } catch (const std::invalid_argument& e) {
    problems.push_back({Severity::Error,
                        "replay_groups_unreadable",
                        {},
                        run.path + "/manifest.json: replay.groups: " + e.what(),
                        json::object()});
    return {};
  }
}

/// Node records of every rank, classified across ranks (diff/causality): sets each rank's node
/// checks and summary; returns the findings in report order: what the causal order lacks, each
/// rank's node problems, then the divergences where a cause starts (origins, every rank), then
/// the received and propagated ones.
std::vector<Finding> classify_nodes(std::vector<RankResult>& results, const RunSource& base,
                                    const RunSource& cand) {
  std::vector<NodeRankResult> nodes;
  std::vector<std::size_t> slot;
  for (std::size_t r = 0; r < results.size(); ++r) {
    if (!results[r].nodes) continue;
    nodes.push_back(std::move(*results[r].nodes));
    results[r].nodes.reset();
    slot.push_back(r);
  }
  if (nodes.empty()) return {};
  std::vector<Finding> out;
  const auto groups_b = replay_groups(base, out);
  const auto groups_c = replay_groups(cand, out);
  for (auto& f : classify_node_ranks(nodes, groups_b, groups_c)) out.push_back(std::move(f));
  std::vector<Finding> origins, rest;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    auto& res = results[slot[k]];
    std::vector<Finding> fs;
    node_findings(nodes[k], fs, res.checks);
    res.data["nodes"] = node_summary(nodes[k]);
    res.data["nodes_summary"] = node_summary_line(nodes[k]);
    for (auto& f : fs) {
      if (f.kind != "node_divergence" && f.kind != "node_origin") {
        out.push_back(std::move(f));
      } else {
        (f.values.value("cause", "") == "origin" ? origins : rest).push_back(std::move(f));
      }
    }
  }
  for (auto* part : {&origins, &rest})
    for (auto& f : *part) out.push_back(std::move(f));
  return out;
}

}  // namespace
int compare_runs(const RunSource& base, const RunSource& cand, const CompareOptions& o,
                 FindingConsumer& out) {
  ReportHeader header{o.title, base.path, cand.path, o.tolerance.describe(), {}};
  header.notes.push_back("baseline: " + std::string(model::run_format_name(base.format)) + ", world size " +
                         std::to_string(base.manifest.world_size));
  header.notes.push_back("candidate: " + std::string(model::run_format_name(cand.format)) + ", world size " +
                         std::to_string(cand.manifest.world_size));
  const bool rounded = base.rounded || cand.rounded;
  if (rounded) {
    header.notes.push_back(
        "values come from rounded console text: equal printed digits cannot prove bitwise parity");
  }
  if (o.allow_incomplete) {
    header.notes.push_back(
        "--allow-incomplete: missing evidence (failures, killed or missing ranks, declared steps not "
        "recorded) is reported but does not fail this comparison");
  }
  const bool same_layout = base.manifest.world_size == cand.manifest.world_size;
  if (!same_layout) {
    header.notes.push_back(
        "world sizes differ: weights are compared on full tensors through shard-invariant "
        "hashes; loss and grad_norm on rank 0 of each run");
  }
  out.begin(header);

  Severity worst = Severity::Info;
  bool divergence = false;
  bool missing_evidence = false;
  std::vector<std::string> missing_lines;  // for the verdict's summary
  const auto emit = [&](const Finding& f) {
    worst = std::max(worst, f.severity);
    divergence = divergence || f.severity == Severity::Divergence;
    if (f.severity == Severity::Incomplete) {
      missing_evidence = true;
      missing_lines.push_back(f.message);
    }
    out.finding(f);
  };
  if (rounded) {
    emit({Severity::Warning,
          "rounded_values",
          {},
          "values are rounded to the printed digits: this comparison "
          "cannot prove bitwise parity (record a gparity trace for that)",
          json::object()});
  }
  if (auto f = nccl_graph_finding(base.manifest, cand.manifest)) emit(*f);
  for (const auto& i : base.issues) emit(issue_finding(i, "baseline", std::nullopt));
  for (const auto& i : cand.issues) emit(issue_finding(i, "candidate", std::nullopt));

  const int max_rank = std::max(base.ranks.empty() ? 0 : base.ranks.back().rank + 1,
                                cand.ranks.empty() ? 0 : cand.ranks.back().rank + 1);
  const auto entry = [](const RunSource& run, int r) -> const model::RankEntry* {
    for (const auto& e : run.ranks) {
      if (e.rank == r && e.present) return &e;
    }
    return nullptr;
  };

  Interner interner;
  std::vector<RankResult> results(static_cast<std::size_t>(max_rank));
  std::vector<std::optional<model::InputError>> errors(static_cast<std::size_t>(max_rank));
  std::vector<RankEvidence> evidence_b(static_cast<std::size_t>(max_rank));
  std::vector<RankEvidence> evidence_c(static_cast<std::size_t>(max_rank));
  std::atomic<int> next{0};
  std::mutex sums_mu;
  ShardSums sums_b;
  ShardSums sums_c;
  const auto worker = [&] {
    ShardSums local_b;
    ShardSums local_c;
    for (int r = next++; r < max_rank; r = next++) {
      try {
        const auto* eb = entry(base, r);
        const auto* ec = entry(cand, r);
        RankTrace tb = eb ? base.load(*eb) : RankTrace{};
        RankTrace tc = ec ? cand.load(*ec) : RankTrace{};
        auto& res = results[static_cast<std::size_t>(r)];
        for (const auto& i : tb.issues) res.findings.push_back(issue_finding(i, "baseline", r));
        for (const auto& i : tc.issues) res.findings.push_back(issue_finding(i, "candidate", r));
        res.memory_b = model::device_memory_peaks(tb.events);
        res.memory_c = model::device_memory_peaks(tc.events);
        if (eb) local_b.add(tb, interner, o);
        if (ec) local_c.add(tc, interner, o);
        if (eb) evidence_b[static_cast<std::size_t>(r)] = gather_evidence(tb, o);
        if (ec) evidence_c[static_cast<std::size_t>(r)] = gather_evidence(tc, o);
        if (eb && ec && (same_layout || r == 0)) {
          auto cmp = compare_rank(tb, tc, r, same_layout, o);
          for (auto& f : cmp.findings) res.findings.push_back(std::move(f));
          res.checks = std::move(cmp.checks);
          res.data = std::move(cmp.data);
          res.first_divergence = cmp.first_divergence;
          res.gaps = std::move(cmp.gaps);
          res.compared = true;
          res.values_compared = cmp.values_compared;
          res.steps_compared = cmp.steps_compared;
          res.params_compared = cmp.params_compared;
          // Node records of replay runs (diff/replay/node_compare.hpp): first divergent node per graph;
          // their causes are settled across ranks once every rank is compared.
          if (auto nodes = compare_node_records(tb, base.path, tc, cand.path, r); !nodes.empty()) {
            for (const auto& g : nodes.graphs) res.values_compared += g.compared;
            res.nodes = std::move(nodes);
          }
        } else if (same_layout && (eb || ec)) {
          Finding f{Severity::Incomplete, "missing_rank", {}, "", {{"run", eb ? "candidate" : "baseline"}}};
          f.where.rank = r;
          f.message = "rank " + std::to_string(r) + " is missing in " + (eb ? "candidate" : "baseline");
          res.checks.push_back({"rank present", r,
                                o.allow_incomplete ? Check::Outcome::Skipped : Check::Outcome::Fail,
                                f.message + (o.allow_incomplete ? " (allowed by --allow-incomplete)" : "")});
          res.findings.push_back(std::move(f));
        }
      } catch (const model::InputError& e) {
        errors[static_cast<std::size_t>(r)] = e;
      }
    }
    const std::lock_guard lock(sums_mu);
    sums_b.merge(std::move(local_b));
    sums_c.merge(std::move(local_c));
  };
  unsigned n = o.threads ? o.threads : std::max(1U, std::thread::hardware_concurrency());
  n = std::min<unsigned>(n, static_cast<unsigned>(std::max(1, max_rank)));
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < n; ++t) pool.emplace_back(worker);
    worker();
  }
  for (const auto& e : errors) {
    if (e) throw *e;
  }

  // Missing evidence of each run, judged against what that run declares; the steps a rank lacks
  // against the other run are settled by it (a rank its own run says stopped: missing evidence).
  const auto ev_base = assess_evidence(base, "baseline", evidence_b, o);
  const auto ev_cand = assess_evidence(cand, "candidate", evidence_c, o);
  for (int r = 0; r < max_rank; ++r) {
    auto& res = results[static_cast<std::size_t>(r)];
    if (res.compared)
      runs::settle_steps(res, r, ev_base.stopped_ranks.contains(r), ev_cand.stopped_ranks.contains(r));
  }

  const auto node_fs = classify_nodes(results, base, cand);

  json rank_data = json::array();
  std::vector<int> identical;
  std::map<std::int64_t, std::vector<int>> diverge_at;
  for (int r = 0; r < max_rank; ++r) {
    auto& res = results[static_cast<std::size_t>(r)];
    for (const auto& f : res.findings) emit(f);
    for (const auto& c : res.checks) out.check(c);
    if (!res.compared) continue;
    rank_data.push_back(res.data);
    if (res.first_divergence) {
      diverge_at[*res.first_divergence].push_back(r);
    } else if (!res.data.contains("nodes") || res.data["nodes"]["divergent"] == 0) {
      identical.push_back(r);
    }
  }

  for (const auto& f : node_fs) emit(f);  // every rank's node findings, origins first

  std::vector<Finding> sum_findings;
  std::vector<Check> sum_checks;
  json full = nullptr;
  compare_sums(sums_b, sums_c, base.manifest.world_size, cand.manifest.world_size, interner, o, sum_findings,
               sum_checks, full);
  for (const auto& f : sum_findings) emit(f);
  for (const auto& c : sum_checks) out.check(c);

  for (const auto* ev : {&ev_base, &ev_cand}) {
    for (const auto& f : ev->findings) emit(f);
  }
  std::set<int> incomplete_ranks = ev_base.incomplete_ranks;
  incomplete_ranks.insert(ev_cand.incomplete_ranks.begin(), ev_cand.incomplete_ranks.end());
  for (const int r : incomplete_ranks) {
    out.check({"evidence", r, o.allow_incomplete ? Check::Outcome::Skipped : Check::Outcome::Fail,
               o.allow_incomplete ? "incomplete (allowed by --allow-incomplete)"
                                  : "incomplete: a failure, a missing rank or declared steps not recorded"});
  }

  // What was compared: "nothing" is never parity; a gate's minimums.
  std::size_t values = full.is_null() ? 0 : full["compared"].get<std::size_t>();
  std::size_t common_steps = 0;
  std::size_t ranks_compared = 0;
  std::optional<std::size_t> steps_compared;
  std::size_t params_compared = full.is_null() ? 0 : full["parameters_compared"].get<std::size_t>();
  for (const auto& res : results) {
    values += res.values_compared;
    if (res.compared) common_steps += res.data.value("steps_compared", std::size_t{0});
    if (res.values_compared == 0) continue;
    ++ranks_compared;
    steps_compared = std::min(steps_compared.value_or(res.steps_compared), res.steps_compared);
    params_compared = std::max(params_compared, res.params_compared);
  }
  if (!full.is_null() && full["compared"].get<std::size_t>() > 0) {
    // Full tensors are compared only at steps every rank of both runs recorded.
    ranks_compared = std::max<std::size_t>(
        ranks_compared,
        static_cast<std::size_t>(std::min(base.manifest.world_size, cand.manifest.world_size)));
    steps_compared = std::max(steps_compared.value_or(0), full["steps_compared"].get<std::size_t>());
  }
  const bool bad_input = worst == Severity::Error;
  // What each run yielded, for the evidence rule (diff/report/evidence.hpp): nothing is never parity.
  Evidence evidence = run_evidence(base, evidence_b, cand, evidence_c, incomplete_ranks, same_layout, o);
  evidence.compared = values;
  const bool nothing_compared = values == 0 || evidence.sides[0].items == 0 || evidence.sides[1].items == 0;
  if (nothing_compared) {
    if (ev_base.steps_recorded == 0 && ev_cand.steps_recorded == 0) {
      evidence.nothing_why = "neither run recorded a step";
    } else if (ev_base.steps_recorded == 0 || ev_cand.steps_recorded == 0) {
      evidence.nothing_why = std::string("the ") + (ev_base.steps_recorded == 0 ? "baseline" : "candidate") +
                             " recorded no step";
    } else if (common_steps == 0) {
      evidence.nothing_why = "the runs share no rank and step";
    } else {
      evidence.nothing_why =
          "every check was skipped: no value (loss, grad_norm, hashes) is recorded in both runs at a "
          "common rank and step";
    }
    if (o.first_step || o.last_step) evidence.nothing_why += " inside the steps asked for";
    if (missing_evidence) evidence.nothing_why += " (see the missing evidence above)";
  }
  bool requirement_failed = false;
  json requirements = json::object();
  if (o.require.any()) {
    std::vector<std::string> unmet;
    std::vector<std::string> met;
    const auto need = [&](const char* what, std::optional<std::size_t> min, std::size_t got) {
      if (!min) return;
      requirements[what] = {{"required", *min}, {"compared", got}};
      const std::string text =
          std::string(what) + " " + std::to_string(got) + " of at least " + std::to_string(*min);
      (got >= *min ? met : unmet).push_back(text);
    };
    need("steps", o.require.steps, steps_compared.value_or(0));
    need("ranks", o.require.ranks, ranks_compared);
    need("parameters", o.require.parameters, params_compared);
    std::string text;
    for (const auto& u : unmet) text += (text.empty() ? "" : ", ") + u;
    if (!unmet.empty()) {
      requirement_failed = true;
      Finding f{Severity::Incomplete, "requirement_not_met", {}, "", requirements};
      f.message = "less was compared than required: " + text;
      worst = std::max(worst, f.severity);
      out.finding(f);
    }
    for (const auto& m : met) text += (text.empty() ? "" : ", ") + m;
    out.check({"requirements", std::nullopt, unmet.empty() ? Check::Outcome::Pass : Check::Outcome::Fail,
               "compared: " + text});
  }

  Verdict v;
  const auto plural = [](const std::vector<int>& rs) { return rs.size() == 1 ? "rank " : "ranks "; };
  std::string groups;
  if (!identical.empty()) {
    groups = plural(identical) + rank_ranges(identical) + (same_layout ? " identical" : " scalars identical");
  }
  for (const auto& [step, rs] : diverge_at) {
    if (!groups.empty()) groups += "; ";
    groups += plural(rs) + rank_ranges(rs) + (rs.size() == 1 ? " diverges" : " diverge") + " at step " +
              std::to_string(step);
  }
  if (!groups.empty() && !nothing_compared) v.summary.push_back(groups);
  for (const auto& d : rank_data) {
    const auto& first = d["first_divergence"];
    if (first.empty()) continue;
    std::string line = "rank " + std::to_string(d["rank"].get<int>()) + ", step " +
                       std::to_string(first["step"].get<std::int64_t>()) + ":";
    if (first.contains("params")) {
      const auto& p = first["params"];
      line += " " + std::to_string(p["count"].get<std::size_t>()) + " of " +
              std::to_string(p["total"].get<std::size_t>()) + " parameters differ, first " +
              p["params"][0].get<std::string>() + ";";
    }
    for (const auto& [name, state] : first["scalars"].items())
      line += " " + name + " " + state.get<std::string>() + ";";
    line.pop_back();
    v.summary.push_back(line);
  }
  // Node divergences: the ranks where one starts first, then those that received or propagated it.
  for (const bool origin : {true, false}) {
    for (const auto& d : rank_data) {
      if (!d.contains("nodes_summary") || d["nodes_summary"].get<std::string>().empty()) continue;
      const auto& first = d["nodes"]["first"];
      const bool starts = first.is_object() && first.value("cause", "") == "origin";
      if (starts == origin) v.summary.push_back(d["nodes_summary"].get<std::string>());
    }
  }
  if (!full.is_null() && !full["first_divergent_step"].is_null()) {
    v.summary.push_back("full tensors (shard-invariant sums) diverge at step " +
                        std::to_string(full["first_divergent_step"].get<std::int64_t>()));
  }
  const json memory = memory_ratio(results);
  if (!memory.is_null()) {
    const auto& first = memory["ranks"][0];
    char line[256];
    std::snprintf(
        line, sizeof line,
        "peak reserved device memory, candidate (%s) / baseline (%s): %.3fx at most over %zu rank(s)",
        first["candidate_mode"].get<std::string>().c_str(), first["baseline_mode"].get<std::string>().c_str(),
        memory["max_reserved_ratio"].get<double>(), memory["ranks"].size());
    v.summary.push_back(line);
  }
  constexpr std::size_t kMissingListed = 10;
  for (std::size_t i = 0; i < missing_lines.size() && i < kMissingListed; ++i)
    v.summary.push_back("missing evidence: " + missing_lines[i]);
  if (missing_lines.size() > kMissingListed) {
    v.summary.push_back("missing evidence: ... " + std::to_string(missing_lines.size() - kMissingListed) +
                        " more (see the findings)");
  }
  if (missing_evidence && o.allow_incomplete) {
    v.summary.push_back("--allow-incomplete: the missing evidence does not fail this comparison");
  }

  // Lost nodes are named in the headline: "candidate node 1 (host gpu7, ranks 2-3) was lost".
  std::string lost;
  std::size_t lost_count = 0;
  for (const auto* ev : {&ev_base, &ev_cand}) {
    for (const auto& f : ev->findings) {
      if (f.kind != "node_lost") continue;
      LostNode node;
      node.node = f.values["node"].get<int>();
      node.host = f.values["host"].get<std::string>();
      node.ranks = f.values["ranks"].get<std::vector<int>>();
      lost += (lost.empty() ? "" : "; ") + f.values["run"].get<std::string>() + " " + node_label(node);
      ++lost_count;
    }
  }
  if (lost_count > 0) lost += lost_count == 1 ? " was lost" : " were lost";

  const bool incomplete = requirement_failed || (missing_evidence && !o.allow_incomplete);
  const std::string parity =
      o.tolerance.bitwise() ? "PARITY: bitwise identical" : "PARITY within " + o.tolerance.describe();
  if (bad_input) {
    v.exit_code = 2;
    v.headline = "BAD INPUT: some data could not be read (see errors above)";
  } else if (divergence) {
    v.exit_code = 1;
    v.headline =
        std::string("DIVERGENCE: the runs are not identical") +
        (missing_evidence ? " (and evidence is missing" + (lost.empty() ? "" : ": " + lost) + ")" : "");
  } else if (incomplete) {
    v.exit_code = 1;
    v.headline =
        requirement_failed && !(missing_evidence && !o.allow_incomplete)
            ? "INCOMPLETE: less was compared than the gate requires"
        : lost.empty()
            ? "INCOMPLETE: evidence is missing (failures, killed or missing ranks, unrecorded steps); no "
              "divergence in what was compared"
            : "INCOMPLETE: evidence is missing: " + lost + "; no divergence in what was compared";
  } else if (rounded) {
    v.exit_code = 0;
    v.headline = "NO DIVERGENCE IN THE PRINTED DIGITS: parity cannot be proven bitwise from rounded text";
  } else {
    v.exit_code = 0;
    v.headline = parity;
  }
  if (v.exit_code == 0 && missing_evidence) v.headline += " on the evidence present (--allow-incomplete)";
  v.data = {{"ranks", rank_data}, {"rounded", rounded}, {"comparison", o.tolerance.describe()}};
  v.data["full_tensors"] = full;
  v.data["device_memory"] = memory;
  v.data["incomplete"] = missing_evidence || requirement_failed;
  v.data["allow_incomplete"] = o.allow_incomplete;
  v.data["evidence"] = {{"baseline", ev_base.data}, {"candidate", ev_cand.data}};
  v.data["compared"] = {{"values", values},
                        {"steps", steps_compared.value_or(0)},
                        {"ranks", ranks_compared},
                        {"parameters", params_compared}};
  if (o.require.any()) v.data["requirements"] = requirements;
  enforce_evidence(v, evidence, out);
  // Ranks the rule found without evidence (node runs, where no declared step names them) count too.
  const bool gaps = !v.data["evidence"]["ranks_without_evidence"].empty();
  v.data["incomplete"] = missing_evidence || requirement_failed || gaps;
  v.data["bitwise_proof"] =
      !rounded && o.tolerance.bitwise() && v.exit_code == 0 && !missing_evidence && !gaps;
  out.end(v);
  return v.exit_code;
}

}  // namespace gparity::diff
