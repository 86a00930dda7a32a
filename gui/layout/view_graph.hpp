#pragma once
// From a model::Graph to what the canvas lays out: nodes grouped into collapsible groups, and
// the layout input for a given set of collapsed groups. A group is a maximal run of consecutive
// nodes (FX order) sharing a module path, or, when the graph carries none, the same source
// statement (file:line); runs longer than `max_group` are split so no box hides a huge subgraph.
// A collapsed group becomes one box; edges are mapped to boxes, deduplicated, self-loops dropped.
// No Qt: runs on a worker thread and in the benchmark.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "gui/layout/layered_layout.hpp"

namespace gparity::gui {

inline constexpr std::uint32_t kNoGroup = 0xFFFFFFFFu;

struct NodeGroup {
  std::string label;  // "layers.0.attn" or "train_tiny.py:23"
  model::NodeId first = 0;
  std::uint32_t count = 0;
};

struct Grouping {
  std::vector<NodeGroup> groups;
  std::vector<std::uint32_t> group_of;  // per node: its group or kNoGroup
};

Grouping group_nodes(const model::Graph& g, std::uint32_t max_group = 64);

/// One box of the laid-out view: a node, or a collapsed group.
struct ViewItem {
  bool is_group = false;
  std::uint32_t index = 0;  // NodeId, or group index
};

struct ViewGraph {
  std::vector<ViewItem> items;
  std::vector<std::uint32_t> item_of_node;  // per node: the box that shows it
  LayoutInput input;                        // widths per item, edges between items
};

/// Box width for a label of `chars` characters (the canvas font is about 7 units per char).
float label_width(std::size_t chars);

ViewGraph build_view(const model::Graph& g, const model::UseEdges& edges, const Grouping& grouping,
                     const std::vector<char>& collapsed);

}  // namespace gparity::gui
