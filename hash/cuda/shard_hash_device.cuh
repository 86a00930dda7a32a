#pragma once
// Internal to hash/cuda: the device code both kernel files share (shard_hash_kernel.cu, one
// launch a block; shard_hash_batch_kernel.cu, many blocks in one launch): the per-element math,
// each thread's share of a dense run, of a strided block's rows and of its elements, the block
// reduction, and the grid sizing. CUDA only (nvcc).

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "hash/cuda/launch_plan.hpp"

namespace gparity::hash::cuda_detail {

inline constexpr int kThreads = 256;
inline constexpr int kUnroll = 4;  // 16-byte loads in flight per thread

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

template <int ES>
__device__ __forceinline__ std::uint64_t load_bits(const unsigned char* p) {
  if constexpr (ES == 1) {
    return *p;
  } else if constexpr (ES == 2) {
    return *reinterpret_cast<const std::uint16_t*>(p);
  } else if constexpr (ES == 4) {
    return *reinterpret_cast<const std::uint32_t*>(p);
  } else {
    return *reinterpret_cast<const std::uint64_t*>(p);
  }
}

/// Sum of mix() over the 16 / ES elements of one vector whose first element has index key `key`;
/// each next element's key is `step` further (kStep: consecutive global indices).
///
/// Fewer integer instructions an element than the plain form (the kernel is instruction-bound on
/// 1- and 2-byte elements): element k's key is key + k * step, computed as the 64-bit sum of
/// key's low word and the constant k * step, plus key's high word in 32 bits; and the terms'
/// low halves are summed in 64 bits, their high halves in 32 (sum(hi << 32) mod 2^64 is
/// (sum(hi) mod 2^32) << 32).
template <int ES>
__device__ __forceinline__ std::uint64_t hash_vector(const uint4& v, std::uint64_t key,
                                                     std::uint64_t step = kStep) {
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (ES == 8) {
    std::uint64_t acc = 0;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      acc += mix_halves(static_cast<std::uint32_t>(key >> 32) ^ w[2 * k + 1],
                        static_cast<std::uint32_t>(key) ^ w[2 * k]);
      key += step;
    }
    return acc;
  } else {
    constexpr int kPerWord = 4 / ES;
    constexpr std::uint32_t kMask = ES == 4 ? 0xFFFFFFFFU : (1U << (8 * ES)) - 1;
    const auto key_lo = static_cast<std::uint32_t>(key);
    const auto key_hi = static_cast<std::uint32_t>(key >> 32);
    std::uint64_t lo_sum = 0;
    std::uint32_t hi_sum = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int k = 0; k < kPerWord; ++k) {
        const std::uint64_t kk =
            static_cast<std::uint64_t>(key_lo) + static_cast<std::uint64_t>(i * kPerWord + k) * step;
        const std::uint32_t bits = (w[i] >> (8 * ES * k)) & kMask;
        const Halves h =
            mix_pair(static_cast<std::uint32_t>(kk >> 32) + key_hi, static_cast<std::uint32_t>(kk) ^ bits);
        lo_sum += h.lo;
        hi_sum += h.hi;
      }
    }
    return lo_sum + (static_cast<std::uint64_t>(hi_sum) << 32);
  }
}

/// Spec v2: sum of the terms of the 16 / ES elements of one vector (ES < 8) whose element 0 has
/// 32-bit key `key`; element k's key is key + k * step (step: kV2Step for consecutive indices).
/// Per element: a shift or mask to isolate the bits, one 3-input add for x (k * step folds into a
/// constant, or a register hoisted out of the loop), and one mad.wide.u32 that squares x and
/// accumulates in 64 bits: about three integer instructions, where v1 needs about eleven.
__device__ __forceinline__ void mad_square(std::uint64_t& acc, std::uint32_t x) {
  asm("mad.wide.u32 %0, %1, %1, %0;" : "+l"(acc) : "r"(x));
}

template <int ES>
__device__ __forceinline__ std::uint64_t hash_vector_v2(const uint4& v, std::uint32_t key,
                                                        std::uint32_t step = kV2Step) {
  static_assert(ES == 1 || ES == 2 || ES == 4, "8-byte elements hash with v1's term");
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
  constexpr int kPerWord = 4 / ES;
  constexpr std::uint32_t kMask = ES == 4 ? 0xFFFFFFFFU : (1U << (8 * ES)) - 1;
  std::uint64_t acc = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int k = 0; k < kPerWord; ++k) {
      std::uint32_t bits = w[i] >> (8 * ES * k);
      if (k + 1 < kPerWord) bits &= kMask;
      mad_square(acc, bits + key + static_cast<std::uint32_t>(i * kPerWord + k) * step);
    }
  }
  return acc;
}

__device__ __forceinline__ void block_add(std::uint64_t acc, std::uint64_t* sum) {
  __shared__ std::uint64_t warp_sums[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xFFFFFFFFU, acc, o);
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < kThreads / 32 ? warp_sums[lane] : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xFFFFFFFFU, acc, o);
    if (lane == 0) {
      atomicAdd(reinterpret_cast<unsigned long long*>(sum), static_cast<unsigned long long>(acc));
    }
  }
}

