// CUDA kernels of the shard-invariant hash, one launch a block (the batch of many blocks in one
// launch: shard_hash_batch_kernel.cu). Dense blocks: aligned 16-byte loads, several in flight per
// thread, keys advanced per vector. Strided blocks: one element per thread step, located through
// the coalesced dims, or a warp a row. Each block reduces its threads' sums and adds them into one
// device word with a 64-bit atomicAdd: addition mod 2^64 is commutative and associative, so the
// result does not depend on scheduling.

#include <cuda_runtime.h>

#include <string>

#include "hash/cuda/launch_plan.hpp"
#include "hash/cuda/shard_hash_device.cuh"

namespace gparity::hash::cuda_detail {
namespace {

template <int ES>
__global__ void __launch_bounds__(kThreads)
    dense_kernel(const unsigned char* data, std::uint64_t first, DenseSplit split, std::uint64_t* sum,
                 std::uint32_t spec) {
  const std::uint64_t tid = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::uint64_t nthreads = static_cast<std::uint64_t>(gridDim.x) * kThreads;
  block_add(dense_sum_spec<ES>(spec, data, first, split, tid, nthreads), sum);
}

template <int ES>
__global__ void __launch_bounds__(kThreads) strided_kernel(const LaunchPlan plan, std::uint64_t* sum) {
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::int64_t nthreads = static_cast<std::int64_t>(gridDim.x) * kThreads;
  std::uint64_t acc = 0;
  for (std::int64_t f = tid; f < plan.total; f += nthreads) {
    const Location loc = locate(plan, f);
    acc += mix_at(loc.global, load_bits<ES>(plan.data + loc.local * ES));
  }
  block_add(acc, sum);
}

/// Strided blocks whose innermost dim (in memory order) is contiguous in memory: runs of
/// `extent` neighbouring elements whose global indices step by that dim's global stride (a
/// transposed matrix's columns). A warp takes a run: one locate() for the run, then aligned
/// 16-byte loads with the keys advanced by the global step, where strided_kernel locates and
/// loads one element at a time (0.13-0.18 TB/s on an H200).
GPARITY_HD bool has_runs(const LaunchPlan& p) {
  const Dim& in = p.dims[p.ndims - 1];
  return p.ndims > 1 && in.local_stride == 1 && in.extent >= kMinRun &&
         reinterpret_cast<std::uintptr_t>(p.data) % p.elem_size == 0;
}

template <int ES>
__global__ void __launch_bounds__(kThreads) runs_kernel(const LaunchPlan plan, std::uint64_t* sum) {
  const Dim& in = plan.dims[plan.ndims - 1];
  const std::int64_t len = in.extent;
  const std::int64_t runs = plan.total / len;
  const unsigned lane = threadIdx.x & 31U;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (kThreads / 32);
  const std::uint64_t gstep = in.global_stride;
  const std::uint64_t key_step = gstep * kStep;  // between neighbours in memory
  constexpr std::uint64_t kPer = 16 / ES;
  std::uint64_t acc = 0;
  for (std::int64_t r = (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) / 32; r < runs;
       r += warps) {
    const Location loc = locate(plan, r * len);  // the run's first element
    const unsigned char* p = plan.data + loc.local * ES;
    const DenseSplit split =
        split_dense(reinterpret_cast<std::uintptr_t>(p), ES, static_cast<std::uint64_t>(len));
    const uint4* vec = reinterpret_cast<const uint4*>(p + split.head * ES);
    const std::uint64_t key0 = kSeed + (loc.global + split.head * gstep) * kStep;
    for (std::uint64_t v = lane; v < split.vectors; v += 32)
      acc += hash_vector<ES>(__ldcs(vec + v), key0 + v * kPer * key_step, key_step);
    for (std::uint64_t e = lane; e < split.head + split.tail; e += 32) {
      const std::uint64_t k = e < split.head ? e : split.head + split.vectors * kPer + (e - split.head);
      acc += mix_at(loc.global + k * gstep, load_bits<ES>(p + k * ES));
    }
  }
  block_add(acc, sum);
}

template <int ES>
__global__ void __launch_bounds__(kThreads) rows_kernel_v2(const LaunchPlan plan, std::uint64_t* sum) {
  block_add(rows_v2_sum<ES>(plan, blockIdx.x, gridDim.x), sum);
}

template <int ES>
__global__ void __launch_bounds__(kThreads) strided_kernel_v2(const LaunchPlan plan, std::uint64_t* sum) {
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::int64_t nthreads = static_cast<std::int64_t>(gridDim.x) * kThreads;
  block_add(elements_v2_sum<ES>(plan, tid, nthreads), sum);
}

template <int ES>
void launch_es(const LaunchPlan& plan, std::uint64_t* sum, cudaStream_t stream, std::uint32_t max_ctas) {
  const bool v2 = plan.spec == 2 && ES != 8;  // 8-byte elements: v1's term under both specs
  if (is_dense(plan)) {
    const DenseSplit split =
        split_dense(reinterpret_cast<std::uintptr_t>(plan.data), ES, static_cast<std::uint64_t>(plan.total));
    dense_kernel<ES><<<grid_size<dense_kernel<ES>>(dense_work(split), max_ctas), kThreads, 0, stream>>>(
        plan.data, plan.global_base, split, sum, v2 ? 2U : 1U);
    check(cudaGetLastError(), "shard hash kernel launch");
    return;
  }
  if constexpr (ES != 8) {
    if (v2) {
      if (takes_rows(plan)) {
        rows_kernel_v2<ES>
            <<<grid_size<rows_kernel_v2<ES>>(rows_work(plan), max_ctas), kThreads, 0, stream>>>(plan, sum);
      } else {
        const auto total = static_cast<std::uint64_t>(plan.total);
        strided_kernel_v2<ES>
            <<<grid_size<strided_kernel_v2<ES>>(total, max_ctas), kThreads, 0, stream>>>(plan, sum);
      }
      check(cudaGetLastError(), "shard hash kernel launch");
      return;
    }
  }
  if (has_runs(plan)) {
    const auto runs = static_cast<std::uint64_t>(plan.total / plan.dims[plan.ndims - 1].extent);
    runs_kernel<ES><<<grid_size<runs_kernel<ES>>(runs * 32, max_ctas), kThreads, 0, stream>>>(plan, sum);
  } else {
    const auto total = static_cast<std::uint64_t>(plan.total);
    strided_kernel<ES><<<grid_size<strided_kernel<ES>>(total, max_ctas), kThreads, 0, stream>>>(plan, sum);
  }
  check(cudaGetLastError(), "shard hash kernel launch");
}

/// Frees a stream-ordered allocation on every exit path.
struct StreamScratch {
  void* ptr = nullptr;
  cudaStream_t stream;
  explicit StreamScratch(cudaStream_t s) : stream(s) {
    check(cudaMallocAsync(&ptr, sizeof(std::uint64_t), stream), "cudaMallocAsync");
  }
  ~StreamScratch() { cudaFreeAsync(ptr, stream); }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
};

}  // namespace

void launch_shard_hash(const LaunchPlan& plan, std::uint64_t* device_sum, void* stream,
                       std::uint32_t max_ctas) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (plan.elem_size) {
    case 1: launch_es<1>(plan, device_sum, s, max_ctas); break;
    case 2: launch_es<2>(plan, device_sum, s, max_ctas); break;
    case 4: launch_es<4>(plan, device_sum, s, max_ctas); break;
    case 8: launch_es<8>(plan, device_sum, s, max_ctas); break;
    default: throw CudaError("element size " + std::to_string(plan.elem_size) + " has no kernel");
  }
}

std::uint64_t shard_hash_sync(const LaunchPlan& plan, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const StreamScratch scratch(s);
  auto* sum = static_cast<std::uint64_t*>(scratch.ptr);
  check(cudaMemsetAsync(sum, 0, sizeof(std::uint64_t), s), "cudaMemsetAsync");
  launch_shard_hash(plan, sum, stream);
  std::uint64_t host = 0;
  check(cudaMemcpyAsync(&host, sum, sizeof host, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return host;
}

void require_device_pointer(const void* p) {
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so later calls do not report it
    throw CudaError(std::string("cannot inspect pointer: ") + cudaGetErrorString(e));
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
    throw CudaError("the block's data pointer is not CUDA device memory");
  }
}

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace gparity::hash::cuda_detail
