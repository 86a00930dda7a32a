#include "diff/graphs/rank_classify.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>

#include "diff/graphs/graph_align.hpp"
#include "diff/graphs/mesh.hpp"
#include "diff/graphs/trace_facts.hpp"

namespace gparity::diff {

using model::Graph;
using model::kNoNode;
using model::NodeId;
using model::Value;
using model::ValueKind;

std::string_view finding_class_name(FindingClass c) noexcept {
  switch (c) {
    case FindingClass::DeviceParametric: return "device-parametric";
    case FindingClass::RankParametric: return "rank-parametric";
    case FindingClass::ProcessGroupParametric: return "process-group-parametric";
    case FindingClass::Divergent: return "divergent";
  }
  return "divergent";
}

std::string_view verdict_name(GraphVerdict v) noexcept {
  switch (v) {
    case GraphVerdict::Identical: return "identical";
    case GraphVerdict::DeviceParametric: return "device-parametric";
    case GraphVerdict::RankParametric: return "rank-parametric";
    case GraphVerdict::ProcessGroupParametric: return "process-group-parametric";
    case GraphVerdict::Divergent: return "divergent";
  }
  return "divergent";
}

std::string RankLayout::dim_name(std::size_t d) const {
  if (d < mesh_names.size() && !mesh_names[d].empty()) return mesh_names[d];
  return "mesh[" + std::to_string(d) + "]";
}

std::int32_t RankLayout::local_device(std::int32_t rank) const noexcept {
  return ranks_per_node > 0 ? rank % ranks_per_node : rank;
}

std::vector<std::int32_t> RankLayout::coordinates(std::int32_t rank) const {
  std::vector<std::int32_t> c(mesh.size());
  std::int32_t rest = rank;
  for (std::size_t d = mesh.size(); d-- > 0;) {
    c[d] = mesh[d] > 0 ? rest % mesh[d] : 0;
    rest = mesh[d] > 0 ? rest / mesh[d] : rest;
  }
  return c;
}

namespace {

std::string term(std::int64_t a, const std::string& x, bool first) {
  std::string s = a < 0 ? (first ? "-" : " - ") : (first ? "" : " + ");
  const std::int64_t m = a < 0 ? -a : a;
  return s + (m == 1 ? x : std::to_string(m) + "*" + x);
}

}  // namespace

std::string AffineFunction::text() const {
  // One variable keeps the compact form ("32*rank+32"); mesh terms read "32*tp + 32".
  if (more.empty() && variable.find_first_of("[") == std::string::npos && variable != "rank" &&
      variable != "local_rank") {
    std::string out = term(a, variable, true);
    if (b > 0) out += " + " + std::to_string(b);
    if (b < 0) out += " - " + std::to_string(-b);
    return out;
  }
  std::string out;
  if (a == -1) {
    out = "-" + variable;
  } else if (a != 1) {
    out = std::to_string(a) + "*" + variable;
  } else {
    out = variable;
  }
  for (const auto& [x, k] : more) out += term(k, x, false);
  if (!more.empty()) {
    if (b > 0) out += " + " + std::to_string(b);
    if (b < 0) out += " - " + std::to_string(-b);
    return out;
  }
  if (b > 0) out += "+" + std::to_string(b);
  if (b < 0) out += std::to_string(b);
  return out;
}

namespace {

std::optional<AffineFunction> fit_one(const std::string& name, std::span<const std::int64_t> xs,
                                      std::span<const std::int64_t> values) {
  std::size_t j = 1;
  while (j < xs.size() && xs[j] == xs[0]) ++j;
  if (j == xs.size()) return std::nullopt;  // the variable does not vary over these ranks
  const std::int64_t dv = values[j] - values[0];
  const std::int64_t dx = xs[j] - xs[0];
  if (dv % dx != 0) return std::nullopt;
  const std::int64_t a = dv / dx;
  const std::int64_t b = values[0] - a * xs[0];
  bool ok = a != 0;
  for (std::size_t i = 0; ok && i < xs.size(); ++i) ok = values[i] == a * xs[i] + b;
  if (ok) return AffineFunction{name, a, b, {}, {}};
  return std::nullopt;
}

/// value = b + Σ a_d·coord_d over a mesh of two or more dimensions: each a_d from two ranks that
/// differ only in dimension d, then checked on every rank.
std::optional<AffineFunction> fit_mesh(std::span<const std::int32_t> ranks,
                                       std::span<const std::int64_t> values, const RankLayout& layout) {
  const std::size_t dims = layout.mesh.size();
  if (dims < 2 || ranks.empty()) return std::nullopt;
  std::vector<std::vector<std::int32_t>> c;
  for (const auto r : ranks) c.push_back(layout.coordinates(r));
  std::vector<std::int64_t> a(dims, 0);
  for (std::size_t d = 0; d < dims; ++d) {
    for (std::size_t i = 1; i < ranks.size(); ++i) {
      bool only_d = c[i][d] != c[0][d];
      for (std::size_t e = 0; only_d && e < dims; ++e) only_d = e == d || c[i][e] == c[0][e];
      if (!only_d) continue;
      const std::int64_t dv = values[i] - values[0], dx = c[i][d] - c[0][d];
      if (dv % dx != 0) return std::nullopt;
      a[d] = dv / dx;
      break;
    }
  }
  std::int64_t b = values[0];
  for (std::size_t d = 0; d < dims; ++d) b -= a[d] * c[0][d];
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    std::int64_t v = b;
    for (std::size_t d = 0; d < dims; ++d) v += a[d] * c[i][d];
    if (v != values[i]) return std::nullopt;
  }
  AffineFunction f;
  f.b = b;
  for (std::size_t d = 0; d < dims; ++d) {
    if (a[d] == 0) continue;
    if (f.variable.empty()) {
      f.variable = layout.dim_name(d);
      f.a = a[d];
    } else {
      f.more.emplace_back(layout.dim_name(d), a[d]);
    }
  }
  if (f.variable.empty()) return std::nullopt;
  return f;
}

std::optional<AffineFunction> fit_known(std::span<const std::int32_t> ranks,
                                        std::span<const std::int64_t> values, const RankLayout& layout) {
  std::vector<std::int64_t> x(ranks.begin(), ranks.end());
  if (auto f = fit_one("rank", x, values)) return f;
  if (layout.ranks_per_node > 0) {
    for (std::size_t i = 0; i < ranks.size(); ++i) x[i] = layout.local_device(ranks[i]);
    if (auto f = fit_one("local_rank", x, values)) return f;
  }
  for (std::size_t d = 0; d < layout.mesh.size(); ++d) {
    for (std::size_t i = 0; i < ranks.size(); ++i) x[i] = layout.coordinates(ranks[i])[d];
    if (auto f = fit_one(layout.dim_name(d), x, values)) return f;
  }
  return fit_mesh(ranks, values, layout);
}

std::string shape_text(const std::vector<std::int32_t>& shape) {
  std::string s;
  for (const auto d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

}  // namespace

std::optional<AffineFunction> fit_affine(std::span<const std::int32_t> ranks,
                                         std::span<const std::int64_t> values, const RankLayout& layout) {
  if (auto f = fit_known(ranks, values, layout)) return f;
  if (!layout.mesh.empty() || layout.infer_world <= 1) return std::nullopt;
  // No mesh known: the shapes the world size factors into, the first that explains the values.
  for (const auto& shape : mesh_factorizations(layout.infer_world)) {
    RankLayout l = layout;
    l.mesh = shape;
    l.infer_world = 0;
    if (auto f = fit_known(ranks, values, l); f && f->variable != "rank" && f->variable != "local_rank") {
      f->inferred_mesh =
          shape_text(shape) + " inferred from world size " + std::to_string(layout.infer_world);
      return f;
    }
  }
  return std::nullopt;
}

namespace {

/// The mesh dimension whose slices the ranks' values partition the ranks into: every value's
/// ranks lie in one slice (equal coordinates but in d) and no two values share a slice.
std::optional<std::size_t> slice_dimension(std::span<const std::int32_t> ranks,
                                           std::span<const std::string> values, const RankLayout& layout) {
  for (std::size_t d = 0; d < layout.mesh.size(); ++d) {
    std::map<std::string, std::vector<std::int32_t>> slice_of_value;
    std::map<std::vector<std::int32_t>, std::string> value_of_slice;
    bool ok = true;
    for (std::size_t i = 0; ok && i < ranks.size(); ++i) {
      auto key = layout.coordinates(ranks[i]);
      key.erase(key.begin() + static_cast<std::ptrdiff_t>(d));
      const auto [vit, vfresh] = slice_of_value.emplace(values[i], key);
      const auto [sit, sfresh] = value_of_slice.emplace(key, values[i]);
      ok = vit->second == key && sit->second == values[i];
    }
    if (ok && slice_of_value.size() > 1) return d;
  }
  return std::nullopt;
}

struct SlotValue {
  const NormalizedGraph* ng = nullptr;
  const Value* value = nullptr;
  std::string text;
  bool set = false;
};

struct Slot {
  std::vector<SlotValue> per_group;
};

// Calls f(path, value) for every device leaf of a value.
template <typename F>
void device_leaves(const Graph& g, const Value& v, const std::string& path, F& f) {
  if (v.kind == ValueKind::List || v.kind == ValueKind::Tuple || v.kind == ValueKind::Slice) {
    for (std::size_t i = 0; i < v.items.size(); ++i)
      device_leaves(g, v.items[i], path + "[" + std::to_string(i) + "]", f);
    return;
  }
  if (device_index_of(g, v)) f(path, v);
}

struct PerRank {
  std::int32_t rank;
  std::string text;
  std::optional<std::int64_t> integer;
  std::optional<std::int32_t> device;  // device index when the value is a device
};

PerRank rank_value(const SlotValue& sv, std::int32_t rank, const RankLayout& layout) {
  PerRank p{rank, sv.text, std::nullopt, std::nullopt};
  if (sv.value == nullptr) return p;
  const auto& g = sv.ng->graph();
  if (const auto idx = device_index_of(g, *sv.value)) {
    p.device = sv.ng->is_local(*idx) ? layout.local_device(rank) : *idx;
    p.text = sv.value->kind == ValueKind::String
                 ? "'cuda:" + std::to_string(*p.device) + "'"
                 : "device(type='cuda', index=" + std::to_string(*p.device) + ")";
  } else if (sv.value->kind == ValueKind::Int) {
    p.integer = sv.value->i;
  }
  return p;
}

std::string source_of(const Graph& g, const model::Node& n) {
  if (!n.source.known()) return "";
  return std::string(g.str(n.source.file)) + ":" + std::to_string(n.source.line);
}

GraphVerdict verdict_of(FindingClass c) {
  switch (c) {
    case FindingClass::DeviceParametric: return GraphVerdict::DeviceParametric;
    case FindingClass::RankParametric: return GraphVerdict::RankParametric;
    case FindingClass::ProcessGroupParametric: return GraphVerdict::ProcessGroupParametric;
    case FindingClass::Divergent: return GraphVerdict::Divergent;
  }
  return GraphVerdict::Divergent;
}

class Classifier {
 public:
  Classifier(std::span<const RankGraph> graphs, const GraphNormalization& norm, const RankLayout& layout)
      : graphs_(graphs.begin(), graphs.end()), norm_(norm), layout_(layout) {
    std::sort(graphs_.begin(), graphs_.end(),
              [](const RankGraph& x, const RankGraph& y) { return x.rank < y.rank; });
  }

  GraphClassification run() {
    group();
    for (std::size_t g = 0; g < out_.groups.size(); ++g) {
      const auto& first = graphs_[rep_[g]];
      reps_.push_back(
          std::make_unique<NormalizedGraph>(*first.graph, norm_, layout_.local_device(first.rank)));
    }
    slots_key_order_.clear();
    for (std::size_t g = 1; g < reps_.size(); ++g) compare_group(g);
    device_slots();
    for (const auto& key : slots_key_order_) classify_slot(key, slots_.at(key));
    node_findings();
    for (const auto& f : out_.findings) out_.verdict = std::max(out_.verdict, verdict_of(f.cls));
    return std::move(out_);
  }

 private:
  using SlotKey = std::pair<NodeId, std::string>;

  void group() {
    std::unordered_map<std::uint64_t, std::size_t> by_fp;
    for (std::size_t i = 0; i < graphs_.size(); ++i) {
      model::Normalization n;
      if (norm_.map_local_device) n.local_device = layout_.local_device(graphs_[i].rank);
      n.renumber_symbols = norm_.renumber_symbols;
      n.ignore_process_groups = norm_.ignore_process_groups;
      n.ignore_node_names = true;
      const std::uint64_t fp = model::fingerprint(*graphs_[i].graph, n);
      const auto [it, fresh] = by_fp.emplace(fp, out_.groups.size());
      if (fresh) {
        out_.groups.emplace_back();
        out_.fingerprints.push_back(fp);
        rep_.push_back(i);
      }
      out_.groups[it->second].push_back(graphs_[i].rank);
    }
  }

  Slot& slot(NodeId x, const std::string& path) {
    const SlotKey key{x, path};
    auto it = slots_.find(key);
    if (it == slots_.end()) {
      it = slots_.emplace(key, Slot{std::vector<SlotValue>(reps_.size())}).first;
      slots_key_order_.push_back(key);
    }
    return it->second;
  }

  void compare_group(std::size_t g) {
    const auto& a = *reps_[0];
    const auto& b = *reps_[g];
    auto al = align_graphs(a, b);
    const auto refs_equal = [&](NodeId x, NodeId y) { return x < al.a_to_b.size() && al.a_to_b[x] == y; };
    for (std::size_t i = 0; i < a.graph().nodes.size(); ++i) {
      const auto x = static_cast<NodeId>(i);
      const NodeId y = al.a_to_b[x];
      if (y == kNoNode) continue;
      if (al.moved[x]) moved_[x].push_back(g);
      for (auto& fd : diff_nodes(a, x, b, y, refs_equal)) {
        auto& s = slot(x, fd.path);
        if (!s.per_group[0].set) s.per_group[0] = {&a, fd.a_value, fd.a_text, true};
        s.per_group[g] = {&b, fd.b_value, fd.b_text, true};
      }
    }
    alignments_.push_back(std::move(al));
  }

  void device_slots() {
    const auto& a = *reps_[0];
    const auto& g = a.graph();
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      const auto x = static_cast<NodeId>(i);
      auto note = [&](const std::string& path, const Value& v) {
        if (!a.is_local(*device_index_of(g, v))) return;
        auto& s = slot(x, path);
        if (!s.per_group[0].set) s.per_group[0] = {&a, &v, value_text(g, v), true};
      };
      const auto& n = g.nodes[i];
      for (std::size_t k = 0; k < n.args.size(); ++k)
        device_leaves(g, n.args[k], "args[" + std::to_string(k) + "]", note);
      for (const auto& kw : n.kwargs)
        device_leaves(g, kw.value, "kwargs." + std::string(g.str(kw.name)), note);
    }
  }

  bool matched_in(std::size_t group, NodeId x) const {
    return group == 0 || alignments_[group - 1].a_to_b[x] != kNoNode;
  }

  void classify_slot(const SlotKey& key, const Slot& s) {
    std::vector<PerRank> values;
    for (std::size_t g = 0; g < reps_.size(); ++g) {
      if (!matched_in(g, key.first)) continue;  // the node-level finding covers it
      const SlotValue& sv = s.per_group[g].set ? s.per_group[g] : s.per_group[0];
      for (const std::int32_t r : out_.groups[g]) values.push_back(rank_value(sv, r, layout_));
    }
    std::sort(values.begin(), values.end(),
              [](const PerRank& p, const PerRank& q) { return p.rank < q.rank; });
    if (std::all_of(values.begin(), values.end(), [&](const PerRank& p) { return p.text == values[0].text; }))
      return;
    RankFinding f = finding_for(key.first, key.second);
    for (const auto& v : values) f.values.push_back({v.rank, v.text});
    const bool all_local = std::all_of(values.begin(), values.end(), [&](const PerRank& p) {
      return p.device && *p.device == layout_.local_device(p.rank);
    });
    const bool all_int =
        std::all_of(values.begin(), values.end(), [](const PerRank& p) { return p.integer.has_value(); });
    if (all_local) {
      f.cls = FindingClass::DeviceParametric;
    } else if (all_int) {
      std::vector<std::int32_t> ranks;
      std::vector<std::int64_t> ints;
      for (const auto& v : values) {
        ranks.push_back(v.rank);
        ints.push_back(*v.integer);
      }
      f.function = fit_affine(ranks, ints, layout_);
      f.cls = f.function ? FindingClass::RankParametric : FindingClass::Divergent;
    } else if (is_group_slot(key)) {
      process_group(values, f);
    }
    out_.findings.push_back(std::move(f));
  }

  /// The process-group argument of a functional collective.
  bool is_group_slot(const SlotKey& key) const {
    const auto& g = reps_[0]->graph();
    const auto& n = g.node(key.first);
    if (n.kind != model::NodeKind::CallFunction || !model::is_functional_collective(g.str(n.target)))
      return false;
    const int pg = model::process_group_arg(g, n);
    return key.second == "kwargs.group_name" || (pg >= 0 && key.second == "args[" + std::to_string(pg) + "]");
  }

  /// A rank that uses a group name whose Flight Recorder rank list does not hold it; "" when
  /// every name the pg_config knows holds its ranks.
  std::string group_contradiction(const std::vector<std::int32_t>& ranks,
                                  const std::vector<std::string>& names) const {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      std::string name = names[i];
      if (name.size() >= 2 && (name.front() == '\'' || name.front() == '"'))
        name = name.substr(1, name.size() - 2);
      for (const auto& [gname, granks] : layout_.group_ranks) {
        if (gname != name) continue;
        if (std::find(granks.begin(), granks.end(), ranks[i]) == granks.end())
          return "the Flight Recorder pg_config's group '" + name + "' does not hold rank " +
                 std::to_string(ranks[i]);
      }
    }
    return "";
  }

  /// Group names that partition the ranks into the slices of one mesh dimension.
  void process_group(const std::vector<PerRank>& values, RankFinding& f) const {
    std::vector<std::int32_t> ranks;
    std::vector<std::string> names;
    for (const auto& v : values) {
      ranks.push_back(v.rank);
      names.push_back(v.text);
    }
    std::vector<RankLayout> layouts{layout_};
    std::vector<std::string> inferred{""};
    if (layout_.mesh.empty() && layout_.infer_world > 1) {
      for (const auto& shape : mesh_factorizations(layout_.infer_world)) {
        RankLayout l = layout_;
        l.mesh = shape;
        layouts.push_back(l);
        inferred.push_back(shape_text(shape) + " inferred from world size " +
                           std::to_string(layout_.infer_world));
      }
    }
    for (std::size_t k = 0; k < layouts.size(); ++k) {
      const auto d = slice_dimension(ranks, names, layouts[k]);
      if (!d) continue;
      const auto dim = layouts[k].dim_name(*d);
      if (const auto contradiction = group_contradiction(ranks, names); !contradiction.empty()) {
        f.note = "one group name per " + dim + " slice, but " + contradiction;
        return;  // stays divergent
      }
      f.cls = FindingClass::ProcessGroupParametric;
      f.note = "one group per " + dim + " slice (mesh " +
               (inferred[k].empty() ? shape_text(layouts[k].mesh) : inferred[k]) +
               "): compile on one rank only if the group is resolved through the DeviceMesh (mesh[\"" + dim +
               "\"].get_group()), not baked as a name";
      return;
    }
  }

  RankFinding finding_for(NodeId x, std::string field, std::size_t group = 0) const {
    const auto& g = reps_[group]->graph();
    const auto& n = g.node(x);
    RankFinding f;
    f.node = std::string(g.str(n.name));
    f.target = std::string(g.str(n.target));
    f.field = std::move(field);
    f.source = source_of(g, n);
    f.graph_line = n.line;
    return f;
  }

  void presence(RankFinding f, const std::vector<bool>& present_in_group) {
    for (std::size_t g = 0; g < reps_.size(); ++g) {
      for (const std::int32_t r : out_.groups[g])
        f.values.push_back({r, present_in_group[g] ? "present" : "absent"});
    }
    std::sort(f.values.begin(), f.values.end(),
              [](const RankValue& p, const RankValue& q) { return p.rank < q.rank; });
    out_.findings.push_back(std::move(f));
  }

  void node_findings() {
    const auto& g0 = reps_[0]->graph();
    for (std::size_t i = 0; i < g0.nodes.size(); ++i) {
      const auto x = static_cast<NodeId>(i);
      std::vector<bool> present(reps_.size());
      bool all = true;
      for (std::size_t g = 0; g < reps_.size(); ++g) {
        present[g] = matched_in(g, x);
        all = all && present[g];
      }
      if (!all) presence(finding_for(x, "node"), present);
      if (const auto it = moved_.find(x); it != moved_.end()) {
        RankFinding f = finding_for(x, "order");
        for (std::size_t g = 0; g < reps_.size(); ++g) {
          const bool moved = std::find(it->second.begin(), it->second.end(), g) != it->second.end();
          for (const std::int32_t r : out_.groups[g]) f.values.push_back({r, moved ? "moved" : "in order"});
        }
        std::sort(f.values.begin(), f.values.end(),
                  [](const RankValue& p, const RankValue& q) { return p.rank < q.rank; });
        out_.findings.push_back(std::move(f));
      }
    }
    for (std::size_t g = 1; g < reps_.size(); ++g) {
      const auto& al = alignments_[g - 1];
      for (std::size_t j = 0; j < al.b_to_a.size(); ++j) {
        if (al.b_to_a[j] != kNoNode) continue;
        std::vector<bool> present(reps_.size(), false);
        present[g] = true;
        presence(finding_for(static_cast<NodeId>(j), "node", g), present);
      }
    }
  }

  std::vector<RankGraph> graphs_;
  const GraphNormalization& norm_;
  const RankLayout& layout_;
  GraphClassification out_;
  std::vector<std::size_t> rep_;  // index into graphs_ per group
  std::vector<std::unique_ptr<NormalizedGraph>> reps_;
  std::vector<Alignment> alignments_;  // group g >= 1 against group 0
  std::map<SlotKey, Slot> slots_;
  std::vector<SlotKey> slots_key_order_;
  std::map<NodeId, std::vector<std::size_t>> moved_;
};

}  // namespace

