#include "diff/replay/replay_verdict.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/model/base/input_error.hpp"
#include "core/model/run/run_source.hpp"
#include "diff/report/evidence.hpp"

namespace gparity::diff {

using json = nlohmann::json;

namespace {

/// The graph outputs, by what both records carry (a view output has no hash: its base is a node
/// of the graph, compared with the nodes).
bool same_outputs(std::span<const model::NodeRecord> a, std::span<const model::NodeRecord> b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i].has_xxh3 && b[i].has_xxh3 && a[i].xxh3 != b[i].xxh3) ||
        (a[i].has_shard && b[i].has_shard && a[i].shard != b[i].shard) || a[i].dtype != b[i].dtype ||
        a[i].shape != b[i].shape || a[i].output != b[i].output)
      return false;
  return true;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

/// "first divergent node: slice_1 (aten.slice.Tensor) at coor.py:20 <-> coor node slice_1; its
/// inputs are equal (origin)", with the cause across ranks when there is one.
std::string first_text(const NodeDivergence& d, const std::string& label_b, int rank) {
  std::string s = "first divergent node: " + d.node_a + " (" + d.op + ")" +
                  (d.source.empty() ? "" : " at " + d.source) + " <-> " + label_b + " node " + d.node_b;
  switch (d.cause) {
    case DivergenceCause::Propagated: return s + "; its inputs already differ (propagated)";
    case DivergenceCause::Received:
    case DivergenceCause::Unknown:
      if (d.cross_rank) return s + "; " + divergence_cause_text(d, rank);
      [[fallthrough]];
    default: return s + "; its inputs are equal (" + std::string(divergence_cause_name(d.cause)) + ")";
  }
}

json first_json(const NodeDivergence& d) {
  json j = {{"node", d.node_a},
            {"op", d.op},
            {"source", d.source},
            {"other_node", d.node_b},
            {"origin", d.cause != DivergenceCause::Propagated && d.cause != DivergenceCause::Received},
            {"cause", divergence_cause_name(d.cause)}};
  return j;
}

/// This rank's two executions compared, locally.
struct Comparison {
  NodeGraphResult nodes;
  bool outputs_equal = true;
  [[nodiscard]] bool equal() const { return outputs_equal && !nodes.first; }
};

Comparison compare(const ReplayRankRun& run) {
  Comparison c;
  c.outputs_equal = same_outputs(run.outputs_a, run.outputs_b);
  c.nodes = compare_node_graph(run.label_a, run.a, run.b);
  return c;
}

/// The one evidence rule (diff/report/evidence.hpp): two executions that recorded nothing are no parity.
EvidenceRuling evidence_of(const Comparison& c, const ReplayRankRun& run) {
  return rule_on(node_evidence(c.nodes, run.label_a, run.a.records.size() + run.outputs_a.size(), run.label_b,
                               run.b.records.size() + run.outputs_b.size(),
                               std::min(run.outputs_a.size(), run.outputs_b.size())));
}

/// What a rank learns about every rank from the exchanged records.
struct Across {
  causality::Result result;
  std::vector<causality::RankRecords> ranks;
  /// Per rank (by position in `ranks`): its first divergent record, if any.
  std::vector<std::optional<std::size_t>> first;
};

Across classify_all(std::span<const std::string> evidence, const causality::GroupTable& groups) {
  Across a;
  for (const auto& text : evidence) {
    const auto j = json::parse(text, nullptr, false);
    if (j.is_discarded()) throw std::invalid_argument("replay: a rank's causal records are not JSON");
    a.ranks.push_back(causality::rank_records_from_json(j));
  }
  a.result = causality::classify(a.ranks, groups);
  for (const auto& r : a.ranks) {
    auto& f = a.first.emplace_back();
    for (std::size_t i = 0; i < r.records.size() && !f; ++i)
      if (r.records[i].differs) f = i;
  }
  return a;
}

/// Origins per rank in causal order: "origin on rank 1: slice_1 (aten.slice.Tensor) at coor.py:20".
std::vector<std::string> origin_parts(const causality::Result& r) {
  std::vector<std::string> parts;
  std::set<int> named;
  for (const auto& o : r.origins) {
    if (!named.insert(o.rank).second) continue;
    parts.push_back("origin on rank " + std::to_string(o.rank) + ": " + o.node + " (" + o.op + ")" +
                    (o.source.empty() ? "" : " at " + o.source));
  }
  return parts;
}

