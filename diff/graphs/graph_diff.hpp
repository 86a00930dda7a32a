#pragma once
// Two-graph diff (`gparity graph diff A B`): the alignment of graph_align.hpp turned into added,
// removed, moved and changed nodes, each changed node with its differing fields, plus summary
// counts. Value type: reporters (text, JSON, HTML) read it; nothing here prints.

#include <cstddef>
#include <string>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "diff/graphs/graph_align.hpp"
#include "diff/graphs/graph_normalize.hpp"

namespace gparity::diff {

struct NodeChange {
  model::NodeId a = model::kNoNode;  // kNoNode: added in B
  model::NodeId b = model::kNoNode;  // kNoNode: removed from A
  bool moved = false;
  std::vector<FieldDiff> fields;  // empty for added/removed or for a pure move
  [[nodiscard]] bool added() const noexcept { return a == model::kNoNode; }
  [[nodiscard]] bool removed() const noexcept { return b == model::kNoNode; }
};

struct GraphDiffSummary {
  std::size_t nodes_a = 0, nodes_b = 0;
  std::size_t unchanged = 0, changed = 0, moved = 0, added = 0, removed = 0;
  std::size_t by_name = 0, by_structure = 0, by_sequence = 0;  // how matches were found
};

struct GraphDiffResult {
  Alignment alignment;
  std::vector<NodeChange> changes;  // A's order for matched and removed nodes, then B's added nodes
  GraphDiffSummary summary;
  std::vector<std::string> normalizations;
  [[nodiscard]] bool identical() const noexcept { return changes.empty(); }
};

/// Diffs the top-level graphs (subgraphs are compared by the fingerprint only: a differing
/// subgraph shows as a changed get_attr user).
GraphDiffResult diff_graphs(const NormalizedGraph& a, const NormalizedGraph& b);

}  // namespace gparity::diff
