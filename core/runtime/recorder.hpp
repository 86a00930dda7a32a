#pragma once
// The trace recorder for LibTorch training loops: hashes tensors where they live (CPU through
// hash/, CUDA through the hash CUDA kernels (shard hash and XXH3) when built with them, never
// copying weights to the host) and writes trace v1 records through model::TraceWriter. The caller describes
// its sharding once in the params table (each rank's block offsets and whether it counts a replicated block);
// the recorder then hashes each rank's local block with those global offsets, so the shard-invariant partials
// of all ranks add up to the full tensor's hash. The recorder's own time per step goes into each step record
// ("recorder_ns").
//
// Asynchronous CUDA recording (step_async / before_update / flush): a step's hashes run on a side stream
// after the work already queued on the training stream, and the step record is written once they are back
// (a step or two late, by a thread of the recorder's own: the JSON line and its write leave the training
// thread), so the training stream never waits for the hashes unless it is about to overwrite what they
// read, and the host never waits for them unless kMaxPendingSteps steps are still out. Order of calls per
// step: ... forward, backward ... before_update(); optimizer step; step_async(tensors). flush() (also run
// by step(), params() and the destructor) writes what is pending, in step order, before it returns.
// GPARITY_RECORDER_PROFILE=1: the destructor prints where the recorder's host time went, per phase and
// step, to stderr (docs/performance.md, "Recorder overhead on GPU").

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/model/run/trace_schema.hpp"
#include "core/model/run/trace_writer.hpp"
#include "hash/shard_hash.hpp"

namespace at {
class Tensor;
}

