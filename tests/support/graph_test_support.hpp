#pragma once
// Small FX graphs written in the tests: a print_readable() module around body lines, with
// "{d}" replaced by a device index, so one template yields a graph per rank.

#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/fx_text.hpp"

namespace gparity::testing {

inline std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

/// The module text around `body`: the node lines (8-space indented here) ending in a return.
inline std::string fx_module_text(std::string_view body, int device = 0) {
  std::string text =
      "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[8, 64][64, 1]cuda:{d}\", "
      "w: \"f32[64, 64][64, 1]cuda:{d}\"):\n";
  std::size_t p = 0;
  while (p < body.size()) {
    auto e = body.find('\n', p);
    if (e == std::string_view::npos) e = body.size();
    text += "        " + std::string(body.substr(p, e - p)) + "\n";
    p = e + 1;
  }
  return replace_all(text, "{d}", std::to_string(device));
}

/// fx_module_text parsed.
inline model::Graph fx_graph(std::string_view body, int device = 0) {
  return model::parse_fx_text(fx_module_text(body, device), "test.py");
}

/// A small FX body with one rank's plants: the slice bounds {lo}..{hi} (rank-derived offsets),
/// the constant {c} and the device literal's index {dev} (the graph's own device is {d}, set by
/// fx_graph). The graph-ranks tests build each rank's version from it with planted_body().
inline const std::string kPlantedRankBody =
    R"(mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
slice_1: "f32[8, 16][64, 1]cuda:{d}" = torch.ops.aten.slice.Tensor(mm, 1, {lo}, {hi})
full: "f32[8, 16][16, 1]cuda:{d}" = torch.ops.aten.full.default([8, 16], {c}, dtype = torch.float32, device = device(type='cuda', index={dev}))
add: "f32[8, 16][16, 1]cuda:{d}" = torch.ops.aten.add.Tensor(slice_1, full)
sin: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.sin.default(x)
cos: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.cos.default(w)
return (add, sin, cos))";

/// `body` (kPlantedRankBody or a variant of it) with its plants filled in.
inline std::string planted_body(const std::string& body, int lo, int hi, int c, int dev) {
  std::string b = replace_all(body, "{lo}", std::to_string(lo));
  b = replace_all(b, "{hi}", std::to_string(hi));
  b = replace_all(b, "{c}", std::to_string(c));
  return replace_all(b, "{dev}", std::to_string(dev));
}

/// Two ranks of tp group '3': x, w -> mm -> all_reduce -> wait_tensor -> mul(wait_tensor, x), the
/// replay tests' graph for a divergence received through a collective; kTpNodes: its nodes in order.
inline const std::string kTpBody =
    R"(mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
all_reduce: "f32[8, 64][64, 1]cuda:{d}" = torch.ops._c10d_functional.all_reduce.default(mm, 'sum', '3')
wait_tensor: "f32[8, 64][64, 1]cuda:{d}" = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
mul: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mul.Tensor(wait_tensor, x)
return (mul,))";
inline const std::vector<std::string> kTpNodes = {"x", "w", "mm", "all_reduce", "wait_tensor", "mul"};

}  // namespace gparity::testing
