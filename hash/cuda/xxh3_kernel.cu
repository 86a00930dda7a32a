// CUDA kernels of XXH3-64 (xxh3_plan.hpp says how the hash is split). Two launches per batch:
// block_sums_kernel sums every full 1 KiB block's lane contributions, one half-warp per block
// (a thread per stripe, 16-byte loads, a shuffle reduce-scatter over the 16 stripes);
// chain_kernel runs one warp per input: 8 threads scramble their lane through the block sums in
// order (loads issued a batch ahead), then add their lane's tail, and one thread merges the lanes, or hashes
// a short input outright.

#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "hash/cuda/xxh3_plan.hpp"

namespace gparity::hash::cuda_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kChainBatch = 16;  // block sums each chain thread has in flight

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

__device__ __forceinline__ std::uint64_t word_of(const uint4& v, int half) {
  return half == 0 ? (static_cast<std::uint64_t>(v.y) << 32 | v.x)
                   : (static_cast<std::uint64_t>(v.w) << 32 | v.z);
}

/// Index of the segment holding global block g (first_block ascending, full_blocks > 0).
__device__ __forceinline__ std::uint32_t find_segment(const Xxh3Segment* segs, std::uint32_t n,
                                                      std::uint64_t g) {
  std::uint32_t lo = 0, hi = n;  // first segment whose first_block > g, minus one
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    if (segs[mid].first_block <= g)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

__global__ void __launch_bounds__(kThreads)
    block_sums_kernel(const Xxh3Segment* segs, std::uint32_t nsegs, std::uint64_t total_blocks,
                      const Xxh3Secret secret, std::uint64_t* sums) {
  const std::uint64_t tid = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::uint64_t warps = static_cast<std::uint64_t>(gridDim.x) * (kThreads / 32);
  const int s = static_cast<int>(threadIdx.x & 15);  // this thread's stripe within a block
  const int half = static_cast<int>((threadIdx.x >> 4) & 1);
  std::uint64_t key[kXxh3Lanes];
#pragma unroll
  for (int j = 0; j < kXxh3Lanes; ++j) key[j] = xxh3_read64(secret.bytes + 8 * (s + j));

  // Whole warps iterate together so the shuffles always see all 32 threads.
  for (std::uint64_t w = tid / 32; 2 * w < total_blocks; w += warps) {
    const std::uint64_t g = 2 * w + static_cast<std::uint64_t>(half);
    std::uint64_t v[kXxh3Lanes] = {};
    if (g < total_blocks) {
      const Xxh3Segment seg = segs[find_segment(segs, nsegs, g)];
      const unsigned char* p = seg.data + (g - seg.first_block) * kXxh3BlockBytes + s * kXxh3StripeBytes;
      std::uint64_t d[kXxh3Lanes];
      if ((reinterpret_cast<std::uintptr_t>(seg.data) & 15) == 0) {
        const uint4* q = reinterpret_cast<const uint4*>(p);
        uint4 r[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) r[k] = __ldcs(q + k);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          d[2 * k] = word_of(r[k], 0);
          d[2 * k + 1] = word_of(r[k], 1);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kXxh3Lanes; ++j) d[j] = xxh3_read64(p + 8 * j);
      }
#pragma unroll
      for (int j = 0; j < kXxh3Lanes; ++j) v[j] = xxh3_lane_contribution(d[j], d[j ^ 1], key[j]);
    }
    // Reduce-scatter over the 16 stripes: each exchange halves the lanes a thread keeps.
    const bool b8 = (s & 8) != 0, b4 = (s & 4) != 0, b2 = (s & 2) != 0;
    std::uint64_t w4[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::uint64_t send = b8 ? v[k] : v[k + 4];
      w4[k] = (b8 ? v[k + 4] : v[k]) + __shfl_xor_sync(0xFFFFFFFFU, send, 8);
    }
    std::uint64_t w2[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const std::uint64_t send = b4 ? w4[k] : w4[k + 2];
      w2[k] = (b4 ? w4[k + 2] : w4[k]) + __shfl_xor_sync(0xFFFFFFFFU, send, 4);
    }
    std::uint64_t w1 = (b2 ? w2[1] : w2[0]) + __shfl_xor_sync(0xFFFFFFFFU, b2 ? w2[0] : w2[1], 2);
    w1 += __shfl_xor_sync(0xFFFFFFFFU, w1, 1);
    if (g < total_blocks && (s & 1) == 0) {
      const int lane = (b8 ? 4 : 0) + (b4 ? 2 : 0) + (b2 ? 1 : 0);
      sums[g * kXxh3Lanes + static_cast<std::uint64_t>(lane)] = w1;
    }
  }
}