GraphClassification classify_ranks(std::span<const RankGraph> graphs, const GraphNormalization& norm,
                                   const RankLayout& layout) {
  if (graphs.empty()) return {};
  return Classifier(graphs, norm, layout).run();
}

namespace {

void adopt_mesh(RankLayout& layout, const MeshInfo& mesh) {
  layout.mesh = mesh.shape;
  layout.mesh_names = mesh.names;
  layout.mesh_source = mesh.source;
}

}  // namespace

RankLayout mesh_override_layout(std::string_view spec, std::int32_t ranks_per_node) {
  RankLayout layout;
  layout.ranks_per_node = ranks_per_node;
  if (!spec.empty()) adopt_mesh(layout, parse_mesh_override(spec));
  return layout;
}

RankLayout resolve_layout(const model::MultiRankTrace& trace, RankLayout layout,
                          std::vector<std::string>& problems) {
  std::int32_t world = 0;
  for (const auto& rt : trace.ranks) world = std::max(world, rt.rank + 1);
  const bool given = !layout.mesh.empty();
  if (given && layout.mesh_source.empty()) layout.mesh_source = "--mesh";
  const bool named = std::any_of(layout.mesh_names.begin(), layout.mesh_names.end(),
                                 [](const std::string& n) { return !n.empty(); });
  const auto groups = groups_beside_trace(trace.path, problems);
  for (const auto& g : groups)
    if (!g.ranks.empty()) layout.group_ranks.emplace_back(g.name, g.ranks);
  if (given && named) return layout;
  const auto specs = mesh_specs_in_trace(trace);
  auto mesh = mesh_from_specs(specs, world);
  if (!mesh) mesh = mesh_from_groups(groups, world);
  if (!mesh) mesh = mesh_from_manifest(trace.path, world, problems);
  if (given) {
    // The override's shape with the artifacts' dimension names when the shapes agree.
    if (mesh && mesh->shape == layout.mesh) layout.mesh_names = mesh->names;
    return layout;
  }
  if (mesh) {
    adopt_mesh(layout, *mesh);
  } else {
    layout.infer_world = world;
  }
  return layout;
}

