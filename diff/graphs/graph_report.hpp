#pragma once
// JSON forms of the graph-diff results (graph diff, graph ranks, graph devices), shared by the
// CLI and later the GUI. Stable keys; documented in docs/graph-diff.md.

#include <nlohmann/json.hpp>

#include "diff/graphs/device_check.hpp"
#include "diff/report/evidence.hpp"
#include "diff/report/finding.hpp"
#include "diff/graphs/graph_diff.hpp"
#include "diff/graphs/rank_classify.hpp"

namespace gparity::diff {

nlohmann::ordered_json to_json(const GraphDiffResult& r, const model::Graph& a, const model::Graph& b);
nlohmann::ordered_json to_json(const GraphClassification& c);
nlohmann::ordered_json to_json(const RankFinding& f);
nlohmann::ordered_json to_json(const TraceRanksReport& r);
nlohmann::ordered_json to_json(const DeviceReport& r);

/// What each graph command compared, for the evidence rule (diff/report/evidence.hpp):
///  - graph ranks: the graphs of one run, per rank (a rank that logged no graph while others did
///    is missing evidence; no graph at all is nothing compared);
///  - graph diff: the nodes of each side, matched nodes compared;
///  - graph devices: the nodes of one graph.
Evidence ranks_evidence(const TraceRanksReport& r, const std::string& path,
                        const model::MultiRankTrace* trace = nullptr);  // names each rank's log
Evidence diff_evidence(const GraphDiffResult& r, const std::string& a_label, const std::string& b_label);
Evidence devices_evidence(const model::Graph& g, const std::string& label);

/// Emits the results to a FindingConsumer (finding.hpp): begin, one finding per rank finding /
/// node change (kinds "graph_device_parametric", "graph_rank_parametric", "graph_divergent",
/// "graph_trace_problem"; "node_added", "node_removed", "node_changed", "node_moved"), one check
/// per graph, end with the verdict. Every difference is Severity::Divergence, so the exit code
/// is 1 for any difference and the verdict's headline names its kind; the verdict finishes
/// through the evidence rule (nothing compared: exit 2).
void emit(const TraceRanksReport& r, const std::string& path, FindingConsumer& out);
void emit(const GraphDiffResult& r, const model::Graph& a, const std::string& a_label, const model::Graph& b,
          const std::string& b_label, FindingConsumer& out);

}  // namespace gparity::diff
