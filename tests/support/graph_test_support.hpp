#pragma once
// Small FX graphs written in the tests: a print_readable() module around body lines, with
// "{d}" replaced by a device index, so one template yields a graph per rank.

#include <string>
#include <string_view>

#include "core/model/graph/fx_text.hpp"

namespace gparity::testing {

inline std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

/// `body`: the node lines (8-space indented by this function) ending in a return.
inline model::Graph fx_graph(std::string_view body, int device = 0) {
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
  return model::parse_fx_text(replace_all(text, "{d}", std::to_string(device)), "test.py");
}

}  // namespace gparity::testing
