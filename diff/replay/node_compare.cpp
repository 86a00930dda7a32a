#include "diff/replay/node_compare.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/model/base/input_error.hpp"
#include "diff/causality/graph_comm.hpp"
#include "diff/replay/node_plan.hpp"

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
  // Hashes of two specs (docs/hashing.md) are different functions: a change of spec is not a
  // divergence. Such records are compared by XXH3 alone (compare_node_records says so).
  if (a.has_shard && b.has_shard && a.shard_spec == b.shard_spec && a.shard != b.shard)
    f.emplace_back("shard");
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

/// A node's outputs less those after `last` that `other` lacks: where a side's records stop
/// inside a node, its later outputs were not recorded there (counted in `missing`).
Outputs recorded_part(const Outputs& full, const Outputs& other, std::int64_t last, std::size_t& missing) {
  Outputs out;
  for (const auto& [k, rec] : full) {
    if (k > last && !other.contains(k)) {
      ++missing;
    } else {
      out.emplace(k, rec);
    }
  }
  return out;
}

/// Where a side's records of a graph stop when they end its rank file: the walk position of its
/// last record's node, and that record's output.
struct RecordsStop {
  std::size_t at = 0;
  std::int64_t output = 0;
};
std::optional<RecordsStop> records_stop(const NodeSide& s,
                                        const std::unordered_map<std::string_view, std::size_t>& pos) {
  if (!s.ends_file || s.records.empty()) return std::nullopt;
  const auto it = pos.find(s.records.back().node);
  if (it == pos.end()) return std::nullopt;
  return RecordsStop{it->second, s.records.back().output};
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
  // A side whose records end its rank file may stop inside the graph (NodeRecordsCut): what lies
  // past its last record is not recorded there, not missing.
  const auto stop_a = records_stop(a, pos_a), stop_b = records_stop(b, pos_b);
  NodeRecordsCut cut_a, cut_b;
  cut_a.candidate = false;
  const auto past = [&](NodeRecordsCut& c, std::size_t i) {
    if (c.nodes_after++ == 0) c.first_after = order[i];
  };
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
      if (ia != ra.end() && stop_b && i > stop_b->at) {
        past(cut_b, i);
      } else if (ib != rb.end() && stop_a && i > stop_a->at) {
        past(cut_a, i);
      } else if (ia != ra.end()) {
        ++r.unmatched_a;
      }
      tainted[i] = input_tainted;
      continue;
    }
    Outputs part_a, part_b;  // the outputs both recorded, where a side stops inside this node
    const Outputs* outs_a = &ia->second;
    const Outputs* outs_b = &ib->second;
    if (stop_b && i == stop_b->at)
      outs_a = &(part_a = recorded_part(ia->second, ib->second, stop_b->output, cut_b.outputs_missing));
    if (stop_a && i == stop_a->at)
      outs_b = &(part_b = recorded_part(ib->second, ia->second, stop_a->output, cut_a.outputs_missing));
    auto d = outputs_diff(*outs_a, *outs_b);
    const auto views = view_pairs(*outs_a, *outs_b);
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
  for (auto* c : {&cut_a, &cut_b}) {
    const auto& stop = c->candidate ? stop_b : stop_a;
    if (!stop || (c->nodes_after == 0 && c->outputs_missing == 0)) continue;
    c->last_node = order[stop->at];
    c->last_output = stop->output;
    r.cuts.push_back(std::move(*c));
  }
  return r;
}

