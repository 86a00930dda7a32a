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
#include <optional>
#include <span>
#include <string_view>

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

/// Which definition of the term an element contributes (docs/hashing.md). Every record that
/// carries a shard hash names its spec; a hash with no spec named is v1.
enum class ShardSpec : std::uint8_t { V1 = 1, V2 = 2 };

/// "v1" / "v2".
constexpr std::string_view shard_spec_name(ShardSpec spec) noexcept {
  return spec == ShardSpec::V2 ? "v2" : "v1";
}
/// "v1", "v2" (also "1", "2"); nullopt for anything else.
std::optional<ShardSpec> parse_shard_spec(std::string_view text) noexcept;

/// Spec v2's constants: the low words of "gparity2" and of the golden-ratio step (odd, so the
/// 32-bit keys of 2^32 consecutive indices are all different).
inline constexpr std::uint32_t kV2KeySeed = 0x69747932U;
inline constexpr std::uint32_t kV2KeyStep = 0x7F4A7C15U;

/// Spec v2's 32-bit key of a global index: (kV2KeySeed + i * kV2KeyStep) mod 2^32.
constexpr std::uint32_t v2_key(std::uint64_t global_index) noexcept {
  return kV2KeySeed + static_cast<std::uint32_t>(global_index) * kV2KeyStep;
}

/// mix_v2(index, bits): the term one element of `elem_size` bytes contributes under spec v2.
/// 1-, 2- and 4-byte elements: x = (key + bits) mod 2^32, term = x * x (exact in 64 bits, so
/// injective in bits: one 32x32->64 multiply an element). 8-byte elements: v1's term.
constexpr std::uint64_t mix_v2(std::uint64_t global_index, std::uint64_t bits,
                               std::size_t elem_size) noexcept {
  if (elem_size == 8) return mix(global_index, bits);
  const std::uint32_t x = v2_key(global_index) + static_cast<std::uint32_t>(bits);
  return static_cast<std::uint64_t>(x) * x;
}

/// The term of `spec`.
constexpr std::uint64_t mix_spec(ShardSpec spec, std::uint64_t global_index, std::uint64_t bits,
                                 std::size_t elem_size) noexcept {
  return spec == ShardSpec::V2 ? mix_v2(global_index, bits, elem_size) : mix(global_index, bits);
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
  /// The definition hashed; v1 unless the caller asks for v2.
  ShardSpec spec = ShardSpec::V1;
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
/// shard_hash_run under `spec` (v1: the function above).
std::uint64_t shard_hash_run(ShardSpec spec, const std::byte* data, std::size_t elem_size, std::size_t count,
                             std::uint64_t first_global_index) noexcept;
/// The same for `count` elements `stride` elements apart (a row of a transposed block), global
/// indices consecutive from `first_global_index`: no divisions, one term an element.
std::uint64_t shard_hash_strided_run(ShardSpec spec, const std::byte* data, std::size_t elem_size,
                                     std::size_t count, std::int64_t stride,
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
/// The spec v2 kernels, likewise.
std::uint64_t shard_hash_run_v2_at(SimdLevel level, const std::byte* data, std::size_t elem_size,
                                   std::size_t count, std::uint64_t first_global_index) noexcept;

}  // namespace detail

}  // namespace gparity::hash