/// This thread's share of a dense run: thread `tid` of `nthreads` working on it, under spec v1
/// (64-bit keys) or v2 (ES < 8: 32-bit keys, one mad.wide.u32 an element).
template <int ES, bool V2>
__device__ __forceinline__ std::uint64_t dense_sum(const unsigned char* data, std::uint64_t first,
                                                   const DenseSplit& split, std::uint64_t tid,
                                                   std::uint64_t nthreads) {
  using Key = std::conditional_t<V2, std::uint32_t, std::uint64_t>;
  constexpr std::uint64_t kPer = 16 / ES;
  const uint4* vec = reinterpret_cast<const uint4*>(data + split.head * ES);
  Key key0 = 0;          // the key of vector 0's element 0
  Key vec_key_step = 0;  // between vectors (constants: folded)
  if constexpr (V2) {
    key0 = v2_key_at(first + split.head);
    vec_key_step = static_cast<std::uint32_t>(kPer) * kV2Step;
  } else {
    key0 = kSeed + (first + split.head) * kStep;
    vec_key_step = kPer * kStep;
  }
  const auto vector_term = [&](const uint4& w, std::uint64_t v) {
    const Key key = key0 + static_cast<Key>(v) * vec_key_step;
    if constexpr (V2)
      return hash_vector_v2<ES>(w, key);
    else
      return hash_vector<ES>(w, key);
  };

  std::uint64_t acc = 0;
  std::uint64_t v = tid;
  for (; v + (kUnroll - 1) * nthreads < split.vectors; v += kUnroll * nthreads) {
    uint4 r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = __ldcs(vec + v + u * nthreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc += vector_term(r[u], v + u * nthreads);
  }
  for (; v < split.vectors; v += nthreads) acc += vector_term(__ldcs(vec + v), v);

  // The unaligned head and the tail: one element per thread (fewer than 2 * 16 of them).
  if (tid < split.head + split.tail) {
    const std::uint64_t i = tid < split.head ? tid : split.head + split.vectors * kPer + (tid - split.head);
    if constexpr (V2)
      acc += mix_v2_at(first + i, load_bits<ES>(data + i * ES), ES);
    else
      acc += mix_at(first + i, load_bits<ES>(data + i * ES));
  }
  return acc;
}

/// dense_sum of the spec (8-byte elements: v1's term under both).
template <int ES>
__device__ __forceinline__ std::uint64_t dense_sum_spec(std::uint32_t spec, const unsigned char* data,
                                                        std::uint64_t first, const DenseSplit& split,
                                                        std::uint64_t tid, std::uint64_t nthreads) {
  if constexpr (ES != 8) {
    if (spec == 2) return dense_sum<ES, true>(data, first, split, tid, nthreads);
  }
  return dense_sum<ES, false>(data, first, split, tid, nthreads);
}

/// Strided blocks of spec v2 with rows of at least this many elements take the rows body (a warp
/// a row); runs_kernel (v1) reads rows this long as runs of neighbours in memory.
inline constexpr std::int64_t kMinRun = 32;

/// Whether a strided block of spec v2 takes the rows body (else the elements body), and the rows
/// body's work items: a warp a row.
inline bool takes_rows(const LaunchPlan& p) {
  return p.ndims > 1 && p.dims[p.ndims - 1].extent >= kMinRun;
}
inline std::uint64_t rows_work(const LaunchPlan& p) {
  return static_cast<std::uint64_t>(p.total / p.dims[p.ndims - 1].extent) * 32;
}

/// Spec v2, any strided block whose innermost dim (in memory order) has at least kMinRun
/// elements: this thread's share of its rows, CTA `cta` of `ctas` (`plan`: a LaunchPlan, or a
/// batch's view of one). A warp takes a run of consecutive rows (one locate() a run, the only
/// divisions, and a step of the dim above the innermost between rows), and walks each with the
/// keys advanced by the row's global step in 32-bit adds: contiguous rows with aligned 16-byte
/// loads, four in flight a lane; strided rows (a transposed block's) one element a lane at a
/// time. A column shard of a row-major tensor is rows of this kind.
template <int ES, class Plan>
__device__ __forceinline__ std::uint64_t rows_v2_sum(const Plan& plan, std::uint64_t cta,
                                                     std::uint64_t ctas) {
  const Dim& in = plan.dims[plan.ndims - 1];
  const std::int64_t len = in.extent;
  const std::int64_t rows = plan.total / len;
  const unsigned lane = threadIdx.x & 31U;
  const auto warps = static_cast<std::int64_t>(ctas * (kThreads / 32));
  const std::uint64_t gstep = in.global_stride;
  const std::uint32_t key_step = static_cast<std::uint32_t>(gstep) * kV2Step;  // between neighbours in memory
  constexpr std::uint64_t kPer = 16 / ES;
  const std::uint32_t vec_key_step = static_cast<std::uint32_t>(kPer) * key_step;
  std::uint64_t acc = 0;
  // A warp takes a run of consecutive rows: the next row is one step of the dim above the
  // innermost, so locate() (its divisions, which made short rows compute-bound: 0.37 TB/s on
  // 256-byte rows on an H100) runs once a run and once each time that dim wraps.
  const auto warp = static_cast<std::int64_t>((cta * kThreads + threadIdx.x) / 32);
  const std::int64_t per_warp = (rows + warps - 1) / warps;
  const std::int64_t first = warp * per_warp;
  const std::int64_t end = first + per_warp < rows ? first + per_warp : rows;
  const Dim& above = plan.dims[plan.ndims - 2];  // the rows kernel runs on ndims > 1 only
  Location loc{0, 0};
  std::int64_t at_above = 0;  // the row's index in `above`
  for (std::int64_t r = first; r < end; ++r) {
    if (r == first || ++at_above == above.extent) {
      loc = locate(plan, r * len);  // the row's first element
      at_above = r % above.extent;
    } else {
      loc.local += above.local_stride;
      loc.global += above.global_stride;
    }
    const unsigned char* p = plan.data + loc.local * ES;
    if (in.local_stride != 1 || reinterpret_cast<std::uintptr_t>(p) % ES != 0) {
      const std::int64_t stride = in.local_stride * ES;
      std::uint32_t key = v2_key_at(loc.global) + lane * key_step;
      for (std::int64_t e = lane; e < len; e += 32) {
        mad_square(acc, key + static_cast<std::uint32_t>(load_bits<ES>(p + e * stride)));
        key += 32U * key_step;
      }
      continue;
    }
    const DenseSplit split =
        split_dense(reinterpret_cast<std::uintptr_t>(p), ES, static_cast<std::uint64_t>(len));
    const uint4* vec = reinterpret_cast<const uint4*>(p + split.head * ES);
    const std::uint32_t key0 = v2_key_at(loc.global + split.head * gstep);
    std::uint64_t v = lane;
    for (; v + (kUnroll - 1) * 32 < split.vectors; v += kUnroll * 32) {
      uint4 w[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) w[u] = __ldcs(vec + v + u * 32);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        acc +=
            hash_vector_v2<ES>(w[u], key0 + static_cast<std::uint32_t>(v + u * 32) * vec_key_step, key_step);
    }
    for (; v < split.vectors; v += 32)
      acc +=
          hash_vector_v2<ES>(__ldcs(vec + v), key0 + static_cast<std::uint32_t>(v) * vec_key_step, key_step);
    for (std::uint64_t e = lane; e < split.head + split.tail; e += 32) {
      const std::uint64_t k = e < split.head ? e : split.head + split.vectors * kPer + (e - split.head);
      acc += mix_v2_at(loc.global + k * gstep, load_bits<ES>(p + k * ES), ES);
    }
  }
  return acc;
}

/// Spec v2, blocks whose innermost dim is too short for a warp a row: one element a thread step.
template <int ES, class Plan>
__device__ __forceinline__ std::uint64_t elements_v2_sum(const Plan& plan, std::int64_t tid,
                                                         std::int64_t nthreads) {
  std::uint64_t acc = 0;
  for (std::int64_t f = tid; f < plan.total; f += nthreads) {
    const Location loc = locate(plan, f);
    acc += mix_v2_at(loc.global, load_bits<ES>(plan.data + loc.local * ES), ES);
  }
  return acc;
}

/// CTAs of `Kernel` that fit on the current device at once, queried once per device (the
/// queries cost more than a launch).
template <auto Kernel>
std::uint64_t resident_ctas() {
  constexpr int kMaxDevices = 64;
  static std::atomic<std::uint64_t> known[kMaxDevices];  // 0: not asked yet
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  if (device < kMaxDevices) {
    if (const std::uint64_t k = known[device].load(std::memory_order_relaxed)) return k;
  }
  int sms = 0;
  int per_sm = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, kThreads, 0), "occupancy query");
  const std::uint64_t full = static_cast<std::uint64_t>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
  if (device < kMaxDevices) known[device].store(full, std::memory_order_relaxed);
  return full;
}

/// Enough resident blocks to fill the device (or `max_ctas` when > 0 and fewer), no more than
/// the work needs.
template <auto Kernel>
unsigned grid_size(std::uint64_t work_items, std::uint32_t max_ctas = 0) {
  std::uint64_t full = resident_ctas<Kernel>();
  if (max_ctas > 0 && max_ctas < full) full = max_ctas;
  const std::uint64_t needed = (work_items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(needed < full ? (needed > 0 ? needed : 1) : full);
}

/// Work items of a dense run as launch_es counts them.
inline std::uint64_t dense_work(const DenseSplit& split) {
  const std::uint64_t edge = split.head + split.tail;
  return split.vectors / kUnroll > edge ? split.vectors / kUnroll : edge;
}

}  // namespace gparity::hash::cuda_detail
