#pragma once
// `gparity run` for one rank: trains the debug model with FSDP-style data parallelism (dim-0
// shards, all-gather before use, bucketed reduce-scatter of gradients) over c10d, and records a
// trace v1 run directory. All ranks of a run call run_rank with the same options.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/runtime/comm.hpp"
#include "core/runtime/debug_model.hpp"
#include "core/runtime/fsdp_plan.hpp"

namespace gparity::runtime {

enum class FaultKind { None, Kill, Hang, Exit };

/// A fault to inject, for testing failure handling: at the start of `step`, rank `rank` kills
/// itself with SIGKILL, hangs (its heartbeat keeps going) or exits with status 3.
struct FaultSpec {
  FaultKind kind = FaultKind::None;
  int rank = 0;
  std::int64_t step = 1;
};

struct RunOptions {
  DebugModelConfig model;
  std::int64_t steps = 10;
  std::uint64_t seed = 42;
  std::string dtype = "f32";        // "f32" | "bf16"
  std::string optimizer = "adamw";  // "adamw" | "sgd"
  double lr = 1e-3;
  double weight_decay = 0.1;    // AdamW only
  double clip = 1.0;            // max grad norm; 0 turns clipping off
  std::int64_t hash_every = 1;  // weight hashes every N steps (and on the last); 0: never
  /// CUDA: hash on the recorder's side stream while the next step runs (records written one
  /// step late); false: on the training stream, waiting for the result every step.
  bool hash_async = true;
  bool hash_grads = false;
  bool hash_optim = false;
  BucketOrder bucket_order = BucketOrder::Registration;
  std::string device = "cpu";  // "cpu" | "cuda"
  std::chrono::milliseconds timeout{60'000};
  std::filesystem::path out_dir;
  std::vector<std::string> command_line;
  FaultSpec fault;
  /// CUDA-graph mode (docs/cuda-graphs.md): steps 1..cuda_graph_warmup run eagerly on the capture
  /// stream, then the forward and backward (NCCL collectives included) are captured once and
  /// every later step replays them; the optimizer step stays eager, outside the graphs.
  bool cuda_graph = false;
  std::int64_t cuda_graph_warmup = 2;
  /// Before each replay, check every static input's address, shape and dtype and every
  /// non-tensor value against capture time; a difference stops the run naming the input.
  bool cuda_graph_check = false;
  /// Testing: at the start of this step (a replayed one), reallocate the first parameter, which
  /// --cuda-graph-check must catch. 0: never.
  std::int64_t cuda_graph_plant_violation = 0;
};

/// Throws std::invalid_argument naming the first bad option.
void validate(const RunOptions& opts);

struct StepReport {
  std::int64_t step = 0;
  std::int64_t steps = 0;
  double loss = 0.0;
  double grad_norm = 0.0;
  double steps_per_s = 0.0;
  std::int64_t recorder_ns = 0;
  std::int64_t step_ns = 0;
};

struct RunSummary {
  std::int64_t steps = 0;
  double mean_step_ns = 0.0;
  double mean_recorder_ns = 0.0;
  // Medians leave out the first steps' warm-up (allocator, NCCL communicators, kernel loading).
  double median_step_ns = 0.0;
  double median_recorder_ns = 0.0;
  // CUDA: the caching allocator's peaks over the run (bytes); zero on CPU.
  std::int64_t peak_allocated = 0;
  std::int64_t peak_reserved = 0;
  std::int64_t graph_replays = 0;  // --cuda-graph: steps that replayed the captured graphs
};

/// Runs this rank to the end. Throws RankFailure when another rank dies or hangs (after the
/// failure is written to the trace as an "event" record).
RunSummary run_rank(const RunOptions& opts, const RankEnv& env,
                    const std::function<void(const StepReport&)>& on_step = {});

}  // namespace gparity::runtime