namespace gparity::runtime {

/// XXH3-64 of a block's bytes (row-major) and its shard-invariant partial hash.
struct BlockHashes {
  std::uint64_t xxh3 = 0;
  std::uint64_t shard = 0;
};

/// Hashes `local` (any strides, CPU or CUDA) as the block at `offsets` of a tensor of
/// `global_shape`. Empty offsets/global_shape: `local` is the whole tensor. `spec`: the shard
/// hash's definition (docs/hashing.md); v1, pinned by traces and checkpoints, unless asked.
BlockHashes hash_block(const at::Tensor& local, std::span<const std::int64_t> offsets = {},
                       std::span<const std::int64_t> global_shape = {},
                       hash::ShardSpec spec = hash::ShardSpec::V1);

/// Hashes of many blocks (offsets/global shapes per tensor, or empty spans: every tensor
/// whole). CUDA blocks (all on one device) are hashed together on the device's current stream
/// with one wait and one 16-byte-per-block copy back.
std::vector<BlockHashes> hash_blocks(std::span<const at::Tensor> tensors,
                                     std::span<const std::span<const std::int64_t>> offsets = {},
                                     std::span<const std::span<const std::int64_t>> global_shapes = {},
                                     hash::ShardSpec spec = hash::ShardSpec::V1);

/// Both hashes of every tensor (each whole) written into `words` (int64, on the tensors' device,
/// zeroed): tensor i's XXH3 at words[2 * (first + i)], its shard-invariant hash at the next word.
/// CUDA tensors are hashed on the device's current stream and nothing waits: the caller reads
/// `words` back when it chooses (the op recorder: once a step). CPU tensors are hashed here.
/// With `xxh3` false only the shard-invariant hash is computed (fully parallel on the GPU; XXH3's
/// chain is sequential per tensor and the current stream waits for it) and the XXH3 words stay 0.
void hash_blocks_into(std::span<const at::Tensor> tensors, const at::Tensor& words, std::int64_t first,
                      bool xxh3 = true, hash::ShardSpec spec = hash::ShardSpec::V1);

/// How DeferredHashes runs its kernels.
struct DeferredHashOptions {
  /// XXH3-64 of every tensor besides the shard hash (enqueue can ask it for some tensors only).
  bool xxh3 = true;
  hash::ShardSpec spec = hash::ShardSpec::V1;
  /// Hash on a low-priority stream of its own instead of the current stream, so that the hashes
  /// of one batch run beside the work enqueued after it (the graph's next nodes) instead of
  /// before it. The side stream starts each batch where the current stream is at its enqueue;
  /// the tensors are kept alive until their hashes are done; the current stream waits for the
  /// hashes only in wait_on_device() and collect(). Under CUDA graph capture everything stays on
  /// the current stream. Needs LibTorch with CUDA (otherwise the current stream is used).
  bool side_stream = false;
  /// With side_stream: the share of the device's resident hash CTAs (shard_hash_cuda_resident_ctas)
  /// the side stream's kernels may use, in (0, 1]; 1: no cap. A kernel that fills every SM would
  /// make the current stream's kernels queue behind it.
  double side_share = 0.25;
  /// XXH3's scramble chains walked on the host (hash::Xxh3HostDigests: the device sums the
  /// blocks, 1/16 of the bytes is copied back on a copy stream, host threads walk the chains as
  /// it lands and collect() waits for them), not
  /// on the device (one warp a tensor, ~8x slower a KiB, and the current stream waits for it).
  /// Applies to the current-stream path outside CUDA graph capture.
  bool host_xxh3_chains = true;
};

/// Hashes of CUDA tensors enqueued on the device's current stream (or a side stream:
/// DeferredHashOptions) into device memory and read back all at once: hashing every tensor of a
/// stream of work (each node of a replayed graph) without a wait per tensor. Each tensor is
/// hashed whole; with xxh3 off only the shard-invariant hash is computed (XXH3's scramble chain is
/// sequential per tensor: ~30 GB/s on one large buffer, docs/performance.md) and
/// BlockHashes::xxh3 stays 0.
class DeferredHashes {
 public:
  explicit DeferredHashes(bool xxh3 = true, hash::ShardSpec spec = hash::ShardSpec::V1);
  explicit DeferredHashes(const DeferredHashOptions& options);
  ~DeferredHashes();
  DeferredHashes(const DeferredHashes&) = delete;
  DeferredHashes& operator=(const DeferredHashes&) = delete;
  /// Enqueues the hashes of `tensors` (CUDA, one device); returns the first one's position in
  /// what collect() returns. `xxh3_too` (empty, or one flag a tensor): tensors whose flag is set
  /// get XXH3 even when the options leave it off (a replayed graph's outputs).
  std::size_t enqueue(std::span<const at::Tensor> tensors, std::span<const std::uint8_t> xxh3_too = {});
  /// The current stream waits, on the device, for every hash enqueued so far (call before
  /// anything writes a tensor that was enqueued). Nothing to do without a side stream.
  void wait_on_device();
  /// Waits for the hashes and returns them in enqueue order; starts over.
  std::vector<BlockHashes> collect();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// While alive, PyTorch's current stream on `device` ("cuda:N") is a high-priority stream of its
/// pool, joined to the stream that was current at both ends (it starts where that one is; that
/// one waits for it at the end): the work of a replayed graph then goes before the hashes of a
/// low-priority side stream when both wait for an SM. Does nothing when `enabled` is false, the
/// device is not CUDA, LibTorch has no CUDA, or the current stream is being captured.
class PriorityStreamScope {
 public:
  PriorityStreamScope(const std::string& device, bool enabled);
  ~PriorityStreamScope();
  PriorityStreamScope(const PriorityStreamScope&) = delete;
  PriorityStreamScope& operator=(const PriorityStreamScope&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The trace scalar of a one-element floating tensor, bits in its own dtype.
model::TraceScalar trace_scalar(const at::Tensor& scalar);
/// The trace dtype of a tensor.
model::DType trace_dtype(const at::Tensor& t);

/// Tensors of one step, aligned with the params table. Empty spans: not recorded this step.
struct StepTensors {
  std::int64_t step = 0;
  const at::Tensor* loss = nullptr;
  const at::Tensor* grad_norm = nullptr;
  std::span<const at::Tensor> params;
  std::span<const at::Tensor> grads;
  /// Optimizer states by name ("exp_avg", "momentum_buffer"), each aligned with the table.
  std::vector<std::pair<std::string, std::span<const at::Tensor>>> optim;
};

class Recorder {
 public:
  Recorder(const std::filesystem::path& run_dir, int rank);
  /// Writes the pending step record, if any (errors are swallowed: the trace keeps what it had).
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// Writes the params table (again only when it changed); later steps are aligned with it.
  void params(std::vector<model::ParamInfo> table);
  /// Hashes the step's tensors and appends the step record; returns the recorder's own time
  /// for this step in nanoseconds (also written into the record).
  std::int64_t step(const StepTensors& tensors);

  /// Steps step_async keeps in flight before it waits for the oldest one's hashes (gparity run's
  /// loop never has more than two: its loss.item() waits for the training stream, which waited
  /// for the previous step's hashes in before_update).
  static constexpr std::size_t kMaxPendingSteps = 3;

  /// Like step(), but when every given tensor (loss and grad norm included) lives on one CUDA
  /// device and this build hashes on CUDA, only enqueues: the hashes and the scalars' copies run
  /// on the recorder's side stream once the training (current) stream has reached this point,
  /// into pinned host memory, and the record is written by a later call, once its hashes are back
  /// (earlier steps whose hashes are back are written here first). The tensors must stay
  /// unchanged until before_update() has been called (the recorder keeps them alive). Other
  /// steps are recorded synchronously by step(). Returns the host time spent here.
  std::int64_t step_async(const StepTensors& tensors);
  /// Call right before the tensors given to the last step_async are modified (the next
  /// optimizer step): the current stream waits, on the device, for the pending hashes; the
  /// records whose hashes are already back are written now. Returns the host time spent here.
  std::int64_t before_update();
  /// Waits for the pending hashes, if any, and writes their step records: every record handed
  /// to the recorder is in the trace when it returns. Returns the time spent.
  std::int64_t flush();
  /// True while a step record is waiting for its hashes.
  [[nodiscard]] bool pending() const noexcept { return pending_steps() > 0; }
  /// Step records waiting for their hashes (at most kMaxPendingSteps).
  [[nodiscard]] std::size_t pending_steps() const noexcept;

  // Written after every step record handed on before them (those of asynchronous steps are
  // written by a thread of the recorder's own).
  void buckets(const model::BucketsRecord& plan);
  void devices(const model::DevicesRecord& devices);
  void event(const model::EventRecord& event);

  [[nodiscard]] const std::vector<model::ParamInfo>& table() const noexcept { return table_; }

 private:
  void hash_all(std::span<const at::Tensor> tensors, const std::string& prefix, model::StepRecord& out) const;
  void check_aligned(std::span<const at::Tensor> tensors, const std::string& prefix) const;
  void add_hashes(std::span<const BlockHashes> hashes, const std::string& prefix,
                  model::StepRecord& out) const;

  // The asynchronous path's state (side stream, events, reused device and pinned buffers, the
  // queue of enqueued steps with the tensors they keep alive), made on first use; recorder_steps.cpp.
  struct Async;
  /// Hands the pending steps whose hashes are back, oldest first, to the step writer, waiting
  /// for the oldest `wait_for` of them.
  void drain(std::size_t wait_for);
  /// Waits until the step writer has written everything handed to it (rethrowing its error).
  void settle_writes();
  // Host time per phase (GPARITY_RECORDER_PROFILE=1; null otherwise), printed by the destructor.
  struct Profile;

  model::TraceWriter writer_;
  std::vector<model::ParamInfo> table_;
  int rank_ = 0;
  std::unique_ptr<Async> async_;
  std::unique_ptr<Profile> profile_;
};

}  // namespace gparity::runtime
