// CUDA kernels of the shard-invariant hash. Dense blocks: aligned 16-byte loads, several in
// flight per thread, keys advanced per vector. Strided blocks: one element per thread step,
// located through the coalesced dims. Each block reduces its threads' sums and adds them into
// one device word with a 64-bit atomicAdd: addition mod 2^64 is commutative and associative,
// so the result does not depend on scheduling.

#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hash/cuda/launch_plan.hpp"

namespace gparity::hash::cuda_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread

void check(cudaError_t e, const char* what) {
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

/// This thread's share of a dense run: thread `tid` of `nthreads` working on it.
template <int ES>
__device__ __forceinline__ std::uint64_t dense_sum(const unsigned char* data, std::uint64_t first,
                                                   const DenseSplit& split, std::uint64_t tid,
                                                   std::uint64_t nthreads) {
  constexpr std::uint64_t kPer = 16 / ES;
  const uint4* vec = reinterpret_cast<const uint4*>(data + split.head * ES);
  const std::uint64_t key0 = kSeed + (first + split.head) * kStep;  // key of vector 0's element 0
  const std::uint64_t vec_key_step = kPer * kStep;

  std::uint64_t acc = 0;
  std::uint64_t v = tid;
  for (; v + (kUnroll - 1) * nthreads < split.vectors; v += kUnroll * nthreads) {
    uint4 r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = __ldcs(vec + v + u * nthreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc += hash_vector<ES>(r[u], key0 + (v + u * nthreads) * vec_key_step);
  }
  for (; v < split.vectors; v += nthreads) acc += hash_vector<ES>(__ldcs(vec + v), key0 + v * vec_key_step);

  // The unaligned head and the tail: one element per thread (fewer than 2 * 16 of them).
  if (tid < split.head + split.tail) {
    const std::uint64_t i = tid < split.head ? tid : split.head + split.vectors * kPer + (tid - split.head);
    acc += mix_at(first + i, load_bits<ES>(data + i * ES));
  }
  return acc;
}

/// dense_sum under spec v2 (ES < 8): 32-bit keys, one mad.wide.u32 an element.
template <int ES>
__device__ __forceinline__ std::uint64_t dense_sum_v2(const unsigned char* data, std::uint64_t first,
                                                      const DenseSplit& split, std::uint64_t tid,
                                                      std::uint64_t nthreads) {
  constexpr std::uint64_t kPer = 16 / ES;
  const uint4* vec = reinterpret_cast<const uint4*>(data + split.head * ES);
  const std::uint32_t key0 = v2_key_at(first + split.head);  // key of vector 0's element 0
  constexpr std::uint32_t kVecKeyStep = static_cast<std::uint32_t>(kPer) * kV2Step;

  std::uint64_t acc = 0;
  std::uint64_t v = tid;
  for (; v + (kUnroll - 1) * nthreads < split.vectors; v += kUnroll * nthreads) {
    uint4 r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = __ldcs(vec + v + u * nthreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      acc += hash_vector_v2<ES>(r[u], key0 + static_cast<std::uint32_t>(v + u * nthreads) * kVecKeyStep);
  }
  for (; v < split.vectors; v += nthreads)
    acc += hash_vector_v2<ES>(__ldcs(vec + v), key0 + static_cast<std::uint32_t>(v) * kVecKeyStep);

  if (tid < split.head + split.tail) {
    const std::uint64_t i = tid < split.head ? tid : split.head + split.vectors * kPer + (tid - split.head);
    acc += mix_v2_at(first + i, load_bits<ES>(data + i * ES), ES);
  }
  return acc;
}

/// dense_sum or dense_sum_v2 by spec (8-byte elements: v1's term under both).
template <int ES>
__device__ __forceinline__ std::uint64_t dense_sum_spec(std::uint32_t spec, const unsigned char* data,
                                                        std::uint64_t first, const DenseSplit& split,
                                                        std::uint64_t tid, std::uint64_t nthreads) {
  if constexpr (ES != 8) {
    if (spec == 2) return dense_sum_v2<ES>(data, first, split, tid, nthreads);
  }
  return dense_sum<ES>(data, first, split, tid, nthreads);
}

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
inline constexpr std::int64_t kMinRun = 32;

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

/// Spec v2, any strided block whose innermost dim (in memory order) has at least kMinRun
/// elements: the rows kernel. A warp takes a run of consecutive rows (one locate() a run, the
/// only divisions, and a step of the dim above the innermost between rows), and walks each with the keys
/// advanced by the row's global step in 32-bit adds: contiguous rows with aligned 16-byte loads, four in
/// flight a lane; strided rows (a transposed block's) one element a lane at a time. A column shard of a
/// row-major tensor is rows of this kind.
/// This thread's share of the rows of `plan` (a LaunchPlan or a PlanView), CTA `cta` of `ctas`.
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

template <int ES>
__global__ void __launch_bounds__(kThreads) rows_kernel_v2(const LaunchPlan plan, std::uint64_t* sum) {
  block_add(rows_v2_sum<ES>(plan, blockIdx.x, gridDim.x), sum);
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

template <int ES>
__global__ void __launch_bounds__(kThreads) strided_kernel_v2(const LaunchPlan plan, std::uint64_t* sum) {
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::int64_t nthreads = static_cast<std::int64_t>(gridDim.x) * kThreads;
  block_add(elements_v2_sum<ES>(plan, tid, nthreads), sum);
}

/// Which kernel body a batch's block takes.
enum class SegmentKind : std::uint8_t {
  dense,     // one dense run (dense_sum / dense_sum_v2)
  rows,      // spec v2, strided with rows of at least kMinRun elements (rows_v2_sum)
  elements,  // spec v2, strided with shorter rows (elements_v2_sum)
};

/// One block of a batch: CTAs [first_cta, first_cta + ctas) of the launch work on it.
struct BatchSegment {
  const unsigned char* data;
  std::uint64_t first;  // global index of element 0
  DenseSplit split;     // dense
  std::uint64_t* sum;
  std::int64_t total;  // strided: elements
  std::uint32_t first_cta;
  std::uint32_t ctas;
  std::uint8_t elem_size;
  std::uint8_t spec;
  SegmentKind kind;
  std::uint8_t ndims;  // strided: its dims are the batch's dims[dims_at, dims_at + ndims)
  std::uint32_t dims_at;
};

/// A strided block of a batch seen as a LaunchPlan (what locate() and the bodies read), its dims
/// in the batch's table.
struct PlanView {
  const unsigned char* data;
  std::int32_t ndims;
  std::int64_t total;
  std::uint64_t global_base;
  const Dim* dims;
};

/// The blocks of one launch, passed by value as the kernel's parameter (up to 32 KiB on sm_70+
/// with CUDA 12.1+): no device table to allocate and copy, a pageable host-to-device copy being
/// one the driver may serialise with the stream, so that enqueueing a batch would wait for the
/// work before it. The driver copies the whole parameter block at every launch, so a batch
/// takes the smallest capacity that holds its blocks (0.7 KiB for up to 4, 21 KiB for 256).
/// Strided blocks share one table of dims; one that does not fit goes in the next launch.
constexpr std::uint32_t kSegmentsPerLaunch = 256;
constexpr std::uint32_t dims_for(std::uint32_t capacity) {
  return capacity <= 4 ? 16 : capacity <= 16 ? 32 : capacity <= 64 ? 64 : 128;
}
template <std::uint32_t Capacity>
struct HashBatch {
  std::uint32_t n;
  std::uint32_t ndims;  // dims used
  BatchSegment segs[Capacity];
  Dim dims[dims_for(Capacity)];
};
static_assert(sizeof(HashBatch<kSegmentsPerLaunch>) <= 32000, "kernel parameters are limited to 32 KiB");

/// The share of virtual CTA `vcta` of a batch: it finds its block by binary search (first_cta
/// ascending); the block, so its kind and element size, is uniform across a CTA.
template <std::uint32_t Capacity>
__device__ __forceinline__ void batch_cta(const HashBatch<Capacity>& batch, std::uint32_t vcta) {
  std::uint32_t lo = 0, hi = batch.n;  // the last segment whose first_cta <= vcta
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    if (batch.segs[mid].first_cta <= vcta)
      lo = mid;
    else
      hi = mid;
  }
  const BatchSegment& seg = batch.segs[lo];
  const std::uint64_t cta = vcta - seg.first_cta;
  std::uint64_t acc = 0;
  if (seg.kind == SegmentKind::dense) {
    const std::uint64_t tid = cta * kThreads + threadIdx.x;
    const std::uint64_t nthreads = static_cast<std::uint64_t>(seg.ctas) * kThreads;
    switch (seg.elem_size) {
      case 1: acc = dense_sum_spec<1>(seg.spec, seg.data, seg.first, seg.split, tid, nthreads); break;
      case 2: acc = dense_sum_spec<2>(seg.spec, seg.data, seg.first, seg.split, tid, nthreads); break;
      case 4: acc = dense_sum_spec<4>(seg.spec, seg.data, seg.first, seg.split, tid, nthreads); break;
      default: acc = dense_sum<8>(seg.data, seg.first, seg.split, tid, nthreads); break;
    }
  } else {
    const PlanView plan{seg.data, seg.ndims, seg.total, seg.first, batch.dims + seg.dims_at};
    if (seg.kind == SegmentKind::rows) {
      switch (seg.elem_size) {
        case 1: acc = rows_v2_sum<1>(plan, cta, seg.ctas); break;
        case 2: acc = rows_v2_sum<2>(plan, cta, seg.ctas); break;
        default: acc = rows_v2_sum<4>(plan, cta, seg.ctas); break;
      }
    } else {
      const auto tid = static_cast<std::int64_t>(cta * kThreads + threadIdx.x);
      const auto nthreads = static_cast<std::int64_t>(seg.ctas) * kThreads;
      switch (seg.elem_size) {
        case 1: acc = elements_v2_sum<1>(plan, tid, nthreads); break;
        case 2: acc = elements_v2_sum<2>(plan, tid, nthreads); break;
        default: acc = elements_v2_sum<4>(plan, tid, nthreads); break;
      }
    }
  }
  block_add(acc, seg.sum);
}

/// At least as many CTAs resident on an SM as the dense and rows kernels each have alone (64
/// registers a thread or fewer; 80 unbounded, three CTAs an SM): the hashes are memory-bound.
constexpr int kBatchMinCtasPerSm = 4;

/// Every block of a batch in one launch, one CTA a virtual CTA.
template <std::uint32_t Capacity>
__global__ void __launch_bounds__(kThreads, kBatchMinCtasPerSm)
    hash_batch_kernel(const __grid_constant__ HashBatch<Capacity> batch) {
  batch_cta(batch, blockIdx.x);
}

/// The same with a capped grid: each CTA takes virtual CTAs blockIdx.x, + gridDim.x, ... up to
/// `virtual_ctas` in turn (the sums are the same: each virtual CTA's threads cover the same
/// elements, and addition mod 2^64 does not depend on the order).
template <std::uint32_t Capacity>
__global__ void __launch_bounds__(kThreads, kBatchMinCtasPerSm)
    hash_batch_capped_kernel(const __grid_constant__ HashBatch<Capacity> batch, std::uint32_t virtual_ctas) {
  for (std::uint32_t v = blockIdx.x; v < virtual_ctas; v += gridDim.x) {
    batch_cta(batch, v);
    __syncthreads();  // block_add's shared sums are reused by the next virtual CTA
  }
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
std::uint64_t dense_work(const DenseSplit& split) {
  const std::uint64_t edge = split.head + split.tail;
  return split.vectors / kUnroll > edge ? split.vectors / kUnroll : edge;
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
      if (plan.ndims > 1 && plan.dims[plan.ndims - 1].extent >= kMinRun) {
        const auto rows = static_cast<std::uint64_t>(plan.total / plan.dims[plan.ndims - 1].extent);
        rows_kernel_v2<ES>
            <<<grid_size<rows_kernel_v2<ES>>(rows * 32, max_ctas), kThreads, 0, stream>>>(plan, sum);
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

namespace {

/// The kernel body a plan takes inside a batch; nullopt: it goes in a launch of its own
/// (strided under spec v1, or of 8-byte elements: their kernels stay apart, rarer than these).
std::optional<SegmentKind> batch_kind(const LaunchPlan& plan) {
  if (plan.elem_size > 8 || (plan.elem_size & (plan.elem_size - 1)) != 0) return std::nullopt;  // rejected
  if (is_dense(plan)) return SegmentKind::dense;
  if (plan.spec != 2 || plan.elem_size == 8) return std::nullopt;
  return plan.ndims > 1 && plan.dims[plan.ndims - 1].extent >= kMinRun ? SegmentKind::rows
                                                                       : SegmentKind::elements;
}

/// Work items of a plan in a batch, as the kernel bodies count them (a thread each).
std::uint64_t batch_work(const LaunchPlan& plan, SegmentKind kind, const DenseSplit& split) {
  const auto total = static_cast<std::uint64_t>(plan.total);
  switch (kind) {
    case SegmentKind::dense: return dense_work(split);
    case SegmentKind::rows: return total / static_cast<std::uint64_t>(plan.dims[plan.ndims - 1].extent) * 32;
    case SegmentKind::elements: break;
  }
  return total;
}

/// launch_shard_hash_batch with parameter blocks of `Capacity` blocks.
template <std::uint32_t Capacity>
void launch_batches(const LaunchPlan* plans, std::size_t n, std::uint64_t* const* sums, cudaStream_t s,
                    std::uint32_t max_ctas) {
  // Every capacity's grid is sized by the largest one's occupancy, as before there were several.
  const std::uint64_t full = resident_ctas<hash_batch_kernel<kSegmentsPerLaunch>>();
  constexpr std::uint32_t kDims = dims_for(Capacity);
  std::unique_ptr<HashBatch<Capacity>> batch(new HashBatch<Capacity>);  // up to 21 KiB: not on the stack
  batch->n = 0;
  batch->ndims = 0;
  std::uint64_t ctas = 0;
  const auto launch = [&] {
    if (batch->n == 0) return;
    if (max_ctas > 0 && ctas > max_ctas)
      hash_batch_capped_kernel<Capacity>
          <<<max_ctas, kThreads, 0, s>>>(*batch, static_cast<std::uint32_t>(ctas));
    else
      hash_batch_kernel<Capacity><<<static_cast<unsigned>(ctas), kThreads, 0, s>>>(*batch);
    check(cudaGetLastError(), "shard hash batch");
    batch->n = 0;
    batch->ndims = 0;
    ctas = 0;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const LaunchPlan& plan = plans[i];
    if (plan.total == 0) continue;
    const auto kind = batch_kind(plan);
    const auto strided_dims =
        kind && *kind != SegmentKind::dense ? static_cast<std::uint32_t>(plan.ndims) : 0U;
    if (!kind || strided_dims > kDims) {
      launch_shard_hash(plan, sums[i], s, max_ctas);  // a launch of its own (and bad sizes, which it rejects)
      continue;
    }
    const DenseSplit split = *kind == SegmentKind::dense
                                 ? split_dense(reinterpret_cast<std::uintptr_t>(plan.data), plan.elem_size,
                                               static_cast<std::uint64_t>(plan.total))
                                 : DenseSplit{0, 0, 0};
    const std::uint64_t needed = (batch_work(plan, *kind, split) + kThreads - 1) / kThreads;
    const auto mine = static_cast<std::uint32_t>(needed < full ? (needed > 0 ? needed : 1) : full);
    if (batch->n == Capacity || batch->ndims + strided_dims > kDims || ctas + mine > 0x7FFFFFFFU) launch();
    BatchSegment& seg = batch->segs[batch->n++];
    seg = {plan.data,
           plan.global_base,
           split,
           sums[i],
           plan.total,
           static_cast<std::uint32_t>(ctas),
           mine,
           static_cast<std::uint8_t>(plan.elem_size),
           static_cast<std::uint8_t>(plan.spec == 2 ? 2 : 1),
           *kind,
           static_cast<std::uint8_t>(strided_dims),
           batch->ndims};
    for (std::uint32_t d = 0; d < strided_dims; ++d) batch->dims[batch->ndims++] = plan.dims[d];
    ctas += mine;
  }
  launch();
}

}  // namespace

void launch_shard_hash_batch(const LaunchPlan* plans, std::size_t n, std::uint64_t* const* sums, void* stream,
                             std::uint32_t max_ctas) {
  const auto s = static_cast<cudaStream_t>(stream);
  // The smallest parameter block that holds every block of the call (n bounds them).
  if (n <= 4)
    launch_batches<4>(plans, n, sums, s, max_ctas);
  else if (n <= 16)
    launch_batches<16>(plans, n, sums, s, max_ctas);
  else if (n <= 64)
    launch_batches<64>(plans, n, sums, s, max_ctas);
  else
    launch_batches<kSegmentsPerLaunch>(plans, n, sums, s, max_ctas);
}

std::uint32_t batch_resident_ctas() {
  return static_cast<std::uint32_t>(resident_ctas<hash_batch_kernel<kSegmentsPerLaunch>>());
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
