#pragma once
// One entry point for "the graphs in this path", whatever the importer: a TORCH_TRACE directory
// or log file, FX print_readable text, our JSON form, a torch.export .pt2 archive. Front ends
// (gparity graph, the GUI, graph diff) list and select graphs through it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/graph.hpp"

namespace gparity::model {

struct GraphEntry {
  std::int32_t rank = -1;      // -1 when the source has no ranks
  CompileId compile;           // frame -1 when the source has no compile ids
  std::string kind;            // "aot_joint_graph", "fx_text", "exported_program", ...
  std::size_t occurrence = 0;  // 0 for the first graph of this rank, compile id and kind, 1 next...
  const Graph* graph = nullptr;
  std::string source;          // file (and line or zip member) it came from
  std::uint32_t problems = 0;  // problems its text had (listed in GraphCollection::problems)
};

/// A graph payload that held no graph at all: listed with its problem, never an entry.
struct UnparsedGraph {
  std::int32_t rank = -1;
  CompileId compile;
  std::string kind;
  std::string file;
  std::int64_t line = 0;  // the envelope's line
  std::string problem;
};

struct GraphCollection {
  std::string path;
  std::string format;  // "torch_trace", "fx_text", "gparity_json", "pt2"
  std::vector<GraphEntry> entries;
  std::vector<TraceProblem> problems;   // damage reported by the importer; entries before it stay usable
  std::vector<UnparsedGraph> unparsed;  // graph payloads with no graph (their problems are in `problems`)
  std::size_t md5_mismatches = 0;
  std::vector<std::int32_t> ranks;                  // trace ranks, sorted
  std::vector<std::vector<CompileId>> compile_ids;  // per rank (same order as ranks)

  // Storage the entries point into.
  std::shared_ptr<MultiRankTrace> trace;
  std::vector<std::shared_ptr<Graph>> owned;
};

/// What load_graphs reads, for messages.
inline constexpr std::string_view kGraphFormats[] = {"TORCH_TRACE log or folder", "torch.export .pt2 archive",
                                                     "gparity graph JSON", "FX print_readable text"};

/// Detects the format by content (core/model/formats/format_detect.hpp: a directory or a file
/// starting with a TORCH_TRACE envelope: TORCH_TRACE; a zip: .pt2 archive; a JSON object: graph
/// JSON; UTF-8 text: FX text) and imports. Anything else (empty, a pickle, binary data) is an
/// InputError naming the file and kGraphFormats; so is unreadable input. Damage inside a trace
/// is reported in `problems`.
GraphCollection load_graphs(const std::string& path);

struct GraphSelector {
  std::optional<std::int32_t> rank;
  std::optional<CompileId> compile;
  std::string kind;  // empty: any
  std::optional<std::size_t> occurrence;
};

/// The entries the selector matches, in collection order.
std::vector<const GraphEntry*> select_graphs(const GraphCollection& c, const GraphSelector& s);

/// Graphviz DOT of a graph: one box per node (name, target, annotation), edges from uses.
std::string graph_to_dot(const Graph& g);

/// Short human text of an annotation ("f32[4, 64][64, 1]cuda:0") and of a value ("[2, 0.5]").
std::string meta_text(const Graph& g, const TensorMeta& m);
std::string value_text(const Graph& g, const Value& v);

}  // namespace gparity::model
