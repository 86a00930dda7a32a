#pragma once
// The graph a rank replays. A captured graph names the devices and process groups of the rank it
// was captured on; replay moves it to the executing rank with the device-hoisting pass
// (model::hoist_graph: device literals, annotations and process-group names, the same pass as
// `gparity graph hoist`), so `--coor` checks exactly what compile-on-one-rank loads. On the CPU
// the hoisted graph is then placed there: every accelerator device becomes `cpu` (a placement,
// not a hoist: the hoist has already run, so a device or group it could not map still shows as
// its problem, and on GPU as a failure of the run).

#include <cstdint>
#include <string>

#include "core/model/graph/graph.hpp"
#include "core/model/graph/hoist.hpp"
#include "core/model/graph/process_groups.hpp"

namespace gparity::runtime {

struct ReplayPlacement {
  std::int32_t source_rank = 0;  // the rank whose graph it is (0 for a graph without ranks)
  std::int32_t target_rank = 0;  // the executing rank
  std::string device = "cpu";    // the executing device: "cpu" or "cuda:k" (k: the local rank)
  const model::ProcessGroupTable* groups = nullptr;
};

/// `g` hoisted from source_rank to target_rank (devices: the graph's own accelerator index,
/// else source_rank, becomes k, or target_rank on the CPU), then placed on the CPU when the
/// device is "cpu". The result's changes and unresolved items are the hoist's.
model::HoistResult hoist_for_replay(const model::Graph& g, const ReplayPlacement& p);

/// A copy of `g` (subgraphs included) with every accelerator device (torch.device values,
/// "cuda:k" strings, nested in lists and kwargs, annotations) on the CPU.
model::Graph place_on_cpu(const model::Graph& g);

}  // namespace gparity::runtime
