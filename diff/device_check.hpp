#pragma once
// Device placement in one graph (`gparity graph devices`): device literals baked into args and
// kwargs (`device(type='cuda', index=k)`, `'cuda:k'`, `torch.device("cuda", k)`), annotations
// whose device is not the rank's, and nodes whose tensor inputs sit on different devices. Given
// the rank the graph was captured on and a target rank, the list of what must be remapped to
// load it there. Value types only.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/graph/graph.hpp"

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
  std::vector<DeviceRemap> remaps;  // only with both ranks given
  std::size_t literals = 0, foreign_annotations = 0, mixed_inputs = 0;
};

/// `rank`: the rank (local device) the graph was captured on; annotations on another cuda
/// device are reported only when it is given. `target_rank`: remaps from `rank` to it.
DeviceReport check_devices(const model::Graph& g, std::optional<std::int32_t> rank,
                           std::optional<std::int32_t> target_rank);

}  // namespace gparity::diff
