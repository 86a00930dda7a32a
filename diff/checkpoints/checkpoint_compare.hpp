#pragma once
// Checkpoint comparison: per parameter, are two checkpoints bitwise identical, whatever their
// parallel layout? Each side is a DCP checkpoint folder, a .safetensors file, or a run folder
// naming its checkpoints per step (step-<n>/ DCP folders or step-<n>.safetensors, also under
// checkpoint/). Tensors are compared by dtype, global shape, the shard-invariant hash and the
// full-tensor XXH3-64 (core/model/formats/checkpoint_hash), so no shard is ever gathered.
// Findings go to a FindingConsumer; the return value is the exit code (0 / 1 / 2).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "diff/report/finding.hpp"

namespace gparity::diff {

struct CheckpointCompareOptions {
  unsigned threads = 0;  // per checkpoint, over tensors; 0 = all cores
  std::string title = "gparity compare";
  std::size_t max_params_listed = 5;  // in the headline
};

/// What a checkpoint comparison reads, for messages.
inline constexpr std::string_view kCheckpointFormats =
    "DCP checkpoint folder, safetensors file, run folder of step-<n> checkpoints";

/// True when `path` is a DCP checkpoint folder (a .metadata file), a safetensors file (named
/// .safetensors, or by its header: core/model/formats/format_detect.hpp), or a folder of
/// per-step checkpoints.
bool is_checkpoint_path(const std::string& path);

/// The checkpoints of a run folder by step; a single checkpoint maps to step -1.
std::map<std::int64_t, std::string> checkpoints_by_step(const std::string& path);

/// Compares every parameter (every common step for run folders) and reports to `out`.
/// Unreadable input throws InputError.
int compare_checkpoints(const std::string& baseline, const std::string& candidate,
                        const CheckpointCompareOptions& options, FindingConsumer& out);

}  // namespace gparity::diff
