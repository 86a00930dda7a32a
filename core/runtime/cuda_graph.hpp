#pragma once
// CUDA-graph capture and replay of a training step's forward and backward (`gparity run
// --cuda-graph`; `gparity replay --cuda-graph` reuses it). StepGraphs owns two at::cuda::CUDAGraph
// (forward, backward) that share one private memory pool (graph_pool_handle): the backward is
// captured after the forward and reads the activations the forward left in the pool, so they are
// replayed in that order, forward then backward, every time. Capture runs on the current stream,
// which must not be the default stream: the caller makes a CaptureStream current for the whole
// run, so warm-up, capture and replay all run on it (as torch.cuda.graphs warms up on a side stream).
// NCCL collectives issued by ProcessGroupNCCL inside a capture are captured (its internal stream
// joins the capture through events); they must be waited on without a host-side timeout there.
//
// Teardown order matters: a graph still holding NCCL kernels when the process group is destroyed
// hangs NCCL, so release() (graphs, then their pool) runs before the Comm goes away.
//
// Without CUDA in this LibTorch (GPARITY_TORCH_CUDA undefined, e.g. Debian's 1.13 CPU build)
// cuda_graphs_available() is false and constructing either class throws std::invalid_argument.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/runtime/static_inputs.hpp"

namespace at {
class Tensor;
}

namespace gparity::runtime {

/// Whether this build can capture CUDA graphs (a CUDA LibTorch).
bool cuda_graphs_available() noexcept;

/// Makes a fresh stream of the device's pool current for its lifetime (and restores the old one).
class CaptureStream {
 public:
  explicit CaptureStream(int device_index);
  ~CaptureStream();
  CaptureStream(const CaptureStream&) = delete;
  CaptureStream& operator=(const CaptureStream&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class StepGraphs {
 public:
  explicit StepGraphs(int device_index);
  /// release()s, swallowing errors.
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  /// Runs `fn` (uncaptured work on the current stream: a warm-up step's forward and backward)
  /// with its allocations on that stream taken from the graphs' pool, so the capture that follows
  /// reuses the blocks the warm-up freed instead of growing a pool beside the warm-up's cache
  /// (what keeps peak reserved memory near eager's).
  void warm_up_in_pool(const std::function<void()>& fn);
  /// Captures `fn` (which enqueues work on the current stream) as the forward / backward graph.
  /// The work is recorded, not run. An exception from `fn` ends the capture and is rethrown with
  /// the phase named.
  void capture_forward(const std::function<void()>& fn);
  void capture_backward(const std::function<void()>& fn);
  /// The forward is captured (a replayed graph is one "forward" graph without a backward).
  [[nodiscard]] bool captured() const noexcept;
  /// Forward then backward (if captured), enqueued on the current stream.
  void replay();
  /// Destroys the graphs and gives their pool back to the allocator. Idempotent.
  void release();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// GPUs this process sees (0 without CUDA in this LibTorch).
int cuda_device_count() noexcept;
/// Whether the current stream of GPU `device_index` is capturing a CUDA graph (anyone's: a
/// torch.cuda.graph, Inductor's cudagraph trees). Work enqueued now runs only when the graph is
/// replayed, and memory it writes belongs to the graph's pool: the op recorder hashes nothing
/// then. False without CUDA.
bool current_stream_capturing(int device_index) noexcept;
/// Throws std::invalid_argument, saying why, when `local_rank` has no GPU here ("--device cuda").
void require_cuda_device(int local_rank);

/// A tensor as a static input of a captured graph (address, shape, dtype, bytes).
StaticTensor static_tensor(const std::string& name, const at::Tensor& t);

/// The caching allocator's figures for a device (bytes): current and peak, allocated and reserved.
struct DeviceMemory {
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
  std::int64_t peak_allocated = 0;
  std::int64_t peak_reserved = 0;
};
/// All zero without CUDA.
DeviceMemory device_memory(int device_index);
void reset_peak_device_memory(int device_index);
/// Gives the allocator's unused cached blocks back to the device (outside any capture).
void release_cached_device_memory();
void synchronize_device(int device_index);
/// Milliseconds `fn` takes with the device synchronised before and after (no synchronisation
/// for a negative index: a CPU run).
double timed_on_device(int device_index, const std::function<void()>& fn);

}  // namespace gparity::runtime
