#include "diff/replay/node_compare.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/model/base/input_error.hpp"
#include "core/model/run/run_source.hpp"
#include "diff/causality/graph_comm.hpp"
#include "diff/replay/node_plan.hpp"
#include "diff/replay/node_runs.hpp"
#include "diff/runs/run_compare.hpp"
#include "hash/xxh3.hpp"

namespace gparity::diff {

using json = nlohmann::json;
using model::Graph;
using model::NodeId;

// ---- records ------------------------------------------------------------------------------------

const NodeRecordGraph* RankNodeRecords::find(std::string_view label) const noexcept {
  for (const auto& g : graphs) {
    if (g.label == label) return &g;
  }
  return nullptr;
}

RankNodeRecords node_records_of(const model::RankTrace& t) {
  RankNodeRecords out;
  std::unordered_map<std::string_view, std::size_t> index;  // views of t's labels
  for (const auto& r : t.nodes) {
    auto [it, fresh] = index.try_emplace(r.graph, out.graphs.size());
    if (fresh) out.graphs.push_back({r.graph, {}});
    out.graphs[it->second].records.push_back(r);
  }
  return out;
}

std::optional<Graph> load_record_graph(const std::string& run_dir, const model::RankTrace& t,
                                       const std::string& label, std::string& path, std::string& problem) {
  return load_ref_graph(run_dir, t.graphs, t.rank, label, path, problem);
}

// ---- comparison -----------------------------------------------------------------------------------

std::string_view divergence_cause_name(DivergenceCause c) noexcept {
  switch (c) {
    case DivergenceCause::Origin: return "origin";
    case DivergenceCause::Propagated: return "propagated";
    case DivergenceCause::Input: return "input";
    case DivergenceCause::Unknown: return "unknown";
    case DivergenceCause::Received: return "received";
  }
  return "unknown";
}

namespace {

/// A node's records, by output index.
using Outputs = std::map<std::int64_t, const model::NodeRecord*>;

std::unordered_map<std::string_view, Outputs> by_node(std::span<const model::NodeRecord> records) {
  std::unordered_map<std::string_view, Outputs> out;
  for (const auto& r : records) out[r.node][r.output] = &r;  // a repeated output: the last one wins
  return out;
}

/// Strides where they matter: a dimension of size 1 may have any stride.
std::vector<std::int64_t> effective_strides(const std::vector<std::int64_t>& stride,
                                            const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s = stride;
  for (std::size_t d = 0; d < s.size() && d < shape.size(); ++d)
    if (shape[d] == 1) s[d] = 0;
  return s;
}

/// Two views of the same shape that lie at different places of bases laid out alike (equal
/// strides): they read different elements of their bases, so they differ even when the bases
/// do not. Views of bases laid out differently cannot be told apart this way (false).
bool placed_differently(const model::NodeRecord& a, const model::NodeRecord& b) {
  if (!a.view || !b.view || a.view->base.empty() || b.view->base.empty()) return false;
  if (a.shape != b.shape || a.view->base_stride != b.view->base_stride) return false;
  if (std::any_of(a.shape.begin(), a.shape.end(), [](std::int64_t n) { return n == 0; })) return false;
  return a.view->offset != b.view->offset ||
         effective_strides(a.view->stride, a.shape) != effective_strides(b.view->stride, b.shape);
}

/// The fields in which two records of one output differ ("xxh3", "shard", "dtype", "shape",
/// "view"), of what both carry.
std::vector<std::string> record_diff(const model::NodeRecord& a, const model::NodeRecord& b) {
  std::vector<std::string> f;
  if (a.has_xxh3 && b.has_xxh3 && a.xxh3 != b.xxh3) f.emplace_back("xxh3");
  if (a.has_shard && b.has_shard && a.shard != b.shard) f.emplace_back("shard");
  if (a.dtype != b.dtype) f.emplace_back("dtype");
  if (a.shape != b.shape) f.emplace_back("shape");
  if (placed_differently(a, b)) f.emplace_back("view");
  return f;
}

/// A node's outputs whose records on one side or the other are views (no hash to compare): the
/// node's verdict follows their bases'. Also counts the outputs whose XXH3 one side lacks.
struct ViewPairs {
  std::vector<std::string> bases_a, bases_b;  // the views' bases, by each side's node names
  bool any = false;
  std::size_t hashed = 0;  // output pairs with a hash on both sides
  std::size_t xxh3_one_side = 0;
};
ViewPairs view_pairs(const Outputs& a, const Outputs& b) {
  ViewPairs v;
  for (const auto& [k, ra] : a) {
    const auto it = b.find(k);
    if (it == b.end()) continue;
    const auto& rb = *it->second;
    if (ra->view || rb.view) {
      v.any = true;
      if (ra->view && !ra->view->base.empty()) v.bases_a.push_back(ra->view->base);
      if (rb.view && !rb.view->base.empty()) v.bases_b.push_back(rb.view->base);
    } else {
      ++v.hashed;
      if (ra->has_xxh3 != rb.has_xxh3) ++v.xxh3_one_side;
    }
  }
  return v;
}

/// The first output in which two nodes differ; nullopt when every output is equal.
std::optional<NodeDivergence> outputs_diff(const Outputs& a, const Outputs& b) {
  for (const auto& [k, ra] : a) {
    const auto it = b.find(k);
    NodeDivergence d;
    d.output = k;
    d.a = *ra;
    if (it == b.end()) {
      d.fields = {"missing"};
      return d;
    }
    d.fields = record_diff(*ra, *it->second);
    d.b = *it->second;
    if (!d.fields.empty()) return d;
  }
  for (const auto& [k, rb] : b) {
    if (a.contains(k)) continue;
    NodeDivergence d;
    d.output = k;
    d.b = *rb;
    d.fields = {"missing"};
    return d;
  }
  return std::nullopt;
}

/// Without both graphs: A's graph (if any) gives order and inputs, names pair the nodes.
NodePlan plan_by_name(const NodeSide& a, const NodeSide& b) {
  NodePlan p;
  std::unordered_map<std::string_view, bool> in_b;
  for (const auto& r : b.records) in_b[r.node] = true;
  if (a.graph != nullptr) {
    const auto& g = *a.graph;
    auto topo = model::topological_order(g);
    if (!topo) {
      topo.emplace(g.nodes.size());
      for (NodeId i = 0; i < g.nodes.size(); ++i) (*topo)[i] = i;
    }
    std::vector<std::size_t> pos(g.nodes.size());
    for (std::size_t i = 0; i < topo->size(); ++i) pos[(*topo)[i]] = i;
    const model::UseEdges edges(g);
    for (const NodeId n : *topo) {
      p.order_a.emplace_back(g.node_name(n));
      std::vector<std::size_t> in;
      for (const NodeId i : edges.inputs(n)) in.push_back(pos[i]);
      p.inputs.push_back(std::move(in));
      p.placeholder.push_back(g.node(n).kind == model::NodeKind::Placeholder);
    }
  } else {
    std::unordered_map<std::string_view, bool> seen;
    for (const auto& r : a.records) {
      if (seen.try_emplace(r.node, true).second) {
        p.order_a.push_back(r.node);
        p.inputs.emplace_back();
        p.placeholder.push_back(r.op == "placeholder");
      }
    }
  }
  for (const auto& n : p.order_a) {
    const bool found = in_b.contains(n);
    p.partner.push_back(found ? n : std::string());
    p.how.emplace_back(found ? "name" : "none");
  }
  return p;
}

}  // namespace

NodeGraphResult compare_node_graph(const std::string& label, const NodeSide& a, const NodeSide& b,
                                   const NodeCompareOptions& o) {
  NodeGraphResult r;
  r.graph = label;
  const auto ra = by_node(a.records);
  const auto rb = by_node(b.records);
  const NodePlan p = a.graph && b.graph ? plan_by_graph(*a.graph, *b.graph) : plan_by_name(a, b);
  r.aligned_by_graph = p.by_graph;
  // Records whose node the plan does not know (a graph that does not match its records) are
  // visited after the graph's nodes, by name.
  std::vector<std::string> order = p.order_a;
  std::vector<std::string> partner = p.partner;
  std::vector<std::string> how = p.how;
  {
    // Views of the plan's strings (it does not change) and of the records, never of `order`,
    // which reallocates while it grows.
    std::unordered_set<std::string_view> known(p.order_a.begin(), p.order_a.end());
    for (const auto& rec : a.records) {
      if (known.insert(rec.node).second) {
        order.push_back(rec.node);
        const bool in_b = rb.contains(rec.node);
        partner.push_back(in_b ? rec.node : std::string());
        how.emplace_back(in_b ? "name" : "none");
      }
    }
  }
  // Where each node is in the walk, by its name in A and by its partner's name in B (a view
  // names its base by its own side's name).
  std::unordered_map<std::string_view, std::size_t> pos_a, pos_b;
  for (std::size_t i = 0; i < order.size(); ++i) {
    pos_a.emplace(order[i], i);
    if (!partner[i].empty()) pos_b.emplace(partner[i], i);
  }
  std::unordered_map<std::string_view, bool> b_used;
  std::vector<bool> tainted(order.size(), false);        // differed, or fed by something that did
  std::vector<bool> recorded(order.size(), false);       // compared on both sides
  std::unordered_map<std::string_view, NodeId> id_in_a;  // A's nodes, for their collectives
  if (a.graph != nullptr)
    for (NodeId n = 0; n < a.graph->nodes.size(); ++n) id_in_a.emplace(a.graph->node_name(n), n);
  r.causal.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto ia = ra.find(order[i]);
    const bool input_tainted =
        i < p.inputs.size() && std::any_of(p.inputs[i].begin(), p.inputs[i].end(),
                                           [&](std::size_t k) { return k < i && tainted[k]; });
    const auto ib = partner[i].empty() ? rb.end() : rb.find(partner[i]);
    if (ib != rb.end()) b_used[ib->first] = true;
    auto& cr = r.causal.emplace_back();
    cr.graph = label;
    cr.node = order[i];
    cr.inputs_known = i < p.inputs.size() && a.graph != nullptr;
    if (i < p.inputs.size())
      for (const std::size_t k : p.inputs[i])
        if (k < i) cr.inputs.push_back(k);
    cr.graph_input = i < p.placeholder.size() && p.placeholder[i];
    if (const auto it = id_in_a.find(order[i]); it != id_in_a.end())
      cr.comm = causality::comm_of_node(*a.graph, it->second);
    if (ia != ra.end() || ib != rb.end()) {
      const auto& any = ia != ra.end() ? *ia->second.begin()->second : *ib->second.begin()->second;
      cr.op = any.op;
      cr.source = any.source;
    }
    cr.compared = false;
    if (ia == ra.end() && ib == rb.end()) {
      tainted[i] = input_tainted;  // no tensor recorded (output node, a None result): pass through
      continue;
    }
    if (ia == ra.end() || ib == rb.end()) {
      if (ia != ra.end()) ++r.unmatched_a;
      tainted[i] = input_tainted;
      continue;
    }
    auto d = outputs_diff(ia->second, ib->second);
    const auto views = view_pairs(ia->second, ib->second);
    r.xxh3_one_side += views.xxh3_one_side;
    if (!d && views.any) {
      // A view: no hash to compare; it differs where its base does (also when no graph says
      // what it reads: the records name the base). A node with hashed outputs besides (the
      // graph's output node) was compared on those.
      bool base_tainted = false;
      const auto follow = [&](const std::vector<std::string>& bases,
                              const std::unordered_map<std::string_view, std::size_t>& pos) {
        for (const auto& base : bases) {
          const auto it = pos.find(base);
          if (it == pos.end() || it->second >= i) continue;
          base_tainted = base_tainted || tainted[it->second];
          if (std::find(cr.inputs.begin(), cr.inputs.end(), it->second) == cr.inputs.end())
            cr.inputs.push_back(it->second);
        }
      };
      follow(views.bases_a, pos_a);
      follow(views.bases_b, pos_b);
      if (views.hashed == 0) {
        ++r.views;
        tainted[i] = input_tainted || base_tainted;
        continue;
      }
      ++r.compared;
      recorded[i] = true;
      cr.compared = true;
      tainted[i] = base_tainted;
      continue;
    }
    ++r.compared;
    recorded[i] = true;
    cr.compared = true;
    if (!d) continue;
    cr.differs = true;
    tainted[i] = true;
    ++r.divergent;
    d->node_a = order[i];
    d->node_b = partner[i];
    d->matched_by = how[i];
    d->position = i;
    const model::NodeRecord& any = d->a ? *d->a : *d->b;
    d->op = any.op;
    d->source = any.source;
    if (i < p.inputs.size()) {
      for (const std::size_t k : p.inputs[i]) {
        if (k >= i) continue;
        if (tainted[k]) {
          d->differing_inputs.push_back(order[k]);
        } else if (!recorded[k]) {
          d->unrecorded_inputs.push_back(order[k]);
        }
      }
    }
    if (!d->differing_inputs.empty()) {
      d->cause = DivergenceCause::Propagated;
    } else if (i < p.placeholder.size() && p.placeholder[i]) {
      d->cause = DivergenceCause::Input;
    } else if (i < p.inputs.size() && a.graph != nullptr) {
      d->cause = DivergenceCause::Origin;
    } else {
      d->cause = DivergenceCause::Unknown;
    }
    if (d->cause == DivergenceCause::Origin) {
      ++r.origins;
      r.local_origins.push_back(*d);
    }
    if (!r.first) {
      r.first = std::move(*d);
    } else if (d->cause == DivergenceCause::Origin && r.other_origins.size() < o.max_origins) {
      r.other_origins.push_back(std::move(*d));
    }
  }
  for (const auto& [name, outs] : rb) {
    if (!b_used.contains(name)) ++r.unmatched_b;
  }
  return r;
}

