#include "diff/graphs/rank_classification.hpp"

#include <algorithm>

#include "diff/graphs/graph_align.hpp"

namespace gparity::diff {

using model::Graph;
using model::kNoNode;
using model::NodeId;
using model::Value;
using model::ValueKind;

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

/// What a slot value is on `rank`: a device literal that is the local device becomes that rank's.
PerRank rank_value(const RankSlotValue& sv, std::int32_t rank, const RankLayout& layout) {
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

std::string source_of(const Graph& g, const model::Node& n) {
  if (!n.source.known()) return "";
  return std::string(g.str(n.source.file)) + ":" + std::to_string(n.source.line);
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
      inferred.push_back(inferred_mesh_text(shape, layout.infer_world));
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
             (inferred[k].empty() ? mesh_shape_text(layouts[k].mesh) : inferred[k]) +
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

}  // namespace

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

void RankClassificationBuilder::add_rank(std::uint64_t fingerprint, std::int32_t rank, std::size_t index) {
  const auto [it, fresh] = groups_by_fingerprint_.emplace(fingerprint, out_.groups.size());
  if (fresh) {
    out_.groups.emplace_back();
    out_.fingerprints.push_back(fingerprint);
    rep_.push_back(index);
  }
  out_.groups[it->second].push_back(rank);
}

void RankClassificationBuilder::set_first(const NormalizedGraph& a) {
  a_ = &a;
  absent_.resize(out_.groups.size());
  extra_.resize(out_.groups.size());
}

RankSlotValue RankClassificationBuilder::own(const NormalizedGraph& ng, const Value* v, std::string text) {
  RankSlotValue o;
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

RankClassificationBuilder::Slot& RankClassificationBuilder::slot(NodeId x, const std::string& path) {
  const SlotKey key{x, path};
  auto it = slots_.find(key);
  if (it == slots_.end()) {
    it = slots_.emplace(key, Slot{std::vector<RankSlotValue>(out_.groups.size())}).first;
    slots_key_order_.push_back(key);
  }
  return it->second;
}

void RankClassificationBuilder::note_diffs(std::size_t g, NodeId x, const NormalizedGraph& b,
                                           std::vector<FieldDiff> diffs) {
  for (auto& fd : diffs) {
    auto& s = slot(x, fd.path);
    if (!s.per_group[0].set) s.per_group[0] = own(*a_, fd.a_value, fd.a_text);
    s.per_group[g] = own(b, fd.b_value, std::move(fd.b_text));
  }
}

void RankClassificationBuilder::compare_whole(std::size_t g, const NormalizedGraph& b) {
  const auto& ga = a_->graph();
  const auto al = align_graphs(*a_, b);
  const auto refs_equal = [&](NodeId x, NodeId y) { return x < al.a_to_b.size() && al.a_to_b[x] == y; };
  for (std::size_t i = 0; i < ga.nodes.size(); ++i) {
    const auto x = static_cast<NodeId>(i);
    const NodeId y = al.a_to_b[x];
    if (y == kNoNode) {
      note_absent(g, x);
      continue;
    }
    if (al.moved[x]) note_moved(g, x);
    note_diffs(g, x, b, diff_nodes(*a_, x, b, y, refs_equal));
  }
  for (std::size_t j = 0; j < al.b_to_a.size(); ++j) {
    if (al.b_to_a[j] == kNoNode) note_extra(g, node_finding(b.graph(), static_cast<NodeId>(j), "node"));
  }
}

void RankClassificationBuilder::device_slots() {
  const auto& g = a_->graph();
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const auto x = static_cast<NodeId>(i);
    auto note = [&](const std::string& path, const Value& v) {
      if (!a_->is_local(*device_index_of(g, v))) return;
      auto& s = slot(x, path);
      if (!s.per_group[0].set) s.per_group[0] = own(*a_, &v, value_text(g, v));
    };
    const auto& n = g.nodes[i];
    for (std::size_t k = 0; k < n.args.size(); ++k)
      device_leaves(g, n.args[k], "args[" + std::to_string(k) + "]", note);
    for (const auto& kw : n.kwargs) device_leaves(g, kw.value, "kwargs." + std::string(g.str(kw.name)), note);
  }
}

bool RankClassificationBuilder::matched_in(std::size_t group, NodeId x) const {
  return group == 0 || !std::binary_search(absent_[group].begin(), absent_[group].end(), x);
}

void RankClassificationBuilder::classify_slot(const SlotKey& key, const Slot& s) {
  std::vector<PerRank> values;
  for (std::size_t g = 0; g < out_.groups.size(); ++g) {
    if (!matched_in(g, key.first)) continue;  // the node-level finding covers it
    const RankSlotValue& sv = s.per_group[g].set ? s.per_group[g] : s.per_group[0];
    for (const std::int32_t r : out_.groups[g]) values.push_back(rank_value(sv, r, layout_));
  }
  std::sort(values.begin(), values.end(), [](const PerRank& p, const PerRank& q) { return p.rank < q.rank; });
  if (std::all_of(values.begin(), values.end(), [&](const PerRank& p) { return p.text == values[0].text; }))
    return;
  const auto& ga = a_->graph();
  RankFinding f = node_finding(ga, key.first, key.second);
  classify_values(values, group_slot(ga, key.first, key.second), layout_, f);
  out_.findings.push_back(std::move(f));
}

void RankClassificationBuilder::presence(RankFinding f, const std::vector<bool>& present_in_group) {
  out_.findings.push_back(with_presence(std::move(f), out_.groups, present_in_group));
}

void RankClassificationBuilder::node_findings() {
  // Only nodes absent from or moved in some group can have a finding; in graph order.
  std::vector<NodeId> xs;
  for (const auto& a : absent_) xs.insert(xs.end(), a.begin(), a.end());
  for (const auto& entry : moved_) xs.push_back(entry.first);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const auto& ga = a_->graph();
  const std::size_t groups = out_.groups.size();
  for (const NodeId x : xs) {
    std::vector<bool> present(groups);
    bool all = true;
    for (std::size_t g = 0; g < groups; ++g) {
      present[g] = matched_in(g, x);
      all = all && present[g];
    }
    if (!all) presence(node_finding(ga, x, "node"), present);
    if (const auto it = moved_.find(x); it != moved_.end()) {
      RankFinding f = node_finding(ga, x, "order");
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

GraphClassification RankClassificationBuilder::finish() {
  device_slots();
  for (const auto& key : slots_key_order_) classify_slot(key, slots_.at(key));
  node_findings();
  for (const auto& f : out_.findings) out_.verdict = std::max(out_.verdict, verdict_of(f.cls));
  return std::move(out_);
}

}  // namespace gparity::diff
