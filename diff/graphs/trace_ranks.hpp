#pragma once
// `gparity graph ranks` over a whole multi-rank TORCH_TRACE: the layout to classify with (--mesh,
// else the mesh the trace's DeviceMesh specs, the Flight Recorder pg_config or the manifest
// declare, else inferred from the world size), every graph classified across the ranks that
// logged it (rank_classify.hpp), a graph some ranks lack as a divergent "graph" finding, and the
// record-level facts of trace_facts.hpp. The verdict is the worst class found.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/graph_normalize.hpp"
#include "diff/graphs/rank_findings.hpp"
#include "diff/graphs/rank_layout.hpp"
#include "diff/graphs/ranks_input.hpp"

namespace gparity::diff {

struct TraceGraphReport {
  std::string kind;  // "aot_joint_graph", ...
  model::CompileId compile;
  std::int32_t occurrence = 0;      // n-th graph of that kind and compile id on a rank
  std::vector<std::int32_t> ranks;  // ranks that logged it
  GraphClassification classification;
};

struct TraceRanksReport {
  std::vector<std::int32_t> ranks;
  std::vector<TraceGraphReport> graphs;
  /// Trace-level divergences read from records (diff/graphs/trace_facts.hpp): compile ids, cache
  /// hit/miss, collective schedules, tensor metadata, schedule vs output code.
  std::vector<RankFinding> findings;
  std::vector<FactGroups> fact_groups;
  std::string mesh;                   // "2x2 (dp, tp) from DeviceMesh in graph payloads", "" when none
  RankLayout layout;                  // what the graphs are classified with (resolve_layout's)
  std::vector<std::string> problems;  // damage reported by the reader
  std::vector<std::string> normalizations;
  GraphVerdict verdict = GraphVerdict::Identical;
};

/// The layout to classify a trace with: `given` when it has a mesh (--mesh), else the mesh read
/// from the trace's DeviceMesh specs or the Flight Recorder pg_config beside it (diff/graphs/mesh.hpp),
/// else infer_world set to the world size. Damaged dumps are reported in `problems`.
RankLayout resolve_layout(const model::MultiRankTrace& trace, RankLayout given,
                          std::vector<std::string>& problems);

/// Classifies every graph of the trace (with resolve_layout's layout) and adds the record-level
/// facts of diff/graphs/trace_facts.hpp. `graphs` false: only the trace-level part (layout, mesh, facts,
/// problems), for front ends that classify one graph at a time with classify_ranks(report.layout),
/// as the GUI does for the graph it shows.
TraceRanksReport classify_trace(const model::MultiRankTrace& trace, const GraphNormalization& norm,
                                const RankLayout& layout, bool graphs = true);

/// classify_trace on what read_ranks_input read: the same report.
TraceRanksReport classify_trace(const RanksInput& input, const RankLayout& layout);

}  // namespace gparity::diff
