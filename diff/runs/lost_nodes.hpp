#pragma once
// Runs across nodes: which nodes were lost whole. A node that dies (killed, crashed, cut off the
// network) leaves its ranks' traces short with no failure event of their own, or no trace at
// all, while the ranks on the other nodes record the failure they saw. The manifest says which
// node (and host) every rank ran on, so a comparison can name the lost node with its ranks
// instead of listing its ranks one by one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/run/trace_schema.hpp"

namespace gparity::diff {

/// What one rank's trace shows, as the evidence check found it.
struct RankOutcome {
  bool present = false;                   // a trace of this rank was read
  bool incomplete = false;                // missing, failed or short of the declared steps
  bool own_failure = false;               // it wrote a failure event itself (it saw the failure, so it lived)
  std::optional<std::int64_t> last_step;  // the last step it recorded
};

struct LostNode {
  int node = -1;     // the manifest's node number; -1 when nodes are told apart by host only
  std::string host;  // "" when the manifest does not say
  std::vector<int> ranks;
  bool recorded_nothing = false;          // no rank of it left a trace
  std::optional<std::int64_t> last_step;  // the last step any of its ranks recorded
};

/// Nodes of a run on two or more nodes (by the manifest's "node", else its hosts) whose every
/// rank was lost: incomplete with no failure event of its own. `outcomes` is indexed by rank;
/// ranks the manifest does not place are left out. Empty for a run on one node.
std::vector<LostNode> lost_nodes(const std::vector<model::RankInfo>& placement,
                                 const std::vector<RankOutcome>& outcomes);

/// "node 1 (host gpu7, ranks 2-3)": how reports name a node.
std::string node_label(const LostNode& node);

/// The finding's message: "`which` node 1 (host gpu7, ranks 2-3) was lost: ...".
std::string lost_node_message(const std::string& which, const LostNode& node);

}  // namespace gparity::diff
