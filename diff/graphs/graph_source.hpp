#pragma once
// Picks one graph out of whatever a user points at, for graph diff / devices: FX print_readable
// text, our graph JSON (graph_json.hpp), or a TORCH_TRACE log file or directory (select the
// rank, the graph kind and the compile id; by default the lowest rank's first graph).
// Bad input or a selection that matches nothing is an InputError naming what is available.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/graph.hpp"

namespace gparity::diff {

/// What load_graph reads, told by content (core/model/formats/format_detect.hpp); anything else
/// is an InputError naming the file and these.
inline constexpr std::string_view kGraphSourceFormats[] = {"TORCH_TRACE log or folder", "gparity graph JSON",
                                                           "FX print_readable text"};

struct GraphSelection {
  std::string path;
  std::optional<std::int32_t> rank;
  std::string kind;  // "" = first graph
  std::optional<model::CompileId> compile;
};

struct LoadedGraph {
  model::Graph graph;
  std::optional<std::int32_t> rank;  // the selected or logged rank, when known
  std::string label;                 // "trace/ rank 1 aot_joint_graph 0/0", or the path
};

LoadedGraph load_graph(const GraphSelection& sel);

}  // namespace gparity::diff
