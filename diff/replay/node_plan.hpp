#pragma once
// The graph side of node-record comparison (node_compare.hpp): the order in which nodes are visited, how A's
// nodes pair with B's (graph_align), which inputs each reads, and loading the graph a "graph" record names.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "core/model/run/trace_schema.hpp"

namespace gparity::diff {

struct NodePlan {
  std::vector<std::string> order_a;              // A node names in topological order
  std::vector<std::string> partner;              // B name per entry of order_a ("" when none)
  std::vector<std::string> how;                  // "name", "structure", "sequence", "none"
  std::vector<std::vector<std::size_t>> inputs;  // per entry: positions (in order_a) of its inputs
  std::vector<bool> placeholder;
  bool by_graph = false;
};

/// Both graphs: aligned by diff/graph_align (names, then structure, then sequence).
NodePlan plan_by_graph(const model::Graph& a, const model::Graph& b);

/// Whether a "graph" record among `refs` names the label (load_ref_graph's lookup).
bool declares_graph(const std::vector<model::GraphRef>& refs, const std::string& label);

/// The graph a label names among `refs` (a rank file's "graph" records), loaded from
/// `run_dir`/path (set in `path`); nullopt with `problem` set when there is none or it cannot be
/// loaded.
std::optional<model::Graph> load_ref_graph(const std::string& run_dir,
                                           const std::vector<model::GraphRef>& refs, int rank,
                                           const std::string& label, std::string& path, std::string& problem);

}  // namespace gparity::diff
