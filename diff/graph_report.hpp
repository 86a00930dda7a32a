#pragma once
// JSON forms of the graph-diff results (graph diff, graph ranks, graph devices), shared by the
// CLI and later the GUI. Stable keys; documented in docs/graph-diff.md.

#include <nlohmann/json.hpp>

#include "diff/device_check.hpp"
#include "diff/graph_diff.hpp"
#include "diff/rank_classify.hpp"

namespace gparity::diff {

nlohmann::ordered_json to_json(const GraphDiffResult& r, const model::Graph& a, const model::Graph& b);
nlohmann::ordered_json to_json(const GraphClassification& c);
nlohmann::ordered_json to_json(const RankFinding& f);
nlohmann::ordered_json to_json(const TraceRanksReport& r);
nlohmann::ordered_json to_json(const DeviceReport& r);

}  // namespace gparity::diff
