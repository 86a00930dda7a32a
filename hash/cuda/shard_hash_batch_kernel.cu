// The shard-invariant hash of many blocks in one CUDA launch (launch_shard_hash_batch): dense
// blocks and the strided ones of spec v2 with 1-, 2- and 4-byte elements, passed by value as the
// kernel's parameter; each CTA finds its block and runs that block's body (shard_hash_device.cuh).
// Other strided blocks go one launch each (shard_hash_kernel.cu).

#include <cuda_runtime.h>

#include <memory>
#include <optional>

#include "hash/cuda/launch_plan.hpp"
#include "hash/cuda/shard_hash_device.cuh"

namespace gparity::hash::cuda_detail {
namespace {

/// Which kernel body a batch's block takes.
enum class SegmentKind : std::uint8_t {
  dense,     // one dense run (dense_sum)
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
      default: acc = dense_sum<8, false>(seg.data, seg.first, seg.split, tid, nthreads); break;
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

/// The kernel body a plan takes inside a batch; nullopt: it goes in a launch of its own
/// (strided under spec v1, or of 8-byte elements: their kernels stay apart, rarer than these).
std::optional<SegmentKind> batch_kind(const LaunchPlan& plan) {
  if (plan.elem_size > 8 || (plan.elem_size & (plan.elem_size - 1)) != 0) return std::nullopt;  // rejected
  if (is_dense(plan)) return SegmentKind::dense;
  if (plan.spec != 2 || plan.elem_size == 8) return std::nullopt;
  return takes_rows(plan) ? SegmentKind::rows : SegmentKind::elements;
}

/// Work items of a plan in a batch, as the kernel bodies count them (a thread each).
std::uint64_t batch_work(const LaunchPlan& plan, SegmentKind kind, const DenseSplit& split) {
  const auto total = static_cast<std::uint64_t>(plan.total);
  switch (kind) {
    case SegmentKind::dense: return dense_work(split);
    case SegmentKind::rows: return rows_work(plan);
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

}  // namespace gparity::hash::cuda_detail
