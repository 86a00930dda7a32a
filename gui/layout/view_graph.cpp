#include "gui/layout/view_graph.hpp"

#include <algorithm>
#include <unordered_set>

namespace gparity::gui {
namespace {

std::string group_key(const model::Graph& g, const model::Node& n) {
  if (n.module_path != model::kEmptyStr) return std::string(g.str(n.module_path));
  if (!n.source.known()) return {};
  std::string_view file = g.str(n.source.file);
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file) + ":" + std::to_string(n.source.line);
}

}  // namespace

Grouping group_nodes(const model::Graph& g, std::uint32_t max_group) {
  Grouping out;
  const auto n = static_cast<std::uint32_t>(g.nodes.size());
  out.group_of.assign(n, kNoGroup);
  std::uint32_t start = 0;
  while (start < n) {
    const std::string key = group_key(g, g.nodes[start]);
    std::uint32_t end = start + 1;
    while (end < n && end - start < max_group && !key.empty() && group_key(g, g.nodes[end]) == key) ++end;
    if (!key.empty() && end - start >= 2) {
      const auto id = static_cast<std::uint32_t>(out.groups.size());
      out.groups.push_back({key, start, end - start});
      std::fill(out.group_of.begin() + start, out.group_of.begin() + end, id);
    }
    start = end;
  }
  return out;
}

float label_width(std::size_t chars) {
  return std::clamp(static_cast<float>(chars) * 7.0f + 16.0f, 60.0f, 260.0f);
}

ViewGraph build_view(const model::Graph& g, const model::UseEdges& edges, const Grouping& grouping,
                     const std::vector<char>& collapsed) {
  ViewGraph v;
  const auto n = static_cast<std::uint32_t>(g.nodes.size());
  v.item_of_node.assign(n, 0);
  std::vector<std::uint32_t> item_of_group(grouping.groups.size(), kNoGroup);
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto grp = grouping.group_of[i];
    if (grp != kNoGroup && grp < collapsed.size() && collapsed[grp]) {
      if (item_of_group[grp] == kNoGroup) {
        item_of_group[grp] = static_cast<std::uint32_t>(v.items.size());
        v.items.push_back({true, grp});
        v.input.widths.push_back(label_width(grouping.groups[grp].label.size() + 10));
      }
      v.item_of_node[i] = item_of_group[grp];
      continue;
    }
    v.item_of_node[i] = static_cast<std::uint32_t>(v.items.size());
    v.items.push_back({false, i});
    const auto& node = g.nodes[i];
    v.input.widths.push_back(label_width(std::max(g.str(node.name).size(), g.str(node.target).size())));
  }
  const bool any_collapsed = v.items.size() != n;
  std::unordered_set<std::uint64_t> seen;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (auto u : edges.inputs(i)) {
      const auto from = v.item_of_node[u];
      const auto to = v.item_of_node[i];
      if (from == to) continue;
      // Distinct inputs of distinct nodes give distinct edges unless a box merged them.
      if (!any_collapsed || seen.insert((std::uint64_t{from} << 32) | to).second)
        v.input.edges.push_back({from, to});
    }
  }
  return v;
}

}  // namespace gparity::gui
