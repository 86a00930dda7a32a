#pragma once
// N-way classification of one graph across ranks (`gparity graph ranks`): ranks whose
// normalized graphs have the same fingerprint form a group; one representative per group is
// aligned against the first group's; every field that differs across ranks, and every device
// literal that equals the rank's local device, is classified as
//   device-parametric: a device index equal to the local device on every rank (hoistable);
//   rank-parametric:   integers that are a·x+b on every rank, x = rank, local rank or a mesh
//                      coordinate (the value must become an input);
//   process-group-parametric: a functional collective's group name that differs between ranks
//                      where each name's ranks are one slice of the same mesh dimension (the
//                      tp group of each dp row): compile-on-one-rank must resolve the group
//                      through the DeviceMesh instead of baking the name;
//   divergent:         anything else (other targets, node counts, order, shapes, dtypes).
// The verdict is the worst class found. Value types only; reporters live elsewhere.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/graph.hpp"
#include "diff/graphs/graph_normalize.hpp"
#include "diff/graphs/mesh.hpp"
#include "diff/graphs/rank_graph_set.hpp"

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

/// How ranks map to local devices and mesh coordinates.
struct RankLayout {
  /// Local device = rank % ranks_per_node; 0: local device = rank.
  std::int32_t ranks_per_node = 0;
  /// Device-mesh shape, row-major over ranks ({2, 4}: rank 5 is at (1, 1)); empty: no mesh.
  std::vector<std::int32_t> mesh;
  /// Dimension names ("dp", "tp"); empty or shorter than mesh: "mesh[d]".
  std::vector<std::string> mesh_names;
  /// Where the mesh came from: "--mesh", "DeviceMesh in graph payloads", "Flight Recorder
  /// pg_config", "inferred from world size 4" (then several shapes may have been tried).
  std::string mesh_source;
  /// Process-group name -> its ranks, from the Flight Recorder pg_config beside the trace;
  /// process-group-parametric findings are checked against it when it names the group.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> group_ranks;
  /// No mesh known: fit_affine tries the factorizations of this world size (0: do not).
  std::int32_t infer_world = 0;
  [[nodiscard]] std::string dim_name(std::size_t d) const;
  [[nodiscard]] std::int32_t local_device(std::int32_t rank) const noexcept;
  [[nodiscard]] std::vector<std::int32_t> coordinates(std::int32_t rank) const;
};

/// value = a·x + b, x named by `variable` ("rank", "local_rank", "mesh[0]", ...).
struct AffineFunction {
  std::string variable;
  std::int64_t a = 0, b = 0;
  /// Further terms over other mesh coordinates (value = a·x + Σ a_i·x_i + b), 2-D/3-D meshes.
  std::vector<std::pair<std::string, std::int64_t>> more;
  /// The mesh shape was not given nor read but inferred ("2x2 inferred from world size 4").
  std::string inferred_mesh;
  [[nodiscard]] std::string text() const;  // "32*rank+32", "rank", "-mesh[1]+4", "48*dp"
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

/// classify_ranks over every rank's version held in a RankGraphSet (one graph plus what differs):
/// the same groups, fingerprints, findings (in the same order) and verdict, in time and memory
/// that grow with what differs between ranks rather than ranks x size. `layout.ranks_per_node`
/// should be the set's (else every group is rebuilt whole: the same answer, slower).
GraphClassification classify_rank_set(const RankGraphSet& set, const RankLayout& layout);

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

/// The layout `--mesh SPEC` gives (`gparity graph ranks`, `gparity-view`): the mesh of `spec`
/// ("2x4" or "dp=2,tp=4", diff::parse_mesh_override; empty: none, resolve_layout finds one).
/// Throws model::InputError naming "--mesh" for a bad spec.
RankLayout mesh_override_layout(std::string_view spec, std::int32_t ranks_per_node = 0);

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
/// so that its graphs are the bases; a graph is parsed, added and dropped, and a log's pages are
/// given back once its graphs and DeviceMesh specs are read, so memory holds about one graph per
/// distinct graph plus what the ranks change. Problems are the ones read_torch_trace_dir reports.
struct RanksInput {
  GraphNormalization norm;
  model::MultiRankTrace trace;
  std::vector<TraceGraphSet> graphs;  // by (compile id, kind, occurrence)
  std::vector<MeshSpec> mesh_specs;   // mesh_specs_in_trace's, read before the pages went
};
RanksInput read_ranks_input(const std::string& path, const GraphNormalization& norm,
                            std::int32_t ranks_per_node, unsigned threads = 0);

/// classify_trace on what read_ranks_input read: the same report.
TraceRanksReport classify_trace(const RanksInput& input, const RankLayout& layout);

}  // namespace gparity::diff
