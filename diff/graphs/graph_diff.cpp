#include "diff/graphs/graph_diff.hpp"

namespace gparity::diff {

using model::kNoNode;
using model::NodeId;

GraphDiffResult diff_graphs(const NormalizedGraph& a, const NormalizedGraph& b) {
  GraphDiffResult r;
  r.alignment = align_graphs(a, b);
  r.normalizations = normalization_names(a.norm());
  auto& s = r.summary;
  s.nodes_a = a.graph().nodes.size();
  s.nodes_b = b.graph().nodes.size();
  const auto& al = r.alignment;
  const auto refs_equal = [&](NodeId x, NodeId y) { return x < al.a_to_b.size() && al.a_to_b[x] == y; };
  for (std::size_t i = 0; i < s.nodes_a; ++i) {
    const auto x = static_cast<NodeId>(i);
    const NodeId y = al.a_to_b[x];
    if (y == kNoNode) {
      r.changes.push_back({x, kNoNode, false, {}});
      ++s.removed;
      continue;
    }
    switch (al.how[x]) {
      case MatchHow::Name: ++s.by_name; break;
      case MatchHow::Structure: ++s.by_structure; break;
      default: ++s.by_sequence; break;
    }
    NodeChange c{x, y, al.moved[x], diff_nodes(a, x, b, y, refs_equal)};
    if (c.moved) ++s.moved;
    if (!c.fields.empty()) ++s.changed;
    if (!c.moved && c.fields.empty()) {
      ++s.unchanged;
    } else {
      r.changes.push_back(std::move(c));
    }
  }
  for (std::size_t j = 0; j < s.nodes_b; ++j) {
    if (al.b_to_a[j] == kNoNode) {
      r.changes.push_back({kNoNode, static_cast<NodeId>(j), false, {}});
      ++s.added;
    }
  }
  return r;
}

}  // namespace gparity::diff