/// What a rank's coor graph run alone (with its partners' correct collective results) showed.
struct Alone {
  bool ran = false;
  bool safe = false;
  std::string first;  // the first divergent node's text when unsafe, or the problem
  std::string node;   // that node, "node (op) at source", for the overall line
};

json alone_json(const Alone& a) {
  return {{"ran", a.ran}, {"safe", a.safe}, {"first", a.first}, {"node", a.node}};
}

Alone alone_from_json(const std::string& text) {
  const auto j = json::parse(text, nullptr, false);
  Alone a;
  if (!j.is_object()) return a;
  a.ran = j.value("ran", false);
  a.safe = j.value("safe", false);
  a.first = j.value("first", "");
  a.node = j.value("node", "");
  return a;
}

}  // namespace

bool replay_rank_equal(const ReplayRankRun& run) {
  const auto c = compare(run);
  return c.equal() && evidence_of(c, run).exit_code == 0;
}

ReplayVerdict judge_replay(ReplayMode mode, const ReplayRankRun& run, const causality::GroupTable& groups,
                           const ReplayExchange& exchange, const ReplayRunAlone& run_alone) {
  ReplayVerdict v;
  auto c = compare(run);
  v.equal = c.equal();
  v.json["outputs_equal"] = v.equal;
  const auto ruling = evidence_of(c, run);
  v.json["evidence"] = ruling.json;

  // Across ranks (not for --cuda-graph: both executions are this rank's).
  std::optional<Across> across;
  if (mode != ReplayMode::CudaGraph) {
    causality::RankRecords mine{run.rank, c.nodes.causal};
    across = classify_all(exchange("causal-records", causality::to_json(mine).dump()), groups);
    // This rank's first divergence as the shared walk (the same on every rank) classified it.
    if (c.nodes.first) {
      auto& d = *c.nodes.first;
      if (const auto* cls = across->result.find(run.rank, d.position)) {
        d.cross_rank = *cls;
        d.cause = divergence_cause_of(cls->cause);
      }
    }
    for (std::size_t k = 0; k < across->ranks.size(); ++k) v.all_equal = v.all_equal && !across->first[k];
    v.all_equal = v.all_equal && v.equal;
  } else {
    v.all_equal = v.equal;
  }

  // What reached this rank from others: every divergence here is received, or propagated from an
  // origin on another rank.
  std::vector<int> affected_by;
  bool only_received = !v.equal && across && c.nodes.first;
  if (across) {
    for (const auto& rr : across->result.ranks) {
      if (rr.rank != run.rank) continue;
      for (const auto& [i, cls] : rr.divergent) {
        const bool from_others =
            (cls.cause == causality::Cause::Received || cls.cause == causality::Cause::Propagated) &&
            cls.origin.rank >= 0 && cls.origin.rank != run.rank;
        if (from_others) {
          affected_by.push_back(cls.origin.rank);
        } else {
          only_received = false;
        }
      }
    }
  }
  std::sort(affected_by.begin(), affected_by.end());
  affected_by.erase(std::unique(affected_by.begin(), affected_by.end()), affected_by.end());
  only_received = only_received && !affected_by.empty();

  const std::string first = c.nodes.first ? first_text(*c.nodes.first, run.label_b, run.rank)
                            : v.equal     ? std::string()
                                          : "outputs differ, but no aligned node's tensors do";
  Alone alone;
  if (mode == ReplayMode::Coor && only_received && run_alone) {
    std::string problem;
    const auto records = run_alone(problem);
    alone.ran = true;
    if (!problem.empty()) {
      alone.first = "it cannot run alone: " + problem;
    } else {
      const auto a = compare_node_graph(run.label_a, run.a, {records, run.b.graph});
      alone.safe = !a.first;
      if (a.first) {
        alone.first = first_text(*a.first, run.label_b + "-alone", run.rank);
        alone.node = a.first->node_a + " (" + a.first->op + ")" +
                     (a.first->source.empty() ? "" : " at " + a.first->source);
      }
    }
  }
  // Every rank learns what the others' alone runs showed (the overall verdict names them).
  std::vector<Alone> alones;
  if (mode == ReplayMode::Coor)
    for (const auto& t : exchange("alone", alone_json(alone).dump())) alones.push_back(alone_from_json(t));

  const std::string by = ranks_text(affected_by);
  switch (mode) {
    case ReplayMode::Against: v.text = v.equal ? "outputs bitwise equal" : "outputs differ; " + first; break;
    case ReplayMode::CudaGraph:
      v.text = v.equal ? "captured replay bitwise equal to the uncaptured run"
                       : "captured replay differs from the uncaptured run; " + first;
      break;
    case ReplayMode::Coor:
      if (v.equal) {
        v.text = "safe: rank 0's graph, hoisted, gives this rank's bits";
      } else if (alone.ran && alone.safe) {
        v.text = "safe by itself, affected by " + by +
                 ": rank 0's graph, hoisted, gives this rank's bits when its collectives get their "
                 "partners' correct inputs; " +
                 first;
      } else if (alone.ran) {
        v.text =
            "unsafe: rank 0's graph, hoisted, differs from this rank's even with its partners' correct "
            "inputs; " +
            alone.first + "; also affected by " + by + ": " + first;
      } else {
        v.text = "unsafe: rank 0's graph, hoisted, differs from this rank's; " + first;
      }
      break;
  }

  // Overall: the origins first, then the ranks that received, then the rest.
  if (across && !v.all_equal) {
    auto parts = origin_parts(across->result);
    for (std::size_t k = 0; k < across->ranks.size(); ++k) {
      const int rank = across->ranks[k].rank;
      if (k < alones.size() && alones[k].ran && !alones[k].safe)
        parts.push_back("origin on rank " + std::to_string(rank) + " with its partners' correct inputs: " +
                        (alones[k].node.empty() ? alones[k].first : alones[k].node));
    }
    std::vector<int> safe;
    for (std::size_t k = 0; k < across->ranks.size(); ++k) {
      const int rank = across->ranks[k].rank;
      if (!across->first[k]) {
        safe.push_back(rank);
        continue;
      }
      const auto* cls = across->result.find(rank, *across->first[k]);
      if (cls == nullptr) continue;
      const auto& rec = across->ranks[k].records[*across->first[k]];
      if (cls->cause == causality::Cause::Received) {
        std::string p = "rank " + std::to_string(rank) + " " + cls->text(rec.node, rank);
        if (k < alones.size() && alones[k].ran && alones[k].safe) p += " (safe by itself)";
        parts.push_back(p);
      } else if (cls->cause == causality::Cause::Unknown) {
        parts.push_back("rank " + std::to_string(rank) + " at " + rec.node + ": " +
                        cls->text(rec.node, rank));
      }
    }
    if (!safe.empty()) parts.push_back(ranks_text(safe) + (mode == ReplayMode::Coor ? " safe" : " equal"));
    v.overall = std::string("all ranks: ") + (mode == ReplayMode::Coor ? "unsafe" : "outputs differ");
    for (std::size_t i = 0; i < parts.size(); ++i) v.overall += (i ? "; " : ": ") + parts[i];
  } else if (across && across->ranks.size() > 1) {
    v.overall = mode == ReplayMode::Coor ? "all ranks: safe: rank 0's graph, hoisted, gives every rank's bits"
                                         : "all ranks: outputs bitwise equal";
  }

  v.exit_code = v.all_equal ? 0 : 1;
  if (ruling.exit_code == 2) {
    v.equal = false;
    v.all_equal = false;
    v.text = ruling.headline;
    v.exit_code = 2;
  }
  if (c.nodes.first) {
    const auto& d = *c.nodes.first;
    v.json["first_divergent"] = first_json(d);
    v.json["cause"] = divergence_cause_name(d.cause);
    if (d.cross_rank) {
      const auto& cls = *d.cross_rank;
      v.json["origin"] = cls.origin.to_json();
      v.json["origin_rank"] = cls.origin.rank;
      v.json["group"] = cls.group;
      v.json["group_desc"] = cls.group_desc;
      v.json["collective"] = cls.group.empty() ? std::string() : d.node_a;
      v.json["from_ranks"] = cls.from_ranks;
      if (cls.through) v.json["through"] = cls.through->to_json();
    }
  }
  v.json["affected_by"] = affected_by;
  if (mode == ReplayMode::Coor) v.json["safe_alone"] = alone.ran ? json(alone.safe) : json(nullptr);
  if (alone.ran && !alone.safe) v.json["alone_first_divergent"] = alone.first;
  v.json["all_equal"] = v.all_equal;
  if (across) {
    json origins = json::array();
    for (const auto& o : across->result.origins) origins.push_back(o.to_json());
    v.json["origins"] = origins;
    v.json["origin_ranks"] = across->result.origin_ranks();
    json problems = json::array();
    for (const auto& p : across->result.problems)
      problems.push_back({{"kind", p.kind}, {"message", p.message}});
    v.json["problems"] = problems;
  }
  v.json["text"] = v.text;
  v.json["overall"] = v.overall;
  return v;
}

