#pragma once
// N-way classification of one graph across ranks (`gparity graph ranks`): ranks whose
// normalized graphs have the same fingerprint form a group; one representative per group is
// aligned against the first group's; every field that differs across ranks, and every device
// literal that equals the rank's local device, is classified as
//   device-parametric: a device index equal to the local device on every rank (hoistable);
//   rank-parametric:   integers that are a·x+b on every rank, x = rank, local rank or a mesh
//                      coordinate (the value must become an input);
//   divergent:         anything else (other targets, node counts, order, shapes, dtypes).
// The verdict is the worst class found. Value types only; reporters live elsewhere.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/graph.hpp"
#include "diff/graph_normalize.hpp"

namespace gparity::diff {

enum class FindingClass : std::uint8_t { DeviceParametric, RankParametric, Divergent };
enum class GraphVerdict : std::uint8_t { Identical, DeviceParametric, RankParametric, Divergent };

std::string_view finding_class_name(FindingClass c) noexcept;  // "device-parametric", ...
std::string_view verdict_name(GraphVerdict v) noexcept;        // "identical", ...

/// How ranks map to local devices and mesh coordinates.
struct RankLayout {
  /// Local device = rank % ranks_per_node; 0: local device = rank.
  std::int32_t ranks_per_node = 0;
  /// Device-mesh shape, row-major over ranks ({2, 4}: rank 5 is at (1, 1)); empty: no mesh.
  std::vector<std::int32_t> mesh;
  [[nodiscard]] std::int32_t local_device(std::int32_t rank) const noexcept;
  [[nodiscard]] std::vector<std::int32_t> coordinates(std::int32_t rank) const;
};

/// value = a·x + b, x named by `variable` ("rank", "local_rank", "mesh[0]", ...).
struct AffineFunction {
  std::string variable;
  std::int64_t a = 0, b = 0;
  [[nodiscard]] std::string text() const;  // "32*rank+32", "rank", "-mesh[1]+4"
};

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
};

struct RankGraph {
  std::int32_t rank = 0;
  const model::Graph* graph = nullptr;
};

struct GraphClassification {
  std::vector<std::vector<std::int32_t>> groups;  // ranks with identical normalized graphs
  std::vector<std::uint64_t> fingerprints;        // per group
  std::vector<RankFinding> findings;
  GraphVerdict verdict = GraphVerdict::Identical;
};

/// Classifies one graph given per rank (ranks in any order; at least one).
GraphClassification classify_ranks(std::span<const RankGraph> graphs, const GraphNormalization& norm,
                                   const RankLayout& layout);

/// Fits value = a·x + b with integer a, b over one of the layout's variables (rank first, then
/// local rank, then mesh coordinates). nullopt when none fits.
std::optional<AffineFunction> fit_affine(std::span<const std::int32_t> ranks,
                                         std::span<const std::int64_t> values, const RankLayout& layout);

// ---- a whole multi-rank TORCH_TRACE --------------------------------------------------------

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
  /// Trace-level divergences: compile-id sets, graph counts (graph "" / node "").
  std::vector<RankFinding> findings;
  std::vector<std::string> problems;  // damage reported by the reader
  std::vector<std::string> normalizations;
  GraphVerdict verdict = GraphVerdict::Identical;
};

TraceRanksReport classify_trace(const model::MultiRankTrace& trace, const GraphNormalization& norm,
                                const RankLayout& layout);

}  // namespace gparity::diff
