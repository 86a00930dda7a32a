#pragma once
// Internal to hash/cuda: what the host planner hands the CUDA kernels, and the per-element math
// both sides share. Plain C++17 with no CUDA headers, so it compiles in .cu files (nvcc, C++17),
// in host .cpp files (C++20) and in the CPU-only tests that check the index math without a GPU.
// mix_at() re-expresses hash::mix (docs/hashing.md); tests pin it to the CPU definition.

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#if defined(__CUDACC__)
#define GPARITY_HD __host__ __device__ __forceinline__
#else
#define GPARITY_HD inline
#endif

namespace gparity::hash {

/// A CUDA runtime call failed, or a pointer given as device memory is not device memory.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace cuda_detail {

/// PyTorch allows 25 dims; after coalescing a block never has more dims than it started with.
inline constexpr int kMaxDims = 25;

struct Dim {
  std::int64_t extent;
  std::int64_t local_stride;    // elements
  std::uint64_t global_stride;  // elements of the global row-major tensor
};

/// A block reduced to coalesced dims, outermost first; the innermost dim always has global
/// stride 1 (consecutive global indices), as in hash/block_walk.
struct LaunchPlan {
  const unsigned char* data;  // device address of local element [0, ..., 0]
  std::uint32_t elem_size;    // 1, 2, 4 or 8
  std::int32_t ndims;         // 1 .. kMaxDims
  std::uint32_t spec;         // 1 or 2: hash::ShardSpec, the definition hashed (0 reads as 1)
  std::int64_t total;         // elements in the block
  std::uint64_t global_base;  // global flat index of local element [0, ..., 0]
  Dim dims[kMaxDims];
};

inline constexpr std::uint64_t kSeed = 0x6770617269747931ULL;
inline constexpr std::uint64_t kStep = 0x9E3779B97F4A7C15ULL;
inline constexpr std::uint32_t kR1 = 0x85EBCA6BU;
inline constexpr std::uint32_t kR2 = 0xC2B2AE35U;
inline constexpr std::uint32_t kR3 = 0x27D4EB2FU;

GPARITY_HD constexpr std::uint32_t round_fn(std::uint32_t v, std::uint32_t k) {
  const std::uint64_t p = static_cast<std::uint64_t>(v) * k;  // one IMAD.WIDE.U32
  return static_cast<std::uint32_t>(p) ^ static_cast<std::uint32_t>(p >> 32);
}

/// feistel_mix(key ^ bits) with the word already split into halves, and its result's halves
/// (kernels that sum the halves apart take them so).
struct Halves {
  std::uint32_t hi, lo;
};
GPARITY_HD constexpr Halves mix_pair(std::uint32_t hi, std::uint32_t lo) {
  hi ^= round_fn(lo, kR1);
  lo ^= round_fn(hi, kR2);
  hi ^= round_fn(lo, kR3);
  return {hi, lo};
}
GPARITY_HD constexpr std::uint64_t mix_halves(std::uint32_t hi, std::uint32_t lo) {
  const Halves h = mix_pair(hi, lo);
  return (static_cast<std::uint64_t>(h.hi) << 32) | h.lo;
}

/// The term one element contributes: mix(global_index, bits) of the spec.
GPARITY_HD constexpr std::uint64_t mix_at(std::uint64_t global_index, std::uint64_t bits) {
  const std::uint64_t x = (kSeed + global_index * kStep) ^ bits;
  return mix_halves(static_cast<std::uint32_t>(x >> 32), static_cast<std::uint32_t>(x));
}

/// Spec v2 (docs/hashing.md; tests pin these to hash::v2_key / hash::mix_v2): the 32-bit key
/// of a global index, and the term of an element of es bytes (8-byte elements: v1's term).
inline constexpr std::uint32_t kV2Seed = 0x69747932U;
inline constexpr std::uint32_t kV2Step = 0x7F4A7C15U;
GPARITY_HD constexpr std::uint32_t v2_key_at(std::uint64_t global_index) {
  return kV2Seed + static_cast<std::uint32_t>(global_index) * kV2Step;
}
GPARITY_HD constexpr std::uint64_t mix_v2_at(std::uint64_t global_index, std::uint64_t bits,
                                             std::uint32_t es) {
  if (es == 8) return mix_at(global_index, bits);
  const std::uint32_t x = v2_key_at(global_index) + static_cast<std::uint32_t>(bits);
  return static_cast<std::uint64_t>(x) * x;
}

struct Location {
  std::int64_t local;    // element offset from plan.data
  std::uint64_t global;  // global flat index
};

/// Where local flat element `flat` (row-major over the block's shape) lives. `Plan`: a
/// LaunchPlan, or a view of one whose dims live elsewhere (a batch launch's table of them).
template <class Plan>
GPARITY_HD Location locate(const Plan& p, std::int64_t flat) {
  const Dim& in = p.dims[p.ndims - 1];
  std::int64_t row = flat / in.extent;
  const std::int64_t col = flat - row * in.extent;
  Location loc{col * in.local_stride, p.global_base + static_cast<std::uint64_t>(col) * in.global_stride};
  for (int d = p.ndims - 2; d >= 0; --d) {
    const std::int64_t next = row / p.dims[d].extent;
    const std::int64_t idx = row - next * p.dims[d].extent;
    row = next;
    loc.local += idx * p.dims[d].local_stride;
    loc.global += static_cast<std::uint64_t>(idx) * p.dims[d].global_stride;
  }
  return loc;
}

/// A dense run cut into an unaligned head, 16-byte vectors and a tail, so the main loop does
/// only aligned 16-byte loads. `address` must be a multiple of `elem_size`.
struct DenseSplit {
  std::uint64_t head;     // elements before the first 16-byte boundary
  std::uint64_t vectors;  // 16-byte vectors after the head
  std::uint64_t tail;     // elements after the last whole vector
};

GPARITY_HD constexpr DenseSplit split_dense(std::uint64_t address, std::uint32_t elem_size,
                                            std::uint64_t count) {
  const std::uint64_t misalign = address % 16;
  std::uint64_t head = misalign ? (16 - misalign) / elem_size : 0;
  if (head > count) head = count;
  const std::uint64_t per_vector = 16 / elem_size;
  const std::uint64_t vectors = (count - head) / per_vector;
  return DenseSplit{head, vectors, count - head - vectors * per_vector};
}

/// True when the block is one dense run the vector kernel can read with aligned loads.
GPARITY_HD bool is_dense(const LaunchPlan& p) {
  return p.ndims == 1 && (p.dims[0].local_stride == 1 || p.total == 1) &&
         reinterpret_cast<std::uintptr_t>(p.data) % p.elem_size == 0;
}

// Implemented in shard_hash_kernel.cu. `stream` is a cudaStream_t (nullptr: the legacy default
// stream). Every function throws CudaError when a CUDA call fails.

/// Enqueues the hash of a non-empty plan, adding it into *device_sum (mod 2^64). `max_ctas` > 0
/// caps the launch's grid at that many CTAs (each thread then walks more of the block).
void launch_shard_hash(const LaunchPlan& plan, std::uint64_t* device_sum, void* stream,
                       std::uint32_t max_ctas = 0);
/// Enqueues the hashes of n plans, plan i's added into *sums[i]: the dense plans and the strided
/// ones of spec v2 with 1-, 2- or 4-byte elements in one launch (more when they outgrow its
/// parameter block), one launch for each other strided plan; empty plans are skipped. `max_ctas`
/// > 0 caps every launch's grid (the batch launch's CTAs then take its segments' shares in turn),
/// so that the hashes occupy only part of the GPU beside other work.
void launch_shard_hash_batch(const LaunchPlan* plans, std::size_t n, std::uint64_t* const* sums, void* stream,
                             std::uint32_t max_ctas = 0);
/// CTAs of the batch kernel that fit on the current device at once (SMs x CTAs per SM).
std::uint32_t batch_resident_ctas();
/// Hashes a plan and waits for the result.
std::uint64_t shard_hash_sync(const LaunchPlan& plan, void* stream);
/// Throws CudaError unless `p` is device (or managed) memory of the current context.
void require_device_pointer(const void* p);
/// Number of CUDA devices; 0 when there is no driver or no device.
int device_count() noexcept;

// Implemented in xxh3_kernel.cu.

/// `waiting` waits, on the device, for the work `on` has enqueued so far (an event between them).
void join_streams(void* waiting, void* on);
/// The current device's side stream for the XXH3 chains (non-blocking, made once, never freed).
void* side_stream();
/// True while `stream` is being captured into a CUDA graph.
bool stream_capturing(void* stream);
/// Raises the current device's default memory pool's release threshold, once a device, so that
/// XXH3's stream-ordered scratch under graph capture keeps its pages. launch_xxh3 calls it under
/// capture; a caller that captures in cudaStreamCaptureModeThreadLocal calls it before it begins
/// (the pool's attributes cannot be read or set while the thread captures in that mode).
void keep_pool_memory();

}  // namespace cuda_detail
}  // namespace gparity::hash
