#pragma once
// N-way classification of one graph across ranks (`gparity graph ranks`): ranks whose
// normalized graphs have the same fingerprint form a group; one representative per group is
// aligned against the first group's; every field that differs across ranks, and every device
// literal that equals the rank's local device, is classified as
//   device-parametric: a device index equal to the local device on every rank (hoistable);
//   rank-parametric:   integers that are a·x+b on every rank, x = rank, local rank or a mesh
//                      coordinate (the value must become an input);
//   process-group-parametric: a functional collective's group name that differs between ranks
//                      where each name's ranks are one slice of the same mesh dimension (the
//                      tp group of each dp row): compile-on-one-rank must resolve the group
//                      through the DeviceMesh instead of baking the name;
//   divergent:         anything else (other targets, node counts, order, shapes, dtypes).
// The verdict is the worst class found. Value types only; reporters live elsewhere.
// The pieces, each with its header: rank_findings.hpp (classes, findings, verdict),
// rank_layout.hpp (ranks over nodes and the mesh; affine fits), rank_classification.hpp (the
// one builder both classifiers below finish through), trace_ranks.hpp (a whole multi-rank
// TORCH_TRACE), ranks_input.hpp (that trace read for scale). This header includes them all.

#include <cstdint>
#include <span>

#include "core/model/graph/graph.hpp"
#include "diff/graphs/graph_normalize.hpp"
#include "diff/graphs/rank_findings.hpp"
#include "diff/graphs/rank_graph_set.hpp"
#include "diff/graphs/rank_layout.hpp"
#include "diff/graphs/ranks_input.hpp"
#include "diff/graphs/trace_ranks.hpp"

namespace gparity::diff {

struct RankGraph {
  std::int32_t rank = 0;
  const model::Graph* graph = nullptr;
};

/// Classifies one graph given per rank (ranks in any order; at least one).
GraphClassification classify_ranks(std::span<const RankGraph> graphs, const GraphNormalization& norm,
                                   const RankLayout& layout);

/// classify_ranks over every rank's version held in a RankGraphSet (one graph plus what differs):
/// the same groups, fingerprints, findings (in the same order) and verdict, in time and memory
/// that grow with what differs between ranks rather than ranks x size. `layout.ranks_per_node`
/// should be the set's (else every group is rebuilt whole: the same answer, slower).
GraphClassification classify_rank_set(const RankGraphSet& set, const RankLayout& layout);

}  // namespace gparity::diff