NodeRankResult compare_node_records(const model::RankTrace& a, const std::string& run_a,
                                    const model::RankTrace& b, const std::string& run_b, int rank,
                                    const NodeCompareOptions& o) {
  NodeRankResult out;
  out.rank = rank;
  const auto na = node_records_of(a);
  const auto nb = node_records_of(b);
  if (na.empty() && nb.empty()) return out;
  const auto one_sided = [&](const std::string& label, const char* has, const char* lacks) {
    Finding f{Severity::Divergence, "node_graph_missing", {}, "", json::object()};
    f.where.rank = rank;
    f.where.graph = label;
    f.message = "graph " + label + " has node records in " + has + " but not in " + lacks;
    out.problems.push_back(std::move(f));
  };
  std::string diverged_graph;  // the first graph (in record order) that diverged
  for (const auto& ga : na.graphs) {
    const auto* gb = nb.find(ga.label);
    if (gb == nullptr) {
      one_sided(ga.label, "baseline", "candidate");
      continue;
    }
    std::string pa, pb, path_a, path_b;
    const auto graph_a = load_record_graph(run_a, a, ga.label, path_a, pa);
    const auto graph_b = load_record_graph(run_b, b, ga.label, path_b, pb);
    for (const auto* problem : {&pa, &pb}) {
      if (problem->empty()) continue;
      Finding f{Severity::Warning, "node_graph_unavailable", {}, "", json::object()};
      f.where.rank = rank;
      f.where.graph = ga.label;
      f.message = *problem + " (nodes paired by name; origin vs propagated needs the baseline's graph)";
      out.problems.push_back(std::move(f));
    }
    auto res = compare_node_graph(ga.label, {ga.records, graph_a ? &*graph_a : nullptr},
                                  {gb->records, graph_b ? &*graph_b : nullptr}, o);
    if (graph_a) res.graph_path = path_a;
    // Graphs run in record order: a backward graph's inputs are what the forward produced.
    if (res.first && res.first->cause == DivergenceCause::Input && !diverged_graph.empty()) {
      res.first->cause = DivergenceCause::Propagated;
      res.first->propagated_from = diverged_graph;
    }
    if (res.first && diverged_graph.empty()) diverged_graph = ga.label;
    out.graphs.push_back(std::move(res));
  }
  for (const auto& gb : nb.graphs) {
    if (na.find(gb.label) == nullptr) one_sided(gb.label, "candidate", "baseline");
  }
  return out;
}

