#pragma once
// `gparity graph ranks`' input read for scale: a multi-rank TORCH_TRACE's records with each graph's
// versions across ranks held in a RankGraphSet (one graph plus what each rank changes) instead of
// every rank's graph whole. trace_ranks.hpp classifies it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/graph_normalize.hpp"
#include "diff/graphs/mesh.hpp"
#include "diff/graphs/rank_graph_set.hpp"

namespace gparity::diff {

/// One graph (compile id, kind, occurrence) of a multi-rank trace, every rank's version in a set.
struct TraceGraphSet {
  model::CompileId compile;
  std::string kind;
  std::int32_t occurrence = 0;
  std::unique_ptr<RankGraphSet> set;
};

/// `gparity graph ranks`' input, read for scale: every rank's records (the trace read with
/// TraceOptions::parse_graphs off; its graphs stay empty) and each graph's versions in a
/// RankGraphSet. Rank logs are read in parallel (`threads`, 0: one per core), the first one first
/// so that its graphs are the bases (each keeps its payload text); every other rank's payload is
/// compared with the base's as text and only the statements that differ are parsed
/// (RankGraphSet::add_text, rank_text.hpp), else it is parsed whole, added and dropped. A log's
/// pages are given back once its graphs and DeviceMesh specs are read, so memory holds about one
/// graph (and its text) per distinct graph plus what the ranks change. Problems are the ones
/// read_torch_trace_dir reports.
struct RanksInput {
  GraphNormalization norm;
  model::MultiRankTrace trace;
  std::vector<TraceGraphSet> graphs;  // by (compile id, kind, occurrence)
  std::vector<MeshSpec> mesh_specs;   // mesh_specs_in_trace's, read before the pages went
};
/// Called as each rank log is read (logs read so far, logs in all), one call at a time.
using RanksProgress = std::function<void(std::size_t done, std::size_t total)>;
RanksInput read_ranks_input(const std::string& path, const GraphNormalization& norm,
                            std::int32_t ranks_per_node, unsigned threads = 0,
                            const RanksProgress& progress = {});

}  // namespace gparity::diff
