#pragma once
// Node divergences across ranks: every rank's node results (node_compare.hpp) read as one
// cross-rank causal order (diff/causality), so that a divergence whose inputs were equal on its
// rank but not on a member of its collective is received, not an origin.

#include <span>
#include <vector>

#include "diff/causality/causality.hpp"
#include "diff/replay/node_results.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff {

/// The node-record cause of a cross-rank cause.
DivergenceCause divergence_cause_of(causality::Cause c) noexcept;

/// Cross-rank causality over the node results of every rank (diff/causality): each rank's
/// graphs in record order, collectives matched by group and per-group sequence number, with
/// the two sides' group tables. Sets every divergence's `cross_rank` and cause (a divergence
/// whose inputs were equal here but not on a member of its collective is received), and
/// recomputes `origins` and `other_origins`. Returns the problems found ("causality_*" findings:
/// collectives seen on only some members, group tables that differ).
std::vector<Finding> classify_node_ranks(std::span<NodeRankResult> ranks,
                                         const causality::GroupTable& baseline,
                                         const causality::GroupTable& candidate,
                                         const NodeCompareOptions& o = {});

}  // namespace gparity::diff
