#include "diff/graphs/rank_classify.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "core/model/base/input_error.hpp"
#include "core/model/base/path_kind.hpp"
#include "core/model/graph/fx_text.hpp"
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

/// A rank that uses a group name whose Flight Recorder rank list does not hold it; "" when
/// every name the pg_config knows holds its ranks.
std::string group_contradiction(const std::vector<std::int32_t>& ranks, const std::vector<std::string>& names,
                                const RankLayout& layout) {
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    std::string name = names[i];
    if (name.size() >= 2 && (name.front() == '\'' || name.front() == '"'))
      name = name.substr(1, name.size() - 2);
    for (const auto& [gname, granks] : layout.group_ranks) {
      if (gname != name) continue;
      if (std::find(granks.begin(), granks.end(), ranks[i]) == granks.end())
        return "the Flight Recorder pg_config's group '" + name + "' does not hold rank " +
               std::to_string(ranks[i]);
    }
  }
  return "";
}

/// Group names that partition the ranks into the slices of one mesh dimension.
void process_group(const std::vector<PerRank>& values, RankFinding& f, const RankLayout& layout) {
  std::vector<std::int32_t> ranks;
  std::vector<std::string> names;
  for (const auto& v : values) {
    ranks.push_back(v.rank);
    names.push_back(v.text);
  }
  std::vector<RankLayout> layouts{layout};
  std::vector<std::string> inferred{""};
  if (layout.mesh.empty() && layout.infer_world > 1) {
    for (const auto& shape : mesh_factorizations(layout.infer_world)) {
      RankLayout l = layout;
      l.mesh = shape;
      layouts.push_back(l);
      inferred.push_back(shape_text(shape) + " inferred from world size " +
                         std::to_string(layout.infer_world));
    }
  }
  for (std::size_t k = 0; k < layouts.size(); ++k) {
    const auto d = slice_dimension(ranks, names, layouts[k]);
    if (!d) continue;
    const auto dim = layouts[k].dim_name(*d);
    if (const auto contradiction = group_contradiction(ranks, names, layout); !contradiction.empty()) {
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

/// The process-group argument of a functional collective.
bool group_slot(const Graph& g, NodeId x, const std::string& path) {
  const auto& n = g.node(x);
  if (n.kind != model::NodeKind::CallFunction || !model::is_functional_collective(g.str(n.target)))
    return false;
  const int pg = model::process_group_arg(g, n);
  return path == "kwargs.group_name" || (pg >= 0 && path == "args[" + std::to_string(pg) + "]");
}

/// The class of a slot whose per-rank values differ (`values` by rank; f.values filled here).
void classify_values(const std::vector<PerRank>& values, bool group_slot, const RankLayout& layout,
                     RankFinding& f) {
  for (const auto& v : values) f.values.push_back({v.rank, v.text});
  const bool all_local = std::all_of(values.begin(), values.end(), [&](const PerRank& p) {
    return p.device && *p.device == layout.local_device(p.rank);
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
    f.function = fit_affine(ranks, ints, layout);
    f.cls = f.function ? FindingClass::RankParametric : FindingClass::Divergent;
  } else if (group_slot) {
    process_group(values, f, layout);
  }
}

/// A finding about node x of g (its name, target, source and graph line), field still to judge.
RankFinding node_finding(const Graph& g, NodeId x, std::string field) {
  const auto& n = g.node(x);
  RankFinding f;
  f.node = std::string(g.str(n.name));
  f.target = std::string(g.str(n.target));
  f.field = std::move(field);
  f.source = source_of(g, n);
  f.graph_line = n.line;
  return f;
}

/// `f` with every rank's "present" / "absent", by the group each rank is in, in rank order.
RankFinding with_presence(RankFinding f, const std::vector<std::vector<std::int32_t>>& groups,
                          const std::vector<bool>& present_in_group) {
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (const std::int32_t r : groups[g])
      f.values.push_back({r, present_in_group[g] ? "present" : "absent"});
  }
  std::sort(f.values.begin(), f.values.end(),
            [](const RankValue& p, const RankValue& q) { return p.rank < q.rank; });
  return f;
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
    classify_values(values, is_group_slot(key), layout_, f);
    out_.findings.push_back(std::move(f));
  }

  bool is_group_slot(const SlotKey& key) const {
    return group_slot(reps_[0]->graph(), key.first, key.second);
  }

  RankFinding finding_for(NodeId x, std::string field, std::size_t group = 0) const {
    return node_finding(reps_[group]->graph(), x, std::move(field));
  }

  void presence(RankFinding f, const std::vector<bool>& present_in_group) {
    out_.findings.push_back(with_presence(std::move(f), out_.groups, present_in_group));
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

// ---- the same classification over a RankGraphSet --------------------------------------------

namespace {

/// A slot's value on one group's representative, kept by value: representatives other than the
/// first are built, compared and dropped one at a time.
struct OwnedValue {
  bool set = false;
  std::string text;
  bool has_value = false;
  ValueKind kind = ValueKind::None;
  std::int64_t i = 0;
  std::optional<std::int32_t> device;
  bool local = false;
};

OwnedValue own(const NormalizedGraph& ng, const Value* v, std::string text) {
  OwnedValue o;
  o.set = true;
  o.text = std::move(text);
  if (v == nullptr) return o;
  o.has_value = true;
  o.kind = v->kind;
  o.i = v->i;
  o.device = device_index_of(ng.graph(), *v);
  o.local = o.device && ng.is_local(*o.device);
  return o;
}

// rank_value of a SlotValue, on its copy.
PerRank owned_rank_value(const OwnedValue& sv, std::int32_t rank, const RankLayout& layout) {
  PerRank p{rank, sv.text, std::nullopt, std::nullopt};
  if (!sv.has_value) return p;
  if (sv.device) {
    p.device = sv.local ? layout.local_device(rank) : *sv.device;
    p.text = sv.kind == ValueKind::String ? "'cuda:" + std::to_string(*p.device) + "'"
                                          : "device(type='cuda', index=" + std::to_string(*p.device) + ")";
  } else if (sv.kind == ValueKind::Int) {
    p.integer = sv.i;
  }
  return p;
}

/// Some nodes of a member's graph (patched nodes as they are, shared nodes from the base with
/// the device remapped) and a name-only stub for every node they refer to: what diff_nodes and
/// value_text need of a representative, without building the whole graph.
class Excerpt {
 public:
  explicit Excerpt(const RankGraphSet::Member& m) : m_(m), base_(m.base->graph) {
    g_.name = g_.intern(base_.str(base_.name));
  }

  /// Node `at` of the member's graph, whole; its id here.
  NodeId whole(NodeId at) {
    const NodeId here = id(at);
    if (whole_[here]) return here;
    const auto stub_of = [this](NodeId r) { return id(r); };
    const std::size_t k = patch_index(at);
    model::Node n = k < m_.patched.size()
                        ? copy_node(m_.patches, m_.patches.nodes[k], g_, std::nullopt, std::nullopt, stub_of)
                        : copy_node(base_, base_.nodes[at], g_, m_.base->local, m_.local, stub_of);
    g_.nodes[here] = std::move(n);
    whole_[here] = true;
    return here;
  }
  [[nodiscard]] NodeId here(NodeId at) const { return ids_.at(at); }
  [[nodiscard]] NodeId position(NodeId here) const { return at_[here]; }
  [[nodiscard]] const Graph& graph() const noexcept { return g_; }

 private:
  /// The index of `at` in the member's patched positions, or patched.size().
  std::size_t patch_index(NodeId at) const {
    const auto it = std::lower_bound(m_.patched.begin(), m_.patched.end(), at);
    return it != m_.patched.end() && *it == at ? static_cast<std::size_t>(it - m_.patched.begin())
                                               : m_.patched.size();
  }
  /// A stub (the name only: every position keeps the base's name) unless already here.
  NodeId id(NodeId at) {
    const auto [it, fresh] = ids_.emplace(at, static_cast<NodeId>(g_.nodes.size()));
    if (fresh) {
      model::Node stub;
      stub.name = g_.intern(base_.node_name(at));
      g_.nodes.push_back(std::move(stub));
      at_.push_back(at);
      whole_.push_back(false);
    }
    return it->second;
  }

  const RankGraphSet::Member& m_;
  const Graph& base_;
  Graph g_;
  std::unordered_map<NodeId, NodeId> ids_;
  std::vector<NodeId> at_;
  std::vector<bool> whole_;
};

/// Distinct references of a node, first use first (as UseEdges lists inputs).
std::vector<NodeId> inputs_of(const model::Node& n, std::size_t graph_size) {
  std::vector<NodeId> out;
  const auto add = [&](NodeId r) {
    if (r < graph_size && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  };
  for (const auto& a : n.args) model::for_each_ref(a, add);
  for (const auto& k : n.kwargs) model::for_each_ref(k.value, add);
  return out;
}

/// classify_ranks' Classifier over a RankGraphSet: the first group's representative whole, every
/// other group's compared as its patches (align_patched) when it is a delta of that graph, else
/// rebuilt, compared and dropped. Slot values are kept by value (OwnedValue).
class SetClassifier {
 public:
  SetClassifier(const RankGraphSet& set, const RankLayout& layout)
      : set_(set), norm_(set.normalization()), layout_(layout) {}

  GraphClassification run() {
    members_ = set_.members();
    group();
    const auto& m0 = *members_[rep_[0]];
    if (m0.is_base) {
      a_ = &m0.base->graph;
    } else {
      own_a_ = set_.materialize(m0);
      a_ = &own_a_;
    }
    na_ = std::make_unique<NormalizedGraph>(*a_, norm_, layout_.local_device(m0.rank));
    fast_ = m0.is_base && !norm_.renumber_symbols && m0.base->refs_backward && m0.base->distinct_names &&
            set_.ranks_per_node() == layout_.ranks_per_node;
    if (fast_) edges_ = std::make_unique<model::UseEdges>(*a_);
    absent_.resize(out_.groups.size());
    extra_.resize(out_.groups.size());
    for (std::size_t g = 1; g < out_.groups.size(); ++g) compare_group(g);
    device_slots();
    for (const auto& key : slots_key_order_) classify_slot(key, slots_.at(key));
    node_findings();
    for (const auto& f : out_.findings) out_.verdict = std::max(out_.verdict, verdict_of(f.cls));
    return std::move(out_);
  }

 private:
  using SlotKey = std::pair<NodeId, std::string>;
  struct OwnedSlot {
    std::vector<OwnedValue> per_group;
  };

  void group() {
    std::unordered_map<std::uint64_t, std::size_t> by_fp;
    for (std::size_t i = 0; i < members_.size(); ++i) {
      const std::uint64_t fp = members_[i]->fingerprint;
      const auto [it, fresh] = by_fp.emplace(fp, out_.groups.size());
      if (fresh) {
        out_.groups.emplace_back();
        out_.fingerprints.push_back(fp);
        rep_.push_back(i);
      }
      out_.groups[it->second].push_back(members_[i]->rank);
    }
  }

  OwnedSlot& slot(NodeId x, const std::string& path) {
    const SlotKey key{x, path};
    auto it = slots_.find(key);
    if (it == slots_.end()) {
      it = slots_.emplace(key, OwnedSlot{std::vector<OwnedValue>(out_.groups.size())}).first;
      slots_key_order_.push_back(key);
    }
    return it->second;
  }

  void note_diffs(std::size_t g, NodeId x, const NormalizedGraph& b, std::vector<FieldDiff> diffs) {
    for (auto& fd : diffs) {
      auto& s = slot(x, fd.path);
      if (!s.per_group[0].set) s.per_group[0] = own(*na_, fd.a_value, fd.a_text);
      s.per_group[g] = own(b, fd.b_value, std::move(fd.b_text));
    }
  }

  bool patches_align(const RankGraphSet::Member& m) const {
    for (std::size_t k = 0; k < m.patched.size(); ++k) {
      const NodeId at = m.patched[k];
      const auto& n = m.patches.nodes[k];
      if (m.patches.str(n.name) != a_->node_name(at)) return false;
      bool backward = true;
      const auto check = [&](NodeId r) { backward = backward && r < at; };
      for (const auto& v : n.args) model::for_each_ref(v, check);
      for (const auto& kw : n.kwargs) model::for_each_ref(kw.value, check);
      if (!backward) return false;
    }
    return true;
  }

  void compare_group(std::size_t g) {
    const auto& m = *members_[rep_[g]];
    if (fast_ && !m.is_base && m.base == members_[rep_[0]]->base && patches_align(m)) {
      compare_patched(g, m);
    } else {
      compare_whole(g, m);
    }
  }

  // The representative rebuilt: classify_ranks' compare_group, values kept by value.
  void compare_whole(std::size_t g, const RankGraphSet::Member& m) {
    Graph built;
    if (!m.is_base) built = set_.materialize(m);
    const Graph& bg = m.is_base ? m.base->graph : built;
    const NormalizedGraph b(bg, norm_, layout_.local_device(m.rank));
    const auto al = align_graphs(*na_, b);
    const auto refs_equal = [&](NodeId x, NodeId y) { return x < al.a_to_b.size() && al.a_to_b[x] == y; };
    for (std::size_t i = 0; i < a_->nodes.size(); ++i) {
      const auto x = static_cast<NodeId>(i);
      const NodeId y = al.a_to_b[x];
      if (y == kNoNode) {
        absent_[g].push_back(x);
        continue;
      }
      if (al.moved[x]) moved_[x].push_back(g);
      note_diffs(g, x, b, diff_nodes(*na_, x, b, y, refs_equal));
    }
    for (std::size_t j = 0; j < al.b_to_a.size(); ++j) {
      if (al.b_to_a[j] == kNoNode) extra_[g].push_back(node_finding(bg, static_cast<NodeId>(j), "node"));
    }
  }

  // The representative as its patches: only patched nodes and the users of nodes that leave
  // their position are compared; every other node equals the first representative's.
  void compare_patched(std::size_t g, const RankGraphSet::Member& m) {
    const std::size_t n = a_->nodes.size();
    Excerpt ex(m);
    std::vector<NodeId> here;
    for (const NodeId at : m.patched) here.push_back(ex.whole(at));
    std::vector<PatchedNode> patched;
    {
      const NormalizedGraph first(ex.graph(), norm_, layout_.local_device(m.rank));
      for (std::size_t k = 0; k < m.patched.size(); ++k) {
        patched.push_back({m.patched[k], first.content_hash(here[k]), first.op_hash(here[k]),
                           inputs_of(m.patches.nodes[k], n)});
      }
    }
    const auto al = align_patched(*na_, *edges_, patched);
    std::vector<NodeId> compared;
    for (const auto& [x, y] : al.changed) {
      if (y == kNoNode) absent_[g].push_back(x);
      for (const NodeId u : edges_->users(x)) {
        if (al.a_to_b(u) != kNoNode) compared.push_back(u);
      }
    }
    for (const NodeId at : m.patched) {
      if (al.a_to_b(at) != kNoNode) compared.push_back(at);
    }
    std::sort(compared.begin(), compared.end());
    compared.erase(std::unique(compared.begin(), compared.end()), compared.end());
    for (const NodeId x : compared) ex.whole(al.a_to_b(x));
    const NormalizedGraph b(ex.graph(), norm_, layout_.local_device(m.rank));
    const auto refs_equal = [&](NodeId x, NodeId y) { return x < n && al.a_to_b(x) == ex.position(y); };
    for (const NodeId x : al.moved) moved_[x].push_back(g);
    for (const NodeId x : compared)
      note_diffs(g, x, b, diff_nodes(*na_, x, b, ex.here(al.a_to_b(x)), refs_equal));
    for (const NodeId j : al.b_unmatched) extra_[g].push_back(node_finding(ex.graph(), ex.here(j), "node"));
  }

  void device_slots() {
    const auto& g = *a_;
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      const auto x = static_cast<NodeId>(i);
      auto note = [&](const std::string& path, const Value& v) {
        if (!na_->is_local(*device_index_of(g, v))) return;
        auto& s = slot(x, path);
        if (!s.per_group[0].set) s.per_group[0] = own(*na_, &v, value_text(g, v));
      };
      const auto& n = g.nodes[i];
      for (std::size_t k = 0; k < n.args.size(); ++k)
        device_leaves(g, n.args[k], "args[" + std::to_string(k) + "]", note);
      for (const auto& kw : n.kwargs)
        device_leaves(g, kw.value, "kwargs." + std::string(g.str(kw.name)), note);
    }
  }

  bool matched_in(std::size_t group, NodeId x) const {
    return group == 0 || !std::binary_search(absent_[group].begin(), absent_[group].end(), x);
  }

  void classify_slot(const SlotKey& key, const OwnedSlot& s) {
    std::vector<PerRank> values;
    for (std::size_t g = 0; g < out_.groups.size(); ++g) {
      if (!matched_in(g, key.first)) continue;  // the node-level finding covers it
      const OwnedValue& sv = s.per_group[g].set ? s.per_group[g] : s.per_group[0];
      for (const std::int32_t r : out_.groups[g]) values.push_back(owned_rank_value(sv, r, layout_));
    }
    std::sort(values.begin(), values.end(),
              [](const PerRank& p, const PerRank& q) { return p.rank < q.rank; });
    if (std::all_of(values.begin(), values.end(), [&](const PerRank& p) { return p.text == values[0].text; }))
      return;
    RankFinding f = node_finding(*a_, key.first, key.second);
    classify_values(values, group_slot(*a_, key.first, key.second), layout_, f);
    out_.findings.push_back(std::move(f));
  }

  void presence(RankFinding f, const std::vector<bool>& present_in_group) {
    out_.findings.push_back(with_presence(std::move(f), out_.groups, present_in_group));
  }

  void node_findings() {
    // Only nodes absent from or moved in some group can have a finding; in graph order.
    std::vector<NodeId> xs;
    for (const auto& a : absent_) xs.insert(xs.end(), a.begin(), a.end());
    for (const auto& entry : moved_) xs.push_back(entry.first);
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    const std::size_t groups = out_.groups.size();
    for (const NodeId x : xs) {
      std::vector<bool> present(groups);
      bool all = true;
      for (std::size_t g = 0; g < groups; ++g) {
        present[g] = matched_in(g, x);
        all = all && present[g];
      }
      if (!all) presence(node_finding(*a_, x, "node"), present);
      if (const auto it = moved_.find(x); it != moved_.end()) {
        RankFinding f = node_finding(*a_, x, "order");
        for (std::size_t g = 0; g < groups; ++g) {
          const bool moved = std::find(it->second.begin(), it->second.end(), g) != it->second.end();
          for (const std::int32_t r : out_.groups[g]) f.values.push_back({r, moved ? "moved" : "in order"});
        }
        std::sort(f.values.begin(), f.values.end(),
                  [](const RankValue& p, const RankValue& q) { return p.rank < q.rank; });
        out_.findings.push_back(std::move(f));
      }
    }
    for (std::size_t g = 1; g < groups; ++g) {
      for (auto& f : extra_[g]) {
        std::vector<bool> present(groups, false);
        present[g] = true;
        presence(std::move(f), present);
      }
    }
  }

  const RankGraphSet& set_;
  const GraphNormalization& norm_;
  const RankLayout& layout_;
  std::vector<const RankGraphSet::Member*> members_;
  GraphClassification out_;
  std::vector<std::size_t> rep_;  // index into members_ per group
  const Graph* a_ = nullptr;      // the first group's representative
  Graph own_a_;                   // ... when it had to be rebuilt
  std::unique_ptr<NormalizedGraph> na_;
  std::unique_ptr<model::UseEdges> edges_;
  bool fast_ = false;
  std::vector<std::vector<NodeId>> absent_;      // per group: first-representative nodes it lacks
  std::vector<std::vector<RankFinding>> extra_;  // per group: its nodes the first one lacks
  std::map<SlotKey, OwnedSlot> slots_;
  std::vector<SlotKey> slots_key_order_;
  std::map<NodeId, std::vector<std::size_t>> moved_;
};

}  // namespace

GraphClassification classify_rank_set(const RankGraphSet& set, const RankLayout& layout) {
  if (set.members().empty()) return {};
  return SetClassifier(set, layout).run();
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

namespace {

RankLayout resolve_layout_with(const model::MultiRankTrace& trace, RankLayout layout,
                               std::vector<std::string>& problems, const std::vector<MeshSpec>* read_specs) {
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
  const auto specs = read_specs != nullptr ? *read_specs : mesh_specs_in_trace(trace);
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

/// classify_trace's report around the graphs `classify(layout)` gives (compile, kind,
/// occurrence, ranks and classification filled, in key order).
template <typename Classify>
TraceRanksReport classify_trace_with(const model::MultiRankTrace& trace, const GraphNormalization& norm,
                                     const RankLayout& given, const std::vector<MeshSpec>* specs,
                                     Classify&& classify) {
  TraceRanksReport report;
  report.normalizations = normalization_names(norm);
  report.layout = resolve_layout_with(trace, given, report.problems, specs);
  const RankLayout& layout = report.layout;
  if (!layout.mesh.empty()) {
    std::string shape;
    for (std::size_t d = 0; d < layout.mesh.size(); ++d)
      shape += (d ? "x" : "") + std::to_string(layout.mesh[d]);
    std::string names;
    for (std::size_t d = 0; d < layout.mesh.size(); ++d) names += (d ? ", " : "") + layout.dim_name(d);
    report.mesh = shape + " (" + names + ") from " + layout.mesh_source;
  }
  for (const auto& rt : trace.ranks) {
    report.ranks.push_back(rt.rank);
    for (const auto& p : rt.problems) report.problems.push_back(p.text());
  }
  auto facts = trace_facts(trace);
  report.findings = std::move(facts.findings);
  report.fact_groups = std::move(facts.groups);
  for (auto& p : facts.problems) report.problems.push_back(std::move(p));
  for (TraceGraphReport& g : classify(layout)) {
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

}  // namespace

RankLayout resolve_layout(const model::MultiRankTrace& trace, RankLayout layout,
                          std::vector<std::string>& problems) {
  return resolve_layout_with(trace, std::move(layout), problems, nullptr);
}

TraceRanksReport classify_trace(const model::MultiRankTrace& trace, const GraphNormalization& norm,
                                const RankLayout& given, bool graphs) {
  return classify_trace_with(trace, norm, given, nullptr, [&](const RankLayout& layout) {
    std::vector<TraceGraphReport> out;
    if (!graphs) return out;
    using Key = std::tuple<model::CompileId, std::string, std::int32_t>;
    std::map<Key, std::vector<RankGraph>> by_key;
    for (const auto& rt : trace.ranks) {
      std::map<std::pair<model::CompileId, std::string>, std::int32_t> seen;
      for (const auto& tg : rt.graphs) {
        const std::int32_t occ = seen[{tg.compile, tg.kind}]++;
        by_key[{tg.compile, tg.kind, occ}].push_back({rt.rank, &tg.graph});
      }
    }
    for (const auto& [key, rank_graphs] : by_key) {
      TraceGraphReport g;
      g.compile = std::get<0>(key);
      g.kind = std::get<1>(key);
      g.occurrence = std::get<2>(key);
      for (const auto& rg : rank_graphs) g.ranks.push_back(rg.rank);
      g.classification = classify_ranks(rank_graphs, norm, layout);
      out.push_back(std::move(g));
    }
    return out;
  });
}

TraceRanksReport classify_trace(const RanksInput& input, const RankLayout& given) {
  return classify_trace_with(input.trace, input.norm, given, &input.mesh_specs,
                             [&](const RankLayout& layout) {
                               std::vector<TraceGraphReport> out;
                               for (const auto& ts : input.graphs) {
                                 TraceGraphReport g;
                                 g.compile = ts.compile;
                                 g.kind = ts.kind;
                                 g.occurrence = ts.occurrence;
                                 for (const auto* m : ts.set->members()) g.ranks.push_back(m->rank);
                                 g.classification = classify_rank_set(*ts.set, layout);
                                 out.push_back(std::move(g));
                               }
                               return out;
                             });
}

namespace {

/// The logs read_torch_trace_dir reads: a directory's files that look like TORCH_TRACE logs (by
/// content), or the one file, sorted by name.
std::vector<std::string> trace_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  if (model::path_kind(path) == model::PathKind::Directory) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (model::path_kind(e.path()) != model::PathKind::Regular) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::string head(4096, '\0');
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<std::size_t>(in.gcount()));
      if (model::looks_like_torch_trace(head)) files.push_back(e.path().string());
    }
    if (ec) throw model::InputError(path, "cannot list the directory: " + ec.message());
    if (files.empty()) throw model::InputError(path, "no TORCH_TRACE log in the directory");
  } else {
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

RanksInput read_ranks_input(const std::string& path, const GraphNormalization& norm,
                            std::int32_t ranks_per_node, unsigned threads) {
  RanksInput in;
  in.norm = norm;
  model::TraceOptions options;
  options.parse_graphs = false;  // graphs go into the sets one at a time, below
  // As read_torch_trace_dir reads, but a log's pages go as soon as it is read, before the next
  // logs are: memory holds the logs in flight, not all of them.
  const auto files = trace_files(path);
  in.trace.path = path;
  in.trace.ranks.resize(files.size());
  using Key = std::tuple<model::CompileId, std::string, std::int32_t>;
  std::map<Key, std::unique_ptr<RankGraphSet>> sets;
  std::mutex sets_mutex;
  const auto set_for = [&](const Key& key) {
    std::lock_guard lock(sets_mutex);
    auto& s = sets[key];
    if (!s) s = std::make_unique<RankGraphSet>(norm, ranks_per_node);
    return s.get();
  };
  std::vector<std::vector<MeshSpec>> specs(in.trace.ranks.size());
  std::vector<std::exception_ptr> errors(in.trace.ranks.size());
  // As read_torch_trace parses graphs, but each graph goes into its set and is dropped.
  const auto read_graphs = [&](std::size_t i) {
    auto& rt = in.trace.ranks[i];
    rt = model::read_torch_trace(files[i], options);
    std::map<std::pair<model::CompileId, std::string>, std::int32_t> seen;
    for (std::size_t ri = 0; ri < rt.records.size(); ++ri) {
      const auto& r = rt.records[ri];
      if (r.payload_lines == 0 || !model::is_graph_record_name(r.kind, r.name)) continue;
      const std::string text = rt.payload(r);
      if (!model::looks_like_fx_text(text) && (r.kind == "artifact" || r.kind == "graph_dump")) continue;
      model::FxParse p = model::read_fx_text(text, rt.path, r.line + 1);
      for (auto& pr : p.problems)
        rt.problems.push_back({rt.path, pr.line, r.name + " payload: " + pr.problem});
      if (!p.graph) {
        rt.unparsed.push_back(ri);
        continue;
      }
      const std::int32_t occ = seen[{r.compile, r.name}]++;
      set_for({r.compile, r.name, occ})->add(rt.rank, *p.graph);
    }
    std::stable_sort(
        rt.problems.begin(), rt.problems.end(),
        [](const model::TraceProblem& a, const model::TraceProblem& b) { return a.line < b.line; });
    specs[i] = mesh_specs_in_rank(rt);
    // read_torch_trace maps each log read-only and private (MappedFile): the pages read so far
    // may go, and what is read later (records' small payloads) comes back from the file.
    if (!rt.text.empty()) ::madvise(const_cast<char*>(rt.text.data()), rt.text.size(), MADV_DONTNEED);
  };
  const auto guarded = [&](std::size_t i) {
    try {
      read_graphs(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  // The first log alone: its graphs become the bases the other ranks are stored against.
  if (!in.trace.ranks.empty()) guarded(0);
  std::atomic<std::size_t> next{1};
  const auto worker = [&] {
    for (std::size_t i = next++; i < in.trace.ranks.size(); i = next++) guarded(i);
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  // By rank, as read_torch_trace_dir sorts them; a rank in two logs is refused as it refuses it.
  std::vector<std::size_t> order(in.trace.ranks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return in.trace.ranks[a].rank < in.trace.ranks[b].rank;
  });
  std::vector<model::TorchTraceRank> ranks;
  std::vector<std::vector<MeshSpec>> sorted_specs;
  for (const std::size_t i : order) {
    ranks.push_back(std::move(in.trace.ranks[i]));
    sorted_specs.push_back(std::move(specs[i]));
  }
  in.trace.ranks = std::move(ranks);
  for (std::size_t i = 1; i < in.trace.ranks.size(); ++i) {
    const auto& a = in.trace.ranks[i - 1];
    const auto& b = in.trace.ranks[i];
    if (b.rank >= 0 && b.rank == a.rank) {
      throw model::InputError(path, "rank " + std::to_string(b.rank) + " is in two logs: " + a.path +
                                        " and " + b.path +
                                        " (a restarted job writes a second log: keep the one to read)");
    }
  }
  in.mesh_specs = merge_mesh_specs(sorted_specs);
  for (auto& [key, set] : sets) {
    TraceGraphSet ts;
    ts.compile = std::get<0>(key);
    ts.kind = std::get<1>(key);
    ts.occurrence = std::get<2>(key);
    ts.set = std::move(set);
    in.graphs.push_back(std::move(ts));
  }
  return in;
}

}  // namespace gparity::diff
