#pragma once
// Device hoisting for compile-on-one-rank: a graph captured on rank s, rewritten to run on rank
// t. A pure graph-to-graph pass (no LibTorch): the input graph is not modified.
//
// What it remaps, in the graph and in every nested subgraph:
//  - device literals on the source device in args and kwargs, at any depth of lists and tuples:
//    `device(type='cuda', index=s)` / `torch.device("cuda", s)` values and `'cuda:s'` strings;
//  - annotations (tensor metas) on the source device, so placeholders and device-placed
//    constants (get_attr) are created on the target device, and verbatim annotations
//    (`DTensor(...cuda:s...)`);
//  - process-group names of functional collectives (the group argument or `group_name=`): rank
//    s's group for a mesh dimension becomes rank t's group for that dimension
//    (ProcessGroupTable::counterpart), as PyTorch resolves groups through the DeviceMesh.
// What it leaves alone, by design: integers (a slice offset of `32*rank` stays rank s's:
// hoisting fixes devices, not rank-dependent values), cpu/meta devices and devices without an
// index. What it cannot map (a device index that is neither the source's nor -1, a group the
// table does not know or whose counterpart is ambiguous) is left as it is and listed in
// `unresolved`.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "core/model/graph/process_groups.hpp"

namespace gparity::model {

struct HoistOptions {
  std::int32_t source_rank = 0;
  std::int32_t target_rank = 0;
  /// Local device indices (rank % ranks-per-node); by default the ranks themselves.
  std::int32_t source_device = 0;
  std::int32_t target_device = 0;
  /// Group names to hoist; nullptr or empty: collectives' groups are reported as unresolved
  /// (unless source and target rank are the same).
  const ProcessGroupTable* groups = nullptr;
};

enum class HoistChangeKind : std::uint8_t { DeviceLiteral, Annotation, ProcessGroup };
std::string_view hoist_change_kind_name(HoistChangeKind k) noexcept;  // "device", "annotation", "group"

struct HoistChange {
  HoistChangeKind kind = HoistChangeKind::DeviceLiteral;
  std::string graph;  // "" for the top graph, else the subgraph path ("wrap_body_0")
  std::string node, target;
  std::string field;     // "args[2]", "kwargs.device", "args[1][0]", "meta.device", "meta"
  std::string from, to;  // "cuda:0" -> "cuda:1", "'3'" -> "'4'"
  std::string source;    // user code "file:line" when known
};

enum class HoistProblemKind : std::uint8_t { ForeignDevice, UnknownGroup };
std::string_view hoist_problem_kind_name(HoistProblemKind k) noexcept;  // "foreign-device", "group"

struct HoistProblem {
  HoistProblemKind kind = HoistProblemKind::ForeignDevice;
  std::string graph, node, target, field;
  std::string text;     // the literal or group name as it is
  std::string message;  // why it was left alone
};

struct HoistResult {
  Graph graph;
  std::vector<HoistChange> changes;  // in graph order (subgraphs after their parent)
  std::vector<HoistProblem> unresolved;
  [[nodiscard]] std::size_t count(HoistChangeKind k) const noexcept;
};

HoistResult hoist_graph(const Graph& g, const HoistOptions& options);

}  // namespace gparity::model
