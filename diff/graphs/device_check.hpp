#pragma once
// Device placement in one graph (`gparity graph devices`): device literals baked into args and
// kwargs (`device(type='cuda', index=k)`, `'cuda:k'`, `torch.device("cuda", k)`), annotations
// whose device is not the rank's, and nodes whose tensor inputs sit on different devices. Given
// the rank the graph was captured on and a target rank, what device hoisting
// (core/model/graph/hoist.hpp) would change to load it there, process-group names included, and
// what it could not map. Value types only.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "core/model/graph/hoist.hpp"
#include "core/model/graph/process_groups.hpp"

namespace gparity::diff {

enum class DeviceFindingKind : std::uint8_t { Literal, Annotation, MixedInputs };
std::string_view device_finding_kind_name(DeviceFindingKind k) noexcept;  // "literal", ...

struct DeviceFinding {
  DeviceFindingKind kind = DeviceFindingKind::Literal;
  std::string node, target;
  std::string field;        // "args[1]", "kwargs.device", "meta.device", "inputs"
  std::string text;         // the literal, the annotation device, or the inputs' devices
  std::int32_t index = -1;  // the device index (-1 for mixed inputs)
  std::string source;       // user code "file:line" when known
  std::int64_t graph_line = 0;
};

struct DeviceRemap {
  std::string node, field;
  std::int32_t from = -1, to = -1;
};

struct DeviceReport {
  std::vector<DeviceFinding> findings;
  std::vector<DeviceRemap> remaps;  // only with both ranks given: the device part of `hoist`
  std::size_t literals = 0, foreign_annotations = 0, mixed_inputs = 0;
  /// With both ranks given: what device hoisting (core/model/graph/hoist.hpp) changes to load
  /// the graph on the target rank, devices and process groups, and what it cannot map.
  bool hoisted = false;
  std::vector<model::HoistChange> hoist;
  std::vector<model::HoistProblem> unresolved;
};

struct DeviceCheckOptions {
  /// The rank the graph was captured on; annotations on another device are reported only when
  /// it is given.
  std::optional<std::int32_t> rank;
  /// Where it would be loaded: what hoisting would change.
  std::optional<std::int32_t> target_rank;
  /// Local device = rank % ranks_per_node (0: the rank itself).
  std::int32_t ranks_per_node = 0;
  /// Process groups for hoisting group names (nullptr: none known).
  const model::ProcessGroupTable* groups = nullptr;
};

DeviceReport check_devices(const model::Graph& g, const DeviceCheckOptions& o);

/// `rank`: the rank (local device) the graph was captured on; annotations on another cuda
/// device are reported only when it is given. `target_rank`: remaps from `rank` to it.
DeviceReport check_devices(const model::Graph& g, std::optional<std::int32_t> rank,
                           std::optional<std::int32_t> target_rank);

/// The hoisting part of a report as JSON: {"changes": [...], "unresolved": [...], "counts": {...}}.
nlohmann::ordered_json hoist_to_json(const std::vector<model::HoistChange>& changes,
                                     const std::vector<model::HoistProblem>& unresolved);

}  // namespace gparity::diff
