#include "diff/graphs/device_check.hpp"

#include "diff/graphs/graph_normalize.hpp"

namespace gparity::diff {

using model::Graph;
using model::Value;
using model::ValueKind;

std::string_view device_finding_kind_name(DeviceFindingKind k) noexcept {
  switch (k) {
    case DeviceFindingKind::Literal: return "literal";
    case DeviceFindingKind::Annotation: return "annotation";
    case DeviceFindingKind::MixedInputs: return "mixed-inputs";
  }
  return "literal";
}

namespace {

std::string device_text(const Graph& g, const model::Device& d) {
  return std::string(g.str(d.type)) + (d.index >= 0 ? ":" + std::to_string(d.index) : "");
}

template <typename F>
void literals(const Graph& g, const Value& v, const std::string& path, F& f) {
  if (v.kind == ValueKind::List || v.kind == ValueKind::Tuple) {
    for (std::size_t i = 0; i < v.items.size(); ++i)
      literals(g, v.items[i], path + "[" + std::to_string(i) + "]", f);
    return;
  }
  if (const auto k = device_index_of(g, v)) f(path, v, *k);
}

void hoist(const Graph& g, const DeviceCheckOptions& o, DeviceReport& r) {
  model::HoistOptions h;
  h.source_rank = *o.rank;
  h.target_rank = *o.target_rank;
  h.source_device = o.ranks_per_node > 0 ? *o.rank % o.ranks_per_node : *o.rank;
  h.target_device = o.ranks_per_node > 0 ? *o.target_rank % o.ranks_per_node : *o.target_rank;
  h.groups = o.groups;
  auto res = model::hoist_graph(g, h);
  r.hoisted = true;
  for (const auto& c : res.changes) {
    if (c.kind != model::HoistChangeKind::ProcessGroup && c.graph.empty())
      r.remaps.push_back({c.node, c.field, h.source_device, h.target_device});
  }
  r.hoist = std::move(res.changes);
  r.unresolved = std::move(res.unresolved);
}

}  // namespace

DeviceReport check_devices(const Graph& g, std::optional<std::int32_t> rank,
                           std::optional<std::int32_t> target_rank) {
  DeviceCheckOptions o;
  o.rank = rank;
  o.target_rank = target_rank;
  return check_devices(g, o);
}

DeviceReport check_devices(const Graph& g, const DeviceCheckOptions& o) {
  DeviceReport r;
  // The local device of the capturing rank; -1 when unknown (no foreign-annotation findings).
  const std::int32_t local = !o.rank ? -1 : o.ranks_per_node > 0 ? *o.rank % o.ranks_per_node : *o.rank;
  for (const auto& n : g.nodes) {
    DeviceFinding base;
    base.node = std::string(g.str(n.name));
    base.target = std::string(g.str(n.target));
    if (n.source.known())
      base.source = std::string(g.str(n.source.file)) + ":" + std::to_string(n.source.line);
    base.graph_line = n.line;
    auto literal = [&](const std::string& path, const Value& v, std::int32_t index) {
      DeviceFinding f = base;
      f.field = path;
      f.text = value_text(g, v);
      f.index = index;
      r.findings.push_back(std::move(f));
      ++r.literals;
    };
    for (std::size_t k = 0; k < n.args.size(); ++k)
      literals(g, n.args[k], "args[" + std::to_string(k) + "]", literal);
    for (const auto& kw : n.kwargs) literals(g, kw.value, "kwargs." + std::string(g.str(kw.name)), literal);
    const auto& d = n.meta.device;
    if (n.meta.kind == model::TensorMeta::Kind::Tensor && g.str(d.type) == "cuda") {
      if (local >= 0 && d.index != local) {
        DeviceFinding f = base;
        f.kind = DeviceFindingKind::Annotation;
        f.field = "meta.device";
        f.text = device_text(g, d);
        f.index = d.index;
        r.findings.push_back(std::move(f));
        ++r.foreign_annotations;
      }
    }
    // Tensor inputs on different devices (cpu scalars included: they are worth seeing).
    std::string first, mixed;
    for (const auto& a : n.args) {
      model::for_each_ref(a, [&](model::NodeId in) {
        if (in >= g.nodes.size()) return;
        const auto& m = g.nodes[in].meta;
        if (m.kind != model::TensorMeta::Kind::Tensor || m.device.type == model::kEmptyStr) return;
        const auto t = device_text(g, m.device);
        if (first.empty()) {
          first = t;
        } else if (t != first && mixed.empty()) {
          mixed = first + " + " + t;
        }
      });
    }
    if (!mixed.empty()) {
      DeviceFinding f = base;
      f.kind = DeviceFindingKind::MixedInputs;
      f.field = "inputs";
      f.text = mixed;
      r.findings.push_back(std::move(f));
      ++r.mixed_inputs;
    }
  }
  if (o.rank && o.target_rank) hoist(g, o, r);
  return r;
}

nlohmann::ordered_json hoist_to_json(const std::vector<model::HoistChange>& changes,
                                     const std::vector<model::HoistProblem>& unresolved) {
  using J = nlohmann::ordered_json;
  J out = J::object();
  J counts = {{"device", 0}, {"annotation", 0}, {"group", 0}};
  J cj = J::array();
  for (const auto& c : changes) {
    const auto kind = model::hoist_change_kind_name(c.kind);
    counts[std::string(kind)] = counts[std::string(kind)].get<std::size_t>() + 1;
    J one{{"kind", kind},     {"node", c.node}, {"target", c.target},
          {"field", c.field}, {"from", c.from}, {"to", c.to}};
    if (!c.graph.empty()) one["subgraph"] = c.graph;
    if (!c.source.empty()) one["source"] = c.source;
    cj.push_back(std::move(one));
  }
  J uj = J::array();
  for (const auto& p : unresolved) {
    J one{{"kind", model::hoist_problem_kind_name(p.kind)},
          {"node", p.node},
          {"target", p.target},
          {"field", p.field},
          {"text", p.text},
          {"message", p.message}};
    if (!p.graph.empty()) one["subgraph"] = p.graph;
    uj.push_back(std::move(one));
  }
  out["counts"] = std::move(counts);
  out["changes"] = std::move(cj);
  out["unresolved"] = std::move(uj);
  return out;
}

}  // namespace gparity::diff
