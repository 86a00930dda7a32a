#include "diff/device_check.hpp"

#include "diff/graph_normalize.hpp"

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

}  // namespace

DeviceReport check_devices(const Graph& g, std::optional<std::int32_t> rank,
                           std::optional<std::int32_t> target_rank) {
  DeviceReport r;
  const auto remap = [&](const std::string& node, const std::string& field, std::int32_t index) {
    if (rank && target_rank && index == *rank && *rank != *target_rank)
      r.remaps.push_back({node, field, index, *target_rank});
  };
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
      remap(base.node, path, index);
    };
    for (std::size_t k = 0; k < n.args.size(); ++k)
      literals(g, n.args[k], "args[" + std::to_string(k) + "]", literal);
    for (const auto& kw : n.kwargs) literals(g, kw.value, "kwargs." + std::string(g.str(kw.name)), literal);
    const auto& d = n.meta.device;
    if (n.meta.kind == model::TensorMeta::Kind::Tensor && g.str(d.type) == "cuda") {
      if (rank && d.index != *rank) {
        DeviceFinding f = base;
        f.kind = DeviceFindingKind::Annotation;
        f.field = "meta.device";
        f.text = device_text(g, d);
        f.index = d.index;
        r.findings.push_back(std::move(f));
        ++r.foreign_annotations;
      }
      remap(base.node, "meta.device", d.index);
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
  return r;
}

}  // namespace gparity::diff
