// The baseline of the CUDA shard hash benchmark: a read-only reduction over the same bytes, with
// the hash kernels' access pattern (aligned 16-byte streaming loads, four in flight a thread, a
// grid of resident CTAs, a 64-bit atomicAdd a CTA) and the least arithmetic that still uses every
// word, so it reads at the device's memory bandwidth. Issue 24 measures the hash against it.

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "bench/read_reduce_kernel.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

__global__ void __launch_bounds__(kThreads)
    read_reduce(const uint4* vec, std::uint64_t vectors, std::uint64_t* sum) {
  const std::uint64_t tid = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::uint64_t nthreads = static_cast<std::uint64_t>(gridDim.x) * kThreads;
  std::uint64_t acc = 0;
  std::uint64_t v = tid;
  for (; v + (kUnroll - 1) * nthreads < vectors; v += kUnroll * nthreads) {
    uint4 r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = __ldcs(vec + v + u * nthreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc += (r[u].x ^ r[u].y) + static_cast<std::uint64_t>(r[u].z ^ r[u].w);
  }
  for (; v < vectors; v += nthreads) {
    const uint4 r = __ldcs(vec + v);
    acc += (r.x ^ r.y) + static_cast<std::uint64_t>(r.z ^ r.w);
  }
  __shared__ std::uint64_t warp_sums[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xFFFFFFFFU, acc, o);
  if ((threadIdx.x & 31U) == 0) warp_sums[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    std::uint64_t total = 0;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
    atomicAdd(reinterpret_cast<unsigned long long*>(sum), static_cast<unsigned long long>(total));
  }
}

}  // namespace

namespace gparity::bench {

void read_reduce_async(const void* device_bytes, std::size_t bytes, std::uint64_t* device_sum) {
  static unsigned grid = 0;
  if (grid == 0) {
    int device = 0, sms = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_reduce, kThreads, 0);
    grid = static_cast<unsigned>(sms * per_sm);
  }
  read_reduce<<<grid, kThreads>>>(static_cast<const uint4*>(device_bytes), bytes / 16, device_sum);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("read_reduce: ") + cudaGetErrorString(e));
}

}  // namespace gparity::bench
