#include "core/runtime/cuda_graph.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

#include "core/runtime/clock.hpp"

#if GPARITY_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace gparity::runtime {

namespace {
[[maybe_unused]] std::string no_cuda() {
  return "--cuda-graph needs a LibTorch with CUDA; this build has none";
}
}  // namespace

bool cuda_graphs_available() noexcept {
#if GPARITY_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

void require_cuda_device(int local_rank) {
  if (!cuda_graphs_available())
    throw std::invalid_argument("--device cuda needs a LibTorch with CUDA; this build has none");
  const int n = cuda_device_count();
  if (local_rank >= n)
    throw std::invalid_argument("--device cuda: local rank " + std::to_string(local_rank) + " has no GPU (" +
                                std::to_string(n) + " visible)");
}

StaticTensor static_tensor(const std::string& name, const at::Tensor& t) {
  StaticTensor s;
  s.name = name;
  if (!t.defined()) return s;
  s.address = reinterpret_cast<std::uintptr_t>(t.data_ptr());
  s.shape.assign(t.sizes().begin(), t.sizes().end());
  s.dtype = std::string(c10::toString(t.scalar_type()));
  s.bytes = static_cast<std::int64_t>(t.nbytes());
  return s;
}

#if GPARITY_TORCH_CUDA

int cuda_device_count() noexcept {
  return static_cast<int>(c10::cuda::device_count());
}

bool current_stream_capturing(int device_index) noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_index));
  if (cudaStreamIsCapturing(stream.stream(), &status) != cudaSuccess) {
    (void)cudaGetLastError();  // a failed query is no capture, and must not poison later calls
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

struct CaptureStream::Impl {
  c10::cuda::CUDAStream previous;
  c10::cuda::CUDAStream stream;
};

CaptureStream::CaptureStream(int device_index) {
  const auto dev = static_cast<c10::DeviceIndex>(device_index);
  impl_ = std::make_unique<Impl>(
      Impl{c10::cuda::getCurrentCUDAStream(dev), c10::cuda::getStreamFromPool(false, dev)});
  // The new stream starts after whatever the old one had queued (weights initialised on it).
  impl_->stream.synchronize();
  impl_->previous.synchronize();
  c10::cuda::setCurrentCUDAStream(impl_->stream);
}

CaptureStream::~CaptureStream() {
  // No synchronisation here: after a failure a collective on the stream may never end (the
  // runner synchronises itself when the run went well).
  c10::cuda::setCurrentCUDAStream(impl_->previous);
}

/// capture_begin in thread-local error mode where this LibTorch takes a mode (2.0 and later).
template <typename Graph, typename Pool>
void begin_capture(Graph& g, const Pool& pool) {
  if constexpr (requires { g.capture_begin(pool, cudaStreamCaptureModeThreadLocal); }) {
    g.capture_begin(pool, cudaStreamCaptureModeThreadLocal);
  } else {
    g.capture_begin(pool);
  }
}

struct StepGraphs::Impl {
  int device = 0;
  decltype(at::cuda::graph_pool_handle()) pool{};
  std::unique_ptr<at::cuda::CUDAGraph> forward, backward;
  bool pool_ref = false;  // warm_up_in_pool took a reference on the pool (released in release())

  void capture(std::unique_ptr<at::cuda::CUDAGraph>& g, const char* phase, const std::function<void()>& fn) {
    g = std::make_unique<at::cuda::CUDAGraph>();
    // Thread-local error mode: NCCL's watchdog and the store heartbeat poll CUDA from their own
    // threads while we capture, which a global-mode capture would count against it. This
    // thread's unsafe calls still fail the capture.
    begin_capture(*g, pool);
    try {
      fn();
    } catch (const std::exception& e) {
      try {
        g->capture_end();  // leaves the stream out of capture mode whatever fn left behind
      } catch (...) {      // NOLINT(bugprone-empty-catch): the capture is invalid anyway
      }
      g.reset();
      throw std::runtime_error(std::string("CUDA graph capture of the ") + phase + " failed: " + e.what());
    }
    g->capture_end();
  }
};

StepGraphs::StepGraphs(int device_index) : impl_(std::make_unique<Impl>()) {
  impl_->device = device_index;
  impl_->pool = at::cuda::graph_pool_handle();
}

StepGraphs::~StepGraphs() {
  try {
    release();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

void StepGraphs::warm_up_in_pool(const std::function<void()>& fn) {
  namespace alloc = c10::cuda::CUDACachingAllocator;
  const auto dev = static_cast<c10::DeviceIndex>(impl_->device);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(dev).stream();
  // Takes a reference on the pool (kept until release()) so it outlives the gap before capture.
  alloc::beginAllocateToPool(dev, impl_->pool, [stream](cudaStream_t s) { return s == stream; });
  impl_->pool_ref = true;
  try {
    fn();
  } catch (...) {
    alloc::endAllocateToPool(dev, impl_->pool);
    throw;
  }
  alloc::endAllocateToPool(dev, impl_->pool);
}

void StepGraphs::capture_forward(const std::function<void()>& fn) {
  impl_->capture(impl_->forward, "forward", fn);
}
void StepGraphs::capture_backward(const std::function<void()>& fn) {
  if (!impl_->forward) throw std::logic_error("StepGraphs: capture the forward first");
  impl_->capture(impl_->backward, "backward", fn);
}
bool StepGraphs::captured() const noexcept {
  return impl_->forward != nullptr;
}
void StepGraphs::replay() {
  if (!captured()) throw std::logic_error("StepGraphs::replay before capture");
  impl_->forward->replay();
  if (impl_->backward) impl_->backward->replay();
}
void StepGraphs::release() {
  // Backward first: it was captured last into the shared pool. The pool goes back to the
  // allocator with the last graph that uses it.
  impl_->backward.reset();
  impl_->forward.reset();
  if (impl_->pool_ref) {
    impl_->pool_ref = false;
    c10::cuda::CUDACachingAllocator::releasePool(static_cast<c10::DeviceIndex>(impl_->device), impl_->pool);
  }
}

namespace {
/// The caching allocator refuses a device ("Invalid device argument") until CUDA is initialised
/// in this process; creating an empty tensor there does that (lazily, once).
void ensure_allocator(int device_index) {
  (void)at::empty({0}, at::TensorOptions().device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index)));
}
}  // namespace

DeviceMemory device_memory(int device_index) {
  ensure_allocator(device_index);
  // Index 0 of each stat array is the aggregate over small and large pools (StatType::AGGREGATE,
  // whose namespace moved between releases).
  const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device_index));
  return {s.allocated_bytes[0].current, s.reserved_bytes[0].current, s.allocated_bytes[0].peak,
          s.reserved_bytes[0].peak};
}
void reset_peak_device_memory(int device_index) {
  ensure_allocator(device_index);
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device_index));
}
void release_cached_device_memory() {
  c10::cuda::CUDACachingAllocator::emptyCache();
}
void synchronize_device(int device_index) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_index));
  c10::cuda::device_synchronize();
}

