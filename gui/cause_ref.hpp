#pragma once
// Where a verdict's cause lives, as a value the verdict page hands to the view that shows it
// (issue 27: "each cell and each finding links to the view that shows its cause, with that cause
// selected"). The verdict page builds CauseRefs from the same diff/ results the CLI prints; each
// view answers `bool select_cause(const CauseRef&)` by selecting what the reference names and
// returning false when it holds nothing that matches. No Qt here: tests and the CLI-side code
// that builds references stay free of it. Fields a kind does not use stay at their defaults.

#include <cstdint>
#include <string>

namespace gparity::gui {

struct CauseRef {
  enum class Kind {
    RunCell,          // a run pair: rank x step (x parameter) of the heatmap
    ReplayNode,       // a replayed graph's node: rank, graph, node
    GraphNode,        // a node of a graph (graph diff, graph ranks): rank, graph, node
    CollectiveEntry,  // a Flight Recorder stream: rank, group, seq
    CheckpointParam,  // a checkpoint parameter: param (layout = side)
    Op,               // an op record of an op log: rank, step, op_index
  };
  Kind kind = Kind::RunCell;
  std::int32_t rank = -1;
  std::int64_t step = -1;
  std::string graph;  // graph label or compile id, as the view lists it
  std::string node;   // node name
  std::string group;  // process group name or id
  std::int64_t seq = -1;
  std::string param;  // parameter / tensor name
  std::int64_t op_index = -1;
  std::string side;  // "a"/"b", "base"/"cand", "eager"/"compiled": which input, where it matters

  friend bool operator==(const CauseRef&, const CauseRef&) = default;
};

}  // namespace gparity::gui