// ---- across ranks ---------------------------------------------------------------------------------

DivergenceCause divergence_cause_of(causality::Cause c) noexcept {
  switch (c) {
    case causality::Cause::Origin: return DivergenceCause::Origin;
    case causality::Cause::Propagated: return DivergenceCause::Propagated;
    case causality::Cause::Received: return DivergenceCause::Received;
    case causality::Cause::Input: return DivergenceCause::Input;
    case causality::Cause::Unknown: return DivergenceCause::Unknown;
  }
  return DivergenceCause::Unknown;
}

std::vector<Finding> classify_node_ranks(std::span<NodeRankResult> ranks,
                                         const causality::GroupTable& baseline,
                                         const causality::GroupTable& candidate,
                                         const NodeCompareOptions& o) {
  // Each rank's graphs, in record order, make one program: a graph's record positions are offset
  // by the records of the graphs before it.
  std::vector<causality::RankRecords> programs;
  std::vector<std::vector<std::size_t>> offsets;
  for (const auto& r : ranks) {
    auto& prog = programs.emplace_back();
    prog.rank = r.rank;
    auto& off = offsets.emplace_back();
    for (const auto& g : r.graphs) {
      off.push_back(prog.records.size());
      for (auto rec : g.causal) {
        for (auto& in : rec.inputs) in += off.back();
        prog.records.push_back(std::move(rec));
      }
    }
  }
  const auto result = causality::classify(programs, baseline, candidate);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    auto& r = ranks[k];
    for (std::size_t gi = 0; gi < r.graphs.size(); ++gi) {
      auto& g = r.graphs[gi];
      const auto apply = [&](NodeDivergence& d) {
        const auto* c = result.find(r.rank, offsets[k][gi] + d.position);
        if (c == nullptr) return;
        d.cross_rank = *c;
        d.cause = divergence_cause_of(c->cause);
        if (!c->after_graph.empty()) d.propagated_from = c->after_graph;
      };
      if (g.first) apply(*g.first);
      for (auto& d : g.local_origins) apply(d);
      g.origins = 0;
      g.other_origins.clear();
      for (const auto& d : g.local_origins) {
        if (d.cause != DivergenceCause::Origin) continue;
        ++g.origins;
        const bool is_first = g.first && g.first->position == d.position;
        if (!is_first && g.other_origins.size() < o.max_origins) g.other_origins.push_back(d);
      }
    }
  }
  return result.problems;
}