TraceRanksReport classify_trace(const model::MultiRankTrace& trace, const GraphNormalization& norm,
                                const RankLayout& given, bool graphs) {
  TraceRanksReport report;
  report.normalizations = normalization_names(norm);
  report.layout = resolve_layout(trace, given, report.problems);
  const RankLayout& layout = report.layout;
  if (!layout.mesh.empty()) {
    std::string shape;
    for (std::size_t d = 0; d < layout.mesh.size(); ++d)
      shape += (d ? "x" : "") + std::to_string(layout.mesh[d]);
    std::string names;
    for (std::size_t d = 0; d < layout.mesh.size(); ++d) names += (d ? ", " : "") + layout.dim_name(d);
    report.mesh = shape + " (" + names + ") from " + layout.mesh_source;
  }
  using Key = std::tuple<model::CompileId, std::string, std::int32_t>;
  std::map<Key, std::vector<RankGraph>> by_key;
  for (const auto& rt : trace.ranks) {
    report.ranks.push_back(rt.rank);
    for (const auto& p : rt.problems) report.problems.push_back(p.text());
    if (!graphs) continue;
    std::map<std::pair<model::CompileId, std::string>, std::int32_t> seen;
    for (const auto& tg : rt.graphs) {
      const std::int32_t occ = seen[{tg.compile, tg.kind}]++;
      by_key[{tg.compile, tg.kind, occ}].push_back({rt.rank, &tg.graph});
    }
  }
  auto facts = trace_facts(trace);
  report.findings = std::move(facts.findings);
  report.fact_groups = std::move(facts.groups);
  for (auto& p : facts.problems) report.problems.push_back(std::move(p));
  for (const auto& [key, rank_graphs] : by_key) {
    TraceGraphReport g;
    g.compile = std::get<0>(key);
    g.kind = std::get<1>(key);
    g.occurrence = std::get<2>(key);
    for (const auto& rg : rank_graphs) g.ranks.push_back(rg.rank);
    g.classification = classify_ranks(rank_graphs, norm, layout);
    if (g.ranks.size() != report.ranks.size()) {
      RankFinding f;
      f.cls = FindingClass::Divergent;
      f.field = "graph";
      f.compile = g.compile.text();
      for (const std::int32_t r : report.ranks) {
        const bool in = std::find(g.ranks.begin(), g.ranks.end(), r) != g.ranks.end();
        f.values.push_back({r, in ? "present" : "absent"});
      }
      g.classification.findings.insert(g.classification.findings.begin(), std::move(f));
      g.classification.verdict = GraphVerdict::Divergent;
    }
    report.verdict = std::max(report.verdict, g.classification.verdict);
    report.graphs.push_back(std::move(g));
  }
  for (const auto& f : report.findings) report.verdict = std::max(report.verdict, verdict_of(f.cls));
  return report;
}

}  // namespace gparity::diff
