#pragma once
// A minimal device remap for replay: every cpu/cuda device literal (torch.device values, "cuda:k"
// strings, nested in lists and kwargs) and every annotation's device becomes the executing
// device. It is what lets a graph captured on cuda:0 run on another rank's GPU or on the CPU.
// The full device-hoisting pass (process groups included) is `gparity graph hoist`; replay calls
// this function only through `hoist_for_replay`, the one place to swap it for that pass.

#include <cstdint>
#include <string_view>

#include "core/model/graph/graph.hpp"

namespace gparity::runtime {

/// A copy of `g` (subgraphs included) with devices remapped to `type`:`index` (index -1: none).
model::Graph remap_devices(const model::Graph& g, std::string_view type, std::int32_t index);

/// The graph as this rank runs it ("cpu" or "cuda:k"): today remap_devices.
model::Graph hoist_for_replay(const model::Graph& g, std::string_view device);

}  // namespace gparity::runtime