namespace {

/// Records of one output whose shard hashes have different specs: told once per rank, as info when
/// XXH3 still compares them, as missing evidence (never a divergence) when one side has no XXH3.
void spec_problems(const RankNodeRecords& a, const RankNodeRecords& b, int rank, std::vector<Finding>& out) {
  std::set<int> specs_a, specs_b;
  std::size_t unverifiable = 0;
  std::size_t differing = 0;
  for (const auto& ga : a.graphs) {
    const auto* gb = b.find(ga.label);
    if (gb == nullptr) continue;
    std::map<std::pair<std::string_view, std::int64_t>, const model::NodeRecord*> by_output;
    for (const auto& r : gb->records) by_output[{r.node, r.output}] = &r;
    for (const auto& ra : ga.records) {
      const auto it = by_output.find({ra.node, ra.output});
      // A view carries no shard hash (it follows its base): its spec field means nothing.
      if (it == by_output.end() || !ra.has_shard || !it->second->has_shard) continue;
      specs_a.insert(ra.shard_spec);
      specs_b.insert(it->second->shard_spec);
      if (ra.shard_spec == it->second->shard_spec) continue;
      ++differing;
      if (!ra.has_xxh3 || !it->second->has_xxh3) ++unverifiable;
    }
  }
  if (differing == 0) return;
  const auto names = [](const std::set<int>& s) {
    std::string t;
    for (const int v : s) t += (t.empty() ? "v" : "/v") + std::to_string(v);
    return t;
  };
  const std::string specs = "shard hashes are spec " + names(specs_a) + " in baseline and " + names(specs_b) +
                            " in candidate (docs/hashing.md)";
  Finding info{Severity::Info, "node_shard_spec_differs", {}, "", {{"records", differing}}};
  info.where.rank = rank;
  info.message = specs + ": " + std::to_string(differing) +
                 " node record(s) compared by XXH3 only; a change of hash spec is not a divergence";
  out.push_back(std::move(info));
  if (unverifiable == 0) return;
  Finding f{Severity::Incomplete, "node_shard_spec_unverifiable", {}, "", {{"records", unverifiable}}};
  f.where.rank = rank;
  f.message = specs + " and " + std::to_string(unverifiable) +
              " of those records have no XXH3 on one side: their values were not compared (replay "
              "both runs with one spec, or with --node-hash both)";
  out.push_back(std::move(f));
}

}  // namespace

NodeRankResult compare_node_records(const model::RankTrace& a, const std::string& run_a,
                                    const model::RankTrace& b, const std::string& run_b, int rank,
                                    const NodeCompareOptions& o) {
  NodeRankResult out;
  out.rank = rank;
  const auto na = node_records_of(a);
  const auto nb = node_records_of(b);
  if (na.empty() && nb.empty()) return out;
  spec_problems(na, nb, rank, out.problems);
  // A graph with node records on one side only: a divergence of what was replayed, unless the
  // other side declares it (a "graph" record, written before any graph runs) or recorded no node
  // at all: the rank stopped before it (a rank killed mid-replay, a cut rank file), so it was not
  // recorded there.
  const auto one_sided = [&](const std::string& label, const char* has, const char* lacks,
                             const model::RankTrace& lacking) {
    const bool declared = declares_graph(lacking.graphs, label);
    const bool stopped = declared || lacking.nodes.empty();
    Finding f{stopped ? Severity::Incomplete : Severity::Divergence,
              stopped ? "node_graph_not_recorded" : "node_graph_missing",
              {},
              "",
              {{"graph", label}, {"recorded_in", has}, {"declared_in", declared ? lacks : ""}}};
    f.where.rank = rank;
    f.where.graph = label;
    f.where.source = lacking.source;
    f.message = "graph " + label + " has node records in " + has + " but not in " + lacks;
    if (stopped)
      f.message += std::string(declared ? ", whose \"graph\" record declares it"
                                        : ", whose rank file holds no node record") +
                   ": not recorded there (a rank killed mid-replay, a cut rank file), not compared";
    out.problems.push_back(std::move(f));
  };
  std::string diverged_graph;  // the first graph (in record order) that diverged
  for (const auto& ga : na.graphs) {
    const auto* gb = nb.find(ga.label);
    if (gb == nullptr) {
      one_sided(ga.label, "baseline", "candidate", b);
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
    // The graph whose records end a rank file is where a rank killed mid-replay stopped.
    const bool a_ends = a.nodes.back().graph == ga.label, b_ends = b.nodes.back().graph == ga.label;
    auto res = compare_node_graph(ga.label, {ga.records, graph_a ? &*graph_a : nullptr, a_ends},
                                  {gb->records, graph_b ? &*graph_b : nullptr, b_ends}, o);
    if (graph_a) res.graph_path = path_a;
    for (auto& cut : res.cuts) cut.file = cut.candidate ? b.source : a.source;
    // Graphs run in record order: a backward graph's inputs are what the forward produced.
    if (res.first && res.first->cause == DivergenceCause::Input && !diverged_graph.empty()) {
      res.first->cause = DivergenceCause::Propagated;
      res.first->propagated_from = diverged_graph;
    }
    if (res.first && diverged_graph.empty()) diverged_graph = ga.label;
    out.graphs.push_back(std::move(res));
  }
  for (const auto& gb : nb.graphs) {
    if (na.find(gb.label) == nullptr) one_sided(gb.label, "candidate", "baseline", a);
  }
  return out;
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