#else  // no CUDA in this LibTorch

int cuda_device_count() noexcept {
  return 0;
}

bool current_stream_capturing(int /*device_index*/) noexcept {
  return false;
}

struct CaptureStream::Impl {};
CaptureStream::CaptureStream(int /*device_index*/) {
  throw std::invalid_argument(no_cuda());
}
CaptureStream::~CaptureStream() = default;

struct StepGraphs::Impl {};
StepGraphs::StepGraphs(int /*device_index*/) {
  throw std::invalid_argument(no_cuda());
}
StepGraphs::~StepGraphs() = default;
void StepGraphs::warm_up_in_pool(const std::function<void()>& /*fn*/) {
  throw std::invalid_argument(no_cuda());
}
void StepGraphs::capture_forward(const std::function<void()>& /*fn*/) {
  throw std::invalid_argument(no_cuda());
}
void StepGraphs::capture_backward(const std::function<void()>& /*fn*/) {
  throw std::invalid_argument(no_cuda());
}
bool StepGraphs::captured() const noexcept {
  return false;
}
void StepGraphs::replay() {
  throw std::invalid_argument(no_cuda());
}
void StepGraphs::release() {}

DeviceMemory device_memory(int /*device_index*/) {
  return {};
}
void reset_peak_device_memory(int /*device_index*/) {}
void release_cached_device_memory() {}
void synchronize_device(int /*device_index*/) {}

#endif

double timed_on_device(int device_index, const std::function<void()>& fn) {
  if (device_index >= 0) synchronize_device(device_index);
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  if (device_index >= 0) synchronize_device(device_index);
  return ms_since(t0);
}

}  // namespace gparity::runtime
