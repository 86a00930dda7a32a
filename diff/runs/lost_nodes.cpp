#include "diff/runs/lost_nodes.hpp"

#include <algorithm>
#include <map>

#include "diff/report/ranges_text.hpp"

namespace gparity::diff {

std::vector<LostNode> lost_nodes(const std::vector<model::RankInfo>& placement,
                                 const std::vector<RankOutcome>& outcomes) {
  // Node numbers when the launcher gave them (two launches on one host differ only there), else
  // host names.
  const bool numbered =
      std::any_of(placement.begin(), placement.end(), [](const model::RankInfo& r) { return r.node >= 0; });
  std::map<std::pair<int, std::string>, LostNode> nodes;
  for (const auto& r : placement) {
    if (r.rank < 0 || static_cast<std::size_t>(r.rank) >= outcomes.size()) continue;
    if (numbered ? r.node < 0 : r.host.empty()) continue;
    auto& n = nodes[{numbered ? r.node : -1, numbered ? std::string() : r.host}];
    n.node = numbered ? r.node : -1;
    if (n.host.empty()) n.host = r.host;
    n.ranks.push_back(r.rank);
  }
  std::vector<LostNode> lost;
  if (nodes.size() < 2) return lost;
  for (auto& [key, n] : nodes) {
    std::sort(n.ranks.begin(), n.ranks.end());
    n.ranks.erase(std::unique(n.ranks.begin(), n.ranks.end()), n.ranks.end());
    bool all_lost = true;
    n.recorded_nothing = true;
    for (const int r : n.ranks) {
      const auto& o = outcomes[static_cast<std::size_t>(r)];
      all_lost = all_lost && o.incomplete && !o.own_failure;
      n.recorded_nothing = n.recorded_nothing && !o.present;
      if (o.last_step && (!n.last_step || *o.last_step > *n.last_step)) n.last_step = o.last_step;
    }
    if (all_lost) lost.push_back(std::move(n));
  }
  return lost;
}

std::string node_label(const LostNode& n) {
  std::string s = n.node >= 0 ? "node " + std::to_string(n.node) + " (" : "node (";
  if (!n.host.empty()) s += "host " + n.host + ", ";
  s += (n.ranks.size() == 1 ? "rank " : "ranks ") + rank_ranges(n.ranks) + ")";
  return s;
}

std::string lost_node_message(const std::string& which, const LostNode& n) {
  std::string s = which + " " + node_label(n) + " was lost: ";
  if (n.recorded_nothing) {
    s += "none of its ranks left a trace in the run folder";
  } else if (n.last_step) {
    s += "its ranks stopped by step " + std::to_string(*n.last_step) + " with no failure event of their own";
  } else {
    s += "its ranks recorded no step and no failure event of their own";
  }
  return s + " (the node was killed, crashed or cut off; or its folder is not the shared one)";
}

}  // namespace gparity::diff
