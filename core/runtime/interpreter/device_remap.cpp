#include "core/runtime/interpreter/device_remap.hpp"

#include <charconv>
#include <string_view>

namespace gparity::runtime {
namespace {

bool is_accelerator_type(std::string_view t) {
  return t == "cuda" || t == "xpu" || t == "hpu" || t == "npu" || t == "mtia" || t == "mps" ||
         t == "privateuseone";
}

bool is_accelerator_text(std::string_view s) {
  return is_accelerator_type(s.substr(0, s.find(':')));
}

void to_cpu(model::Graph& g, model::Value& v, model::StrId cpu) {
  if (v.kind == model::ValueKind::Device && is_accelerator_type(g.str(v.device.type))) {
    v.device = {cpu, -1};
  } else if (v.kind == model::ValueKind::String && is_accelerator_text(g.str(v.s))) {
    v.s = cpu;
  }
  for (auto& item : v.items) to_cpu(g, item, cpu);
}

/// The accelerator index the graph's annotations name (the capture device); -1 when none.
std::int32_t capture_device(const model::Graph& g) {
  for (const auto& n : g.nodes) {
    const auto& d = n.meta.device;
    if (d.type != model::kEmptyStr && d.index >= 0 && is_accelerator_type(g.str(d.type))) return d.index;
  }
  for (const auto& sub : g.subgraphs) {
    if (const auto k = capture_device(sub); k >= 0) return k;
  }
  return -1;
}

std::int32_t device_index(std::string_view device, std::int32_t otherwise) {
  const auto colon = device.find(':');
  if (colon == std::string_view::npos) return otherwise;
  std::int32_t k = otherwise;
  std::from_chars(device.data() + colon + 1, device.data() + device.size(), k);
  return k;
}

}  // namespace

model::Graph place_on_cpu(const model::Graph& in) {
  model::Graph g = in;
  const auto cpu = g.intern("cpu");
  for (auto& n : g.nodes) {
    for (auto& a : n.args) to_cpu(g, a, cpu);
    for (auto& kw : n.kwargs) to_cpu(g, kw.value, cpu);
    if (n.meta.device.type != model::kEmptyStr && is_accelerator_type(g.str(n.meta.device.type)))
      n.meta.device = {cpu, -1};
  }
  for (auto& sub : g.subgraphs) sub = place_on_cpu(sub);
  return g;
}

model::HoistResult hoist_for_replay(const model::Graph& g, const ReplayPlacement& p) {
  model::HoistOptions o;
  o.source_rank = p.source_rank;
  o.target_rank = p.target_rank;
  const auto captured = capture_device(g);
  o.source_device = captured >= 0 ? captured : p.source_rank;
  o.target_device = device_index(p.device, p.target_rank);
  o.groups = p.groups;
  auto r = model::hoist_graph(g, o);
  if (p.device == "cpu") r.graph = place_on_cpu(r.graph);
  return r;
}

}  // namespace gparity::runtime