// ---- findings -------------------------------------------------------------------------------------

std::string divergence_cause_text(const NodeDivergence& d, int rank) {
  const auto remote_origin = [&]() -> std::string {
    if (!d.cross_rank || d.cross_rank->origin.rank < 0 || d.cross_rank->origin.rank == rank) return {};
    return " (origin " + d.cross_rank->origin.text() + " on rank " +
           std::to_string(d.cross_rank->origin.rank) + ")";
  };
  std::string s;
  switch (d.cause) {
    case DivergenceCause::Origin:
      s = "origin: its inputs were equal";
      if (d.cross_rank && !d.cross_rank->group.empty())
        s += " on every member of group " +
             causality::group_text(d.cross_rank->group, d.cross_rank->group_desc);
      if (!d.unrecorded_inputs.empty()) {
        s += " (not recorded, taken as equal:";
        for (std::size_t i = 0; i < d.unrecorded_inputs.size() && i < 3; ++i)
          s += " " + d.unrecorded_inputs[i];
        s += d.unrecorded_inputs.size() > 3 ? " ...)" : ")";
      }
      return s;
    case DivergenceCause::Propagated: {
      if (!d.propagated_from.empty())
        return "propagated: a graph input, after " + d.propagated_from + " diverged" + remote_origin();
      s = "propagated: input";
      s += d.differing_inputs.size() == 1 ? " " : "s ";
      for (std::size_t i = 0; i < d.differing_inputs.size() && i < 3; ++i)
        s += (i ? ", " : "") + d.differing_inputs[i];
      if (d.differing_inputs.size() > 3) s += ", ...";
      return s + " already differed" + remote_origin();
    }
    case DivergenceCause::Received: return d.cross_rank ? d.cross_rank->text(d.node_a, rank) : "received";
    case DivergenceCause::Input: return "graph input: the graph was fed different values";
    case DivergenceCause::Unknown:
      if (d.cross_rank && !d.cross_rank->why_unknown.empty())
        return "cause unknown: " + d.cross_rank->why_unknown;
      return "origin unknown (no graph to find its inputs)";
  }
  return s;
}

