#pragma once
// What gparity-view has open: one graph input (a TORCH_TRACE directory or log file, FX
// print_readable text, a .pt2 archive or gparity graph JSON) read through model::load_graphs, and the flat
// list of graphs it holds, each labelled by rank, compile id and kind for the graph selector. No Qt here:
// loading runs on a worker thread and the Document is handed to the GUI thread as an immutable value
// (shared_ptr<const Document>). load_document throws model::InputError for input it cannot use;
// damage that core/model recovers from is kept in `problems` and shown in the window.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/graph.hpp"
#include "core/model/graph/graph_load.hpp"

namespace gparity::gui {

struct GraphEntry {
  std::string label;  // "rank 0 · 0/0 · aot_joint_graph (612 nodes)"
  std::int32_t rank = -1;
  std::string compile;  // CompileId::text(), "" for a plain FX file
  std::string kind;     // record name, "fx_text" for a plain FX file
  int occurrence = 0;   // n-th graph with this rank, compile id and kind
  const model::Graph* graph = nullptr;
};

struct Document {
  std::string path;
  std::string format;  // as model::GraphCollection names it: "torch_trace", "fx_text", "pt2", ...
  /// Owns every graph the entries below point into.
  model::GraphCollection collection;
  std::vector<GraphEntry> graphs;
  std::vector<std::string> problems;

  /// The graph with the same compile id, kind and occurrence as `e` on every rank (e itself
  /// included), in rank order: what the node inspector compares.
  [[nodiscard]] std::vector<const GraphEntry*> same_graph_on_ranks(const GraphEntry& e) const;
  /// Index of the first entry matching rank / kind (any compile id when `compile` is empty).
  [[nodiscard]] std::optional<std::size_t> find(std::int32_t rank, std::string_view kind,
                                                std::string_view compile = {}) const;
};

/// Reads `path`; the Document is self-contained (graphs point into its own members, so it must
/// not be copied or moved after this returns: hence the shared_ptr).
std::shared_ptr<const Document> load_document(const std::string& path);

}  // namespace gparity::gui
