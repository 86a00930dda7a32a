#pragma once
// Node results (node_results.hpp) as findings, checks and summaries: what every reporter of
// `gparity compare` on replay runs shows, and the one-line causes and per-rank summaries of the
// verdict. Text only; JSON values keep strings exact.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "diff/replay/node_results.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff {

/// Findings (kinds "node_divergence" for each first divergent node, "node_origin" for further
/// origins; values hold the node, op, source, cause, both records and "graph_path" for viewers),
/// "node_unmatched" info, "node_graph_missing" / "node_graph_unavailable" problems) and one check per graph
/// ("nodes <graph>"), appended in a deterministic order.
void node_findings(const NodeRankResult& r, std::vector<Finding>& findings, std::vector<Check>& checks);

/// The cause of a divergence as one clause: "origin: its inputs were equal", "propagated: input mm
/// already differed", "received at all_reduce (group tp '3') from rank 1, origin slice_1 at
/// train.py:20"; `rank` is the divergence's (an origin elsewhere is named with its rank).
std::string divergence_cause_text(const NodeDivergence& d, int rank);

/// Per-rank summary for the verdict: {"graphs": n, "compared": n, "divergent": n, "first": {...}}.
nlohmann::json node_summary(const NodeRankResult& r);
/// "rank 1: first divergent node slice_1 (aten.slice.Tensor, train.py:42) in aot_forward_graph 0/0,
/// origin"; a received one: "rank 0: received at all_reduce (group tp '3') from rank 1, origin
/// slice_1 at train.py:42 (first divergent node of aot_forward_graph 0/0)"; "" when no node diverges.
std::string node_summary_line(const NodeRankResult& r);

}  // namespace gparity::diff
