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
#include <utility>
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

/// A node of B that differs from A's node at the same position (align_patched).
struct PatchedNode {
  model::NodeId at = 0;
  std::uint64_t content = 0;          // NormalizedGraph::content_hash of B's node
  std::uint64_t op = 0;               // NormalizedGraph::op_hash of B's node
  std::vector<model::NodeId> inputs;  // distinct node references, first use first (UseEdges)
};

/// The alignment of A with B when B is A with the nodes at `patched` positions replaced (ranks'
/// graphs: the same graph up to a few parameters). Every other node of B is A's node at that
/// position: same name, content hash and inputs. align_graphs(a, b) gives the same pairs and
/// moves; this costs the patched nodes, not the graph (plus n·log n when a pair leaves its
/// position). Preconditions, checked by the caller: A's node names are distinct and every node
/// of A refers only to earlier nodes; each patched node keeps A's name at its position and refers
/// only to earlier nodes; `patched` is sorted by position.
struct PatchedAlignment {
  /// A's nodes not matched with the same position of B, by position: (x, y), y kNoNode when
  /// x is removed.
  std::vector<std::pair<model::NodeId, model::NodeId>> changed;
  std::vector<model::NodeId> b_unmatched;  // B's nodes that are added, ascending
  std::vector<model::NodeId> moved;        // A's nodes matched out of order, ascending
  /// B's node matched with A's node x (kNoNode: removed).
  [[nodiscard]] model::NodeId a_to_b(model::NodeId x) const;
};

PatchedAlignment align_patched(const NormalizedGraph& a, const model::UseEdges& a_edges,
                               const std::vector<PatchedNode>& patched);

}  // namespace gparity::diff