namespace {

json record_json(const std::optional<model::NodeRecord>& r) {
  if (!r) return nullptr;
  json j = {{"node", r->node}, {"dtype", model::dtype_name(r->dtype)}, {"shape", r->shape}};
  // Only the hashes the record carries (a shard-only run has no xxh3, a view neither).
  if (r->has_xxh3) j["xxh3"] = hash::to_hex(r->xxh3);
  if (r->has_shard) j["shard"] = hash::to_hex(r->shard);
  if (r->view)
    j["view"] = {{"base", r->view->base},
                 {"offset", r->view->offset},
                 {"stride", r->view->stride},
                 {"base_stride", r->view->base_stride}};
  return j;
}

json divergence_json(const NodeDivergence& d) {
  json j = {{"node", d.node_a},
            {"node_b", d.node_b},
            {"op", d.op},
            {"source", d.source},
            {"position", d.position},
            {"output", d.output},
            {"fields", d.fields},
            {"cause", divergence_cause_name(d.cause)},
            {"differing_inputs", d.differing_inputs},
            {"unrecorded_inputs", d.unrecorded_inputs},
            {"propagated_from", d.propagated_from},
            {"matched_by", d.matched_by},
            {"baseline", record_json(d.a)},
            {"candidate", record_json(d.b)}};
  if (d.cross_rank) {
    const auto& c = *d.cross_rank;
    j["cross_rank"] = c.to_json();
    j["origin"] = c.origin.to_json();
    j["origin_rank"] = c.origin.rank;
    j["group"] = c.group;
    j["group_desc"] = c.group_desc;
    j["collective"] = c.group.empty() ? std::string() : d.node_a;
    j["from_ranks"] = c.from_ranks;
  }
  return j;
}

std::string describe(const NodeDivergence& d, int rank) {
  std::string s = d.node_a;
  if (!d.node_b.empty() && d.node_b != d.node_a) s += " (candidate: " + d.node_b + ")";
  s += " [" + (d.op.empty() ? std::string("?") : d.op);
  if (!d.source.empty()) s += ", " + d.source;
  s += "] output " + std::to_string(d.output) + ": ";
  const auto shape = [](const std::vector<std::int64_t>& v) {
    std::string t = "[";
    for (std::size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
    return t + "]";
  };
  for (std::size_t i = 0; i < d.fields.size(); ++i) {
    const auto& f = d.fields[i];
    s += i ? ", " : "";
    if (f == "missing") {
      s += d.a ? "missing in the candidate" : "missing in the baseline";
    } else if (d.a && d.b) {
      const auto& x = *d.a;
      const auto& y = *d.b;
      s += f + " " +
           (f == "xxh3"    ? hash::to_hex(x.xxh3) + " vs " + hash::to_hex(y.xxh3)
            : f == "shard" ? hash::to_hex(x.shard) + " vs " + hash::to_hex(y.shard)
            : f == "view" && x.view && y.view
                ? "of " + x.view->base + " at offset " + std::to_string(x.view->offset) + " strides " +
                      shape(x.view->stride) + " vs of " + y.view->base + " at offset " +
                      std::to_string(y.view->offset) + " strides " + shape(y.view->stride)
            : f == "dtype"
                ? std::string(model::dtype_name(x.dtype)) + " vs " + std::string(model::dtype_name(y.dtype))
                : shape(x.shape) + " vs " + shape(y.shape));
    }
  }
  return s + "; " + divergence_cause_text(d, rank);
}

Finding divergence_finding(const NodeRankResult& r, const NodeGraphResult& g, const NodeDivergence& d,
                           const char* kind, const std::string& lead) {
  Finding f{Severity::Divergence, kind, {}, lead + describe(d, r.rank), divergence_json(d)};
  f.where.rank = r.rank;
  f.where.graph = g.graph;
  f.where.node = d.node_a;
  f.values["graph"] = g.graph;
  if (!g.graph_path.empty()) f.values["graph_path"] = g.graph_path;
  return f;
}

}  // namespace

void node_findings(const NodeRankResult& r, std::vector<Finding>& findings, std::vector<Check>& checks) {
  for (const auto& p : r.problems) findings.push_back(p);
  for (const auto& g : r.graphs) {
    if (g.first)
      findings.push_back(divergence_finding(r, g, *g.first, "node_divergence", "first divergent node "));
    for (const auto& d : g.other_origins)
      findings.push_back(divergence_finding(r, g, d, "node_origin", "also an origin: "));
    if (g.origins > (g.first && g.first->cause == DivergenceCause::Origin ? 1 : 0) + g.other_origins.size()) {
      Finding f{Severity::Info, "node_origins_truncated", {}, "", json::object()};
      f.where.rank = r.rank;
      f.where.graph = g.graph;
      f.message = std::to_string(g.origins) + " origins in all; the rest are not listed";
      findings.push_back(std::move(f));
    }
    if (g.xxh3_one_side > 0) {
      // A `--node-hash shard` run against a `both` run: what both carry is compared.
      Finding f{Severity::Info, "node_hashes_partial", {}, "", {{"outputs", g.xxh3_one_side}}};
      f.where.rank = r.rank;
      f.where.graph = g.graph;
      f.message = std::to_string(g.xxh3_one_side) +
                  " outputs carry XXH3-64 on one side only (replay --node-hash both vs shard): "
                  "compared by the shard hash, dtype and shape";
      findings.push_back(std::move(f));
    }
    if (g.unmatched_a + g.unmatched_b > 0) {
      Finding f{Severity::Info,
                "node_unmatched",
                {},
                "",
                {{"baseline", g.unmatched_a}, {"candidate", g.unmatched_b}}};
      f.where.rank = r.rank;
      f.where.graph = g.graph;
      f.message = std::to_string(g.unmatched_a) + " baseline and " + std::to_string(g.unmatched_b) +
                  " candidate nodes with records have no counterpart (not compared)";
      findings.push_back(std::move(f));
    }
    Check c;
    c.name = "nodes " + g.graph;
    c.rank = r.rank;
    c.outcome = g.divergent > 0 ? Check::Outcome::Fail : Check::Outcome::Pass;
    c.message = std::to_string(g.compared) + " nodes compared, " + std::to_string(g.divergent) + " divergent";
    if (g.views > 0) c.message += ", " + std::to_string(g.views) + " views followed their base";
    if (g.xxh3_one_side > 0)
      c.message +=
          ", " + std::to_string(g.xxh3_one_side) + " outputs by the shard hash only (one side has no xxh3)";
    if (g.first)
      c.message +=
          ", first " + g.first->node_a + " (" + std::string(divergence_cause_name(g.first->cause)) + ")";
    checks.push_back(std::move(c));
  }
}

json node_summary(const NodeRankResult& r) {
  json graphs = json::array();
  std::size_t compared = 0, divergent = 0;
  json first = nullptr;
  for (const auto& g : r.graphs) {
    compared += g.compared;
    divergent += g.divergent;
    json gj = {{"graph", g.graph},
               {"compared", g.compared},
               {"divergent", g.divergent},
               {"origins", g.origins},
               {"unmatched_baseline", g.unmatched_a},
               {"unmatched_candidate", g.unmatched_b},
               {"views", g.views},
               {"xxh3_one_side", g.xxh3_one_side},
               {"aligned_by_graph", g.aligned_by_graph}};
    gj["first"] = g.first ? divergence_json(*g.first) : json(nullptr);
    if (g.first && first.is_null()) {
      first = gj["first"];
      first["graph"] = g.graph;
    }
    graphs.push_back(std::move(gj));
  }
  return {{"graphs", graphs}, {"compared", compared}, {"divergent", divergent}, {"first", first}};
}

std::string node_summary_line(const NodeRankResult& r) {
  for (const auto& g : r.graphs) {
    if (!g.first) continue;
    const auto& d = *g.first;
    if (d.cause == DivergenceCause::Received && d.cross_rank)
      return "rank " + std::to_string(r.rank) + ": " + d.cross_rank->text(d.node_a, r.rank) +
             " (first divergent node of " + g.graph + ")";
    std::string s = "rank " + std::to_string(r.rank) + ": first divergent node " + d.node_a + " (" + d.op;
    if (!d.source.empty()) s += ", " + d.source;
    s += ") in " + g.graph + ", " + std::string(divergence_cause_name(d.cause));
    if (d.cause == DivergenceCause::Propagated || d.cause == DivergenceCause::Unknown)
      if (d.cross_rank && d.cross_rank->origin.rank >= 0 && d.cross_rank->origin.rank != r.rank)
        s += " from " + d.cross_rank->origin.text() + " on rank " + std::to_string(d.cross_rank->origin.rank);
    return s;
  }
  return {};
}

std::vector<Finding> node_divergences_of_runs(const std::string& baseline, const std::string& candidate) {
  CollectingConsumer out;
  compare_runs(model::open_run(baseline), model::open_run(candidate), {}, out);
  std::vector<Finding> nodes;
  for (auto& f : out.findings) {
    if (f.kind == "node_divergence" || f.kind == "node_origin") nodes.push_back(std::move(f));
  }
  return nodes;
}

Evidence node_evidence(const NodeGraphResult& r, const std::string& a_label, std::size_t a_records,
                       const std::string& b_label, std::size_t b_records, std::size_t outputs_compared) {
  Evidence e;
  e.what = "node records";
  e.compared = r.compared + outputs_compared;
  e.sides = {{"baseline",
              a_label,
              a_records,
              std::to_string(a_records) + " node records of " + r.graph,
              "recorded no node",
              {}},
             {"candidate",
              b_label,
              b_records,
              std::to_string(b_records) + " node records of " + r.graph,
              "recorded no node",
              {}}};
  return e;
}

}  // namespace gparity::diff
