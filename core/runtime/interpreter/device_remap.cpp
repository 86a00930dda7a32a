#include "core/runtime/interpreter/device_remap.hpp"

#include <string>

namespace gparity::runtime {
namespace {

bool is_remapped_type(std::string_view t) {
  return t == "cuda" || t == "cpu";
}

void remap_value(model::Graph& g, model::Value& v, model::StrId type, std::int32_t index,
                 const std::string& text) {
  if (v.kind == model::ValueKind::Device && is_remapped_type(g.str(v.device.type))) {
    v.device.type = type;
    v.device.index = index;
  } else if (v.kind == model::ValueKind::String) {
    const auto s = g.str(v.s);
    if (s == "cpu" || s == "cuda" || s.starts_with("cuda:")) v.s = g.intern(text);
  }
  for (auto& item : v.items) remap_value(g, item, type, index, text);
}

}  // namespace

model::Graph remap_devices(const model::Graph& in, std::string_view type_name, std::int32_t index) {
  model::Graph g = in;
  const auto type = g.intern(type_name);
  const std::string text = std::string(type_name) + (index >= 0 ? ":" + std::to_string(index) : "");
  for (auto& n : g.nodes) {
    for (auto& a : n.args) remap_value(g, a, type, index, text);
    for (auto& kw : n.kwargs) remap_value(g, kw.value, type, index, text);
    if (n.meta.device.type != model::kEmptyStr && is_remapped_type(g.str(n.meta.device.type))) {
      n.meta.device.type = type;
      n.meta.device.index = index;
    }
  }
  for (auto& sub : g.subgraphs) sub = remap_devices(sub, type_name, index);
  return g;
}

model::Graph hoist_for_replay(const model::Graph& g, std::string_view device) {
  const auto colon = device.find(':');
  if (colon == std::string_view::npos) return remap_devices(g, device, -1);
  return remap_devices(g, device.substr(0, colon), std::stoi(std::string(device.substr(colon + 1))));
}

}  // namespace gparity::runtime