__global__ void __launch_bounds__(32)
    chain_kernel(const Xxh3Segment* segs, const std::uint64_t* sums, const Xxh3Secret secret,
                 std::uint64_t* out, std::size_t out_stride) {
  const Xxh3Segment seg = segs[blockIdx.x];
  const int lane = static_cast<int>(threadIdx.x);
  std::uint64_t acc = 0;
  if (seg.size > kXxh3MidsizeMax && lane < kXxh3Lanes) {
    acc = xxh3_init_acc(lane);
    const std::uint64_t key = xxh3_read64(secret.bytes + 128 + 8 * lane);
    const std::uint64_t* c = sums + seg.first_block * kXxh3Lanes + lane;
    const std::uint64_t nb = seg.full_blocks;
    std::uint64_t cur[kChainBatch];
#pragma unroll
    for (int u = 0; u < kChainBatch; ++u) cur[u] = static_cast<std::uint64_t>(u) < nb ? c[u * kXxh3Lanes] : 0;
    for (std::uint64_t b = 0; b < nb; b += kChainBatch) {
      std::uint64_t next[kChainBatch];
#pragma unroll
      for (int u = 0; u < kChainBatch; ++u) {
        const std::uint64_t i = b + kChainBatch + static_cast<std::uint64_t>(u);
        next[u] = i < nb ? c[i * kXxh3Lanes] : 0;
      }
#pragma unroll
      for (int u = 0; u < kChainBatch; ++u) {
        if (b + static_cast<std::uint64_t>(u) < nb) acc = xxh3_scramble(acc + cur[u], key);
      }
#pragma unroll
      for (int u = 0; u < kChainBatch; ++u) cur[u] = next[u];
    }
    acc = xxh3_tail_lane(acc, lane, seg.data, seg.size, secret);
  }
  std::uint64_t lanes[kXxh3Lanes];
#pragma unroll
  for (int j = 0; j < kXxh3Lanes; ++j) lanes[j] = __shfl_sync(0xFFFFFFFFU, acc, j);
  if (lane == 0) {
    out[blockIdx.x * out_stride] = seg.size > kXxh3MidsizeMax ? xxh3_merge(lanes, seg.size, secret)
                                                              : xxh3_short(seg.data, seg.size, secret);
  }
}

unsigned sums_grid(std::uint64_t total_blocks) {
  int device = 0, sms = 0, per_sm = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, block_sums_kernel, kThreads, 0),
        "occupancy query");
  const std::uint64_t full =
      static_cast<std::uint64_t>(sms) * static_cast<std::uint64_t>(per_sm > 0 ? per_sm : 1);
  const std::uint64_t blocks_per_cta = kThreads / 16;
  const std::uint64_t needed = (total_blocks + blocks_per_cta - 1) / blocks_per_cta;
  return static_cast<unsigned>(needed < full ? needed : full);
}

/// The stream-ordered scratch comes from the device's default pool, which by default gives its
/// memory back at every synchronisation, so each call would map fresh memory. Keep up to 256 MiB
/// cached there (only ever raised, once per device).
void keep_pool_memory() {
  constexpr int kMaxDevices = 64;
  static std::atomic<bool> done[kMaxDevices];
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  if (device >= kMaxDevices || done[device].exchange(true)) return;
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t threshold = 0;
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
        "cudaMemPoolGetAttribute");
  std::uint64_t want = std::uint64_t{256} << 20;
  if (threshold < want)
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &want), "cudaMemPoolSetAttribute");
}

}  // namespace

void launch_xxh3(const Xxh3Segment* segments, std::size_t n, std::uint64_t total_blocks,
                 const Xxh3Secret& secret, std::uint64_t* device_out, std::size_t out_stride, void* stream) {
  if (n == 0) return;
  if (n > 0x7FFFFFFFU) throw CudaError("xxh3: too many buffers in one batch");
  const auto s = static_cast<cudaStream_t>(stream);
  keep_pool_memory();
  // One stream-ordered scratch: the segment table, then the block sums (8-byte aligned).
  const std::size_t table_bytes = (n * sizeof(Xxh3Segment) + 7) / 8 * 8;
  const std::size_t bytes = table_bytes + total_blocks * kXxh3Lanes * sizeof(std::uint64_t);
  void* scratch = nullptr;
  check(cudaMallocAsync(&scratch, bytes, s), "cudaMallocAsync");
  auto* table = static_cast<Xxh3Segment*>(scratch);
  auto* sums = reinterpret_cast<std::uint64_t*>(static_cast<unsigned char*>(scratch) + table_bytes);
  cudaError_t e = cudaMemcpyAsync(table, segments, n * sizeof(Xxh3Segment), cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess && total_blocks > 0) {
    block_sums_kernel<<<sums_grid(total_blocks), kThreads, 0, s>>>(table, static_cast<std::uint32_t>(n),
                                                                   total_blocks, secret, sums);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    chain_kernel<<<static_cast<unsigned>(n), 32, 0, s>>>(table, sums, secret, device_out, out_stride);
    e = cudaGetLastError();
  }
  cudaFreeAsync(scratch, s);
  check(e, "xxh3 kernels");
}

}  // namespace gparity::hash::cuda_detail
