#pragma once
// The graph side of cross-rank causality (causality.hpp): which nodes of a graph communicate with
// other ranks, on which process group, and the process-group table as the causal order reads it.
// A functional collective (`_c10d_functional.*`, legacy `c10d_functional.*`) other than
// wait_tensor is a collective on the group its argument names (the last positional string, or
// `group_name=`); a legacy rank-list form is the group "ranks:R,R,...", as replay names it.

#include <optional>

#include "core/model/graph/graph.hpp"
#include "core/model/graph/process_groups.hpp"
#include "diff/causality/causality.hpp"

namespace gparity::diff::causality {

/// The node's communication, or nullopt when it is a local op (wait_tensor included).
std::optional<Comm> comm_of_node(const model::Graph& g, model::NodeId n);

/// The table's groups (name, ranks, description).
GroupTable group_table(const model::ProcessGroupTable& t);

}  // namespace gparity::diff::causality
