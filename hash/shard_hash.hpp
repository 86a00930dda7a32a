#pragma once
// Shard-invariant tensor hash (spec: docs/hashing.md).
//
//   H(tensor) = sum over elements e of mix(global_flat_index(e), bits(e))  (mod 2^64)
//
// Each rank hashes its local block with the elements' global indices; the partial hashes of
// disjoint blocks that tile a tensor add up (mod 2^64) to the hash of the whole tensor, so runs
// with different parallel layouts compare without a gather. mix is bijective in the element bits
// for every index, so changing any single element always changes H.

#include <cstddef>
#include <cstdint>
#include <span>

#include "hash/block_view.hpp"

namespace gparity::hash {

/// The constants of the v1 mixer; changing any of them changes every hash ever recorded.
inline constexpr std::uint64_t kShardSeed = 0x6770617269747931ULL;  // "gparity1"
inline constexpr std::uint64_t kIndexStep = 0x9E3779B97F4A7C15ULL;  // odd: keys differ per index
inline constexpr std::uint64_t kRound1 = 0x85EBCA6BULL;
inline constexpr std::uint64_t kRound2 = 0xC2B2AE35ULL;
inline constexpr std::uint64_t kRound3 = 0x27D4EB2FULL;

/// Per-index key: distinct for every index below 2^64 because kIndexStep is odd.
constexpr std::uint64_t index_key(std::uint64_t global_index) noexcept {
  return kShardSeed + global_index * kIndexStep;
}

/// Round function of the Feistel mixer: both halves of a 32x32->64 product folded together, so
/// every input bit reaches many output bits (the low half alone would let low bits stay local).
constexpr std::uint32_t feistel_round(std::uint32_t v, std::uint64_t k) noexcept {
  const std::uint64_t p = static_cast<std::uint64_t>(v) * k;
  return static_cast<std::uint32_t>(p) ^ static_cast<std::uint32_t>(p >> 32);
}

/// Bijective mixer of one 64-bit word: three Feistel rounds over its 32-bit halves (each round
/// is invertible whatever the round function), one 32x32->64 multiply per round: one vpmuludq
/// per lane on AVX2, one IMAD.WIDE on a GPU.
constexpr std::uint64_t feistel_mix(std::uint64_t x) noexcept {
  auto hi = static_cast<std::uint32_t>(x >> 32);
  auto lo = static_cast<std::uint32_t>(x);
  hi ^= feistel_round(lo, kRound1);
  lo ^= feistel_round(hi, kRound2);
  hi ^= feistel_round(lo, kRound3);
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

/// mix(index, bits): the term one element contributes. bits are the element's raw bits,
/// zero-extended to 64.
constexpr std::uint64_t mix(std::uint64_t global_index, std::uint64_t bits) noexcept {
  return feistel_mix(index_key(global_index) ^ bits);
}

/// Where a local block sits inside its global tensor.
struct GlobalPlacement {
  std::span<const std::int64_t> offsets;       // per dim, start of the block in the global tensor
  std::span<const std::int64_t> global_shape;  // per dim, the full tensor's extent
};

struct ShardHashOptions {
  /// Threads to use; 0 = std::thread::hardware_concurrency(). The result never depends on it.
  unsigned max_threads = 0;
  /// Blocks smaller than this are hashed on the calling thread.
  std::size_t parallel_threshold_bytes = std::size_t{16} << 20;
};

/// Partial hash of one block. Throws BlockError if the block does not fit its placement.
std::uint64_t shard_hash(const BlockView& block, const GlobalPlacement& placement,
                         const ShardHashOptions& options = {});

/// Hash of a whole tensor held in one contiguous buffer (offsets 0, global = local shape).
std::uint64_t shard_hash_contiguous(std::span<const std::byte> bytes, std::size_t elem_size,
                                    const ShardHashOptions& options = {});

/// The inner kernel: `count` consecutive elements whose global indices start at
/// `first_global_index`. Exposed for the benchmark and for callers with their own iteration.
std::uint64_t shard_hash_run(const std::byte* data, std::size_t elem_size, std::size_t count,
                             std::uint64_t first_global_index) noexcept;

namespace detail {

/// The CPU kernels of shard_hash_run: one result whatever the level.
enum class SimdLevel { Scalar, Avx2, Avx512 };
/// The widest level this CPU runs, which shard_hash_run uses.
SimdLevel best_simd_level() noexcept;
/// shard_hash_run at `level` (at most best_simd_level()): tests check every level the CPU has,
/// since shard_hash_run itself only ever reaches the widest.
std::uint64_t shard_hash_run_at(SimdLevel level, const std::byte* data, std::size_t elem_size,
                                std::size_t count, std::uint64_t first_global_index) noexcept;

}  // namespace detail

}  // namespace gparity::hash
