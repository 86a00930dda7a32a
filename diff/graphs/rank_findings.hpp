#pragma once
// What `gparity graph ranks` finds, as values: the class of each difference between ranks, the
// verdict of a graph (the worst class found), and the findings, groups and classification that
// the classifiers (rank_classify.hpp) and the trace-level facts (trace_facts.hpp) produce and the
// reporters (graph_report.hpp, ranks_html.hpp, gparity-view) show.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diff/graphs/rank_layout.hpp"

namespace gparity::diff {

enum class FindingClass : std::uint8_t {
  DeviceParametric,
  RankParametric,
  ProcessGroupParametric,
  Divergent
};
enum class GraphVerdict : std::uint8_t {
  Identical,
  DeviceParametric,
  RankParametric,
  ProcessGroupParametric,
  Divergent
};

std::string_view finding_class_name(FindingClass c) noexcept;  // "device-parametric", ...
std::string_view verdict_name(GraphVerdict v) noexcept;        // "identical", ...
/// The verdict a finding of class `c` gives its graph (the worst one found wins).
GraphVerdict verdict_of(FindingClass c) noexcept;

struct RankValue {
  std::int32_t rank = 0;
  std::string text;
};

struct RankFinding {
  FindingClass cls = FindingClass::Divergent;
  std::string node;               // node name in the first group's representative ("" for graph-level)
  std::string target;             // its operator
  std::string field;              // "args[2]", "kwargs.device", "meta.shape", "node", "order", ...
  std::vector<RankValue> values;  // per rank, rank order
  std::optional<AffineFunction> function;
  std::string source;           // "file:line" of the user code when the node has one
  std::int64_t graph_line = 0;  // the node's line in its text (log line for TORCH_TRACE)
  std::string compile;          // trace-level facts: the compile id they arise at ("0/1")
  std::string note;             // what the class means here (process-group-parametric: the dimension
                                // and what compile-on-one-rank needs)
};

struct RankGroup {
  std::vector<std::int32_t> ranks;
  std::string sequence;  // what the group's ranks share, short ("miss miss hit", "6 ops", ...)
};

/// Ranks grouped by one fact's whole-log sequence; more than one group means divergence.
struct FactGroups {
  std::string fact;  // "cache", "collective_schedule", "tensor_meta"
  std::vector<RankGroup> groups;
};

struct GraphClassification {
  std::vector<std::vector<std::int32_t>> groups;  // ranks with identical normalized graphs
  std::vector<std::uint64_t> fingerprints;        // per group
  std::vector<RankFinding> findings;
  GraphVerdict verdict = GraphVerdict::Identical;
};

}  // namespace gparity::diff