namespace {

/// One rank of a replay run as recorded: both executions and the alone run, with their graphs.
struct RecordedRank {
  int rank = 0;
  std::vector<model::NodeRecord> a, b, alone, out_a, out_b;
  std::optional<model::Graph> graph_a, graph_b;
  bool has_alone = false;
};

std::vector<model::NodeRecord> outputs_of(const std::vector<model::NodeRecord>& records) {
  std::vector<model::NodeRecord> out;
  for (const auto& r : records)
    if (r.op == "output") out.push_back(r);
  return out;
}

}  // namespace

std::vector<RankReplayVerdict> judge_replay_run(const std::string& run_dir) {
  const auto run = model::open_run(run_dir);
  const auto it = run.manifest.extra.find("replay");
  if (it == run.manifest.extra.end() || !it->is_object())
    throw model::InputError(run_dir, "not a gparity replay run (the manifest has no \"replay\")");
  const bool coor = it->value("coor", false);
  const bool against = !it->value("against", std::string()).empty();
  if (!coor && !against)
    throw model::InputError(run_dir, "a replay run without --against or --coor has no verdict to judge");
  const std::string la = coor ? "own" : "a", lb = coor ? "coor" : "b";
  causality::GroupTable groups;
  if (it->contains("groups")) {
    try {
      groups = causality::group_table_from_json(it->at("groups"));
    } catch (const std::invalid_argument& e) {
      throw model::InputError(run_dir + "/manifest.json", std::string("replay.groups: ") + e.what());
    }
  }
  std::vector<RecordedRank> ranks;
  for (const auto& entry : run.ranks) {
    if (!entry.present) continue;
    const auto t = run.load(entry);
    RecordedRank r;
    r.rank = entry.rank;
    for (const auto& n : t.nodes) {
      if (n.graph == la) r.a.push_back(n);
      if (n.graph == lb) r.b.push_back(n);
      if (n.graph == "coor-alone") r.alone.push_back(n);
    }
    r.has_alone = !r.alone.empty();
    if (r.a.empty() || r.b.empty())
      throw model::InputError(entry.path, "no node records of graphs \"" + la + "\" and \"" + lb + "\"");
    std::string path, problem;
    r.graph_a = load_record_graph(run_dir, t, la, path, problem);
    r.graph_b = load_record_graph(run_dir, t, lb, path, problem);
    r.out_a = outputs_of(r.a);
    r.out_b = outputs_of(r.b);
    ranks.push_back(std::move(r));
  }
  const auto side = [](const std::vector<model::NodeRecord>& rs, const std::optional<model::Graph>& g) {
    return NodeSide{rs, g ? &*g : nullptr};
  };
  const auto rank_run = [&](const RecordedRank& r) {
    return ReplayRankRun{r.rank, la, lb, side(r.a, r.graph_a), side(r.b, r.graph_b), r.out_a, r.out_b};
  };
  // What the ranks exchanged: their causal records, then (--coor) what their alone runs showed.
  std::vector<std::string> evidence;
  for (const auto& r : ranks) {
    const auto c = compare_node_graph(la, side(r.a, r.graph_a), side(r.b, r.graph_b));
    evidence.push_back(causality::to_json(causality::RankRecords{r.rank, c.causal}).dump());
  }
  std::vector<std::string> alone(ranks.size(), "{}");
  std::vector<RankReplayVerdict> out;
  for (const bool final_pass : {false, true}) {
    out.clear();
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      const auto exchange = [&](const std::string& key, const std::string& text) {
        if (key != "alone") return evidence;
        if (!final_pass) alone[k] = text;
        return alone;
      };
      const auto run_alone = [&](std::string& problem) {
        if (!ranks[k].has_alone) problem = "the run holds no coor-alone records of this rank";
        return ranks[k].alone;
      };
      out.push_back({ranks[k].rank, judge_replay(coor ? ReplayMode::Coor : ReplayMode::Against,
                                                 rank_run(ranks[k]), groups, exchange, run_alone)});
    }
    if (!coor) break;  // no alone runs to learn about
  }
  return out;
}

}  // namespace gparity::diff
