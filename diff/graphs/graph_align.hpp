#pragma once
// Node-by-node alignment of two graphs (graph-diff issue), linear or n·log n in practice:
//  1. names: nodes with the same name and the same content (under the normalization);
//  2. structure: a node whose content hash and aligned inputs equal a node of the other graph
//     (propagated in topological order, so a renamed graph aligns completely);
//  3. names again, for same-name same-op nodes whose content changed;
//  4. sequence: patience diff over topological order of what is left, on content hashes, and
//     in the gaps between anchors, same-op pairing (LCS when the gap is small, greedy otherwise).
//  5. names once more, for what is left: the same node with another operator.
// Pairs whose order disagrees with the longest increasing run of matched positions are moved.

#include <cstdint>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "diff/graphs/graph_normalize.hpp"

namespace gparity::diff {

enum class MatchHow : std::uint8_t { None, Name, Structure, Sequence };

struct Alignment {
  std::vector<model::NodeId> a_to_b;  // kNoNode: removed
  std::vector<model::NodeId> b_to_a;  // kNoNode: added
  std::vector<MatchHow> how;          // per node of A
  std::vector<bool> moved;            // per node of A: matched, but out of order
  [[nodiscard]] std::size_t matched() const noexcept;
};

Alignment align_graphs(const NormalizedGraph& a, const NormalizedGraph& b);

}  // namespace gparity::diff
