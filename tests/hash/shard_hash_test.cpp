#include "hash/shard_hash.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "tests/hash/shard_hash_properties.hpp"

namespace gparity::hash {
namespace {

using testing::iota_bytes;
using testing::random_bytes;

using Shape = std::vector<std::int64_t>;

Shape row_major_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Hash of the block [offsets, offsets + block_shape) of a full row-major tensor, read in place
// through strides (a non-contiguous view of the full buffer).
std::uint64_t block_hash(const std::vector<std::byte>& full, std::size_t es, const Shape& global,
                         const Shape& offsets, const Shape& block_shape, unsigned threads = 1) {
  const Shape strides = row_major_strides(global);
  std::int64_t first = 0;
  for (std::size_t d = 0; d < global.size(); ++d) first += offsets[d] * strides[d];
  const BlockView view{full.data() + first * static_cast<std::int64_t>(es), es, block_shape, strides};
  ShardHashOptions opt;
  opt.max_threads = threads;
  opt.parallel_threshold_bytes = 1;
  return shard_hash(view, GlobalPlacement{offsets, global}, opt);
}

// Known answers computed by scripts/shard_hash_ref.py, an independent implementation of the spec.
TEST(ShardHash, KnownAnswerVectors) {
  EXPECT_EQ(mix(0, 0), 0x47a12db914b07203ULL);
  EXPECT_EQ(mix(1, 0), 0xb5a30027524a6956ULL);
  EXPECT_EQ(mix(0, 1), 0x9c98188b117e03feULL);
  EXPECT_EQ(mix(12345, 0x3f800000), 0x4e342170f698bbf6ULL);
  EXPECT_EQ(mix(~0ULL, ~0ULL), 0xb9bd892b8f1714b4ULL);
  const auto raw = iota_bytes(256);
  EXPECT_EQ(shard_hash_contiguous(raw, 1), 0x5a355da595547769ULL);
  EXPECT_EQ(shard_hash_contiguous(raw, 2), 0xd7705ca5cf882adaULL);
  EXPECT_EQ(shard_hash_contiguous(raw, 4), 0xe492a908823e6982ULL);
  EXPECT_EQ(shard_hash_contiguous(raw, 8), 0xa7df9106e5b917bbULL);
  EXPECT_EQ(shard_hash_run(raw.data(), 4, 64, 1000), 0xe9b1f012282784caULL);
}

TEST(ShardHash, RunKernelMatchesScalarDefinition) {
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    const auto raw = random_bytes(es * 1037, es);
    std::uint64_t expect = 0;
    for (std::size_t i = 0; i < 1037; ++i) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, raw.data() + i * es, es);  // little-endian zero-extension
      expect += mix(77 + i, bits);
    }
    EXPECT_EQ(shard_hash_run(raw.data(), es, 1037, 77), expect) << "elem size " << es;
  }
}

TEST(ShardHash, EverySimdLevelThisCpuRunsMatchesTheScalarDefinition) {
  // shard_hash_run only reaches the widest kernel: on an AVX-512 machine the AVX2 one is checked
  // here alone. Counts around the kernels' 16- and 32-element blocks, and odd starts.
  using detail::SimdLevel;
  std::vector<SimdLevel> levels = {SimdLevel::Scalar};
  if (detail::best_simd_level() >= SimdLevel::Avx2) levels.push_back(SimdLevel::Avx2);
  if (detail::best_simd_level() >= SimdLevel::Avx512) levels.push_back(SimdLevel::Avx512);
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    const auto raw = random_bytes(es * 1100, es);
    for (const std::size_t count : {0UL, 1UL, 15UL, 16UL, 17UL, 31UL, 32UL, 33UL, 1037UL}) {
      for (const std::uint64_t first : {0ULL, 5ULL, (1ULL << 40) + 3}) {
        std::uint64_t expect = 0;
        for (std::size_t i = 0; i < count; ++i) {
          std::uint64_t bits = 0;
          std::memcpy(&bits, raw.data() + (i + 3) * es, es);
          expect += mix(first + i, bits);
        }
        for (const auto level : levels) {
          EXPECT_EQ(detail::shard_hash_run_at(level, raw.data() + 3 * es, es, count, first), expect)
              << "level " << static_cast<int>(level) << ", elem size " << es << ", count " << count
              << ", first " << first;
        }
      }
    }
  }
  EXPECT_EQ(levels.back(), detail::best_simd_level());
}

TEST(ShardHash, FeistelMixIsBijectiveOnSamples) {
  // Distinct inputs (here: a dense low range and a sparse high range) never collide.
  std::vector<std::uint64_t> out;
  for (std::uint64_t x = 0; x < 200000; ++x) out.push_back(feistel_mix(x));
  for (std::uint64_t x = 1; x < 50000; ++x) out.push_back(feistel_mix(x << 40));
  std::sort(out.begin(), out.end());
  EXPECT_EQ(std::adjacent_find(out.begin(), out.end()), out.end());
}

TEST(ShardHash, EverySingleBitFlipChangesTheHash) {
  testing::expect_every_bit_flip_changes(
      [](const std::vector<std::byte>& raw, std::size_t es) { return shard_hash_contiguous(raw, es); });
}

TEST(ShardHash, SwappingTwoDifferentElementsChangesTheHash) {
  testing::expect_swaps_of_different_elements_change(
      [](const std::vector<std::byte>& raw, std::size_t es) { return shard_hash_contiguous(raw, es); });
}

TEST(ShardHash, BlocksAlongAnyDimensionSumToTheFullHash) {
  std::mt19937 rng(5);
  const std::vector<Shape> shapes = {{97}, {13, 17}, {5, 7, 11}, {3, 4, 5, 6}};
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    for (const Shape& global : shapes) {
      const auto numel = std::accumulate(global.begin(), global.end(), std::int64_t{1}, std::multiplies<>());
      const auto full = random_bytes(static_cast<std::size_t>(numel) * es, rng());
      const std::uint64_t want = shard_hash_contiguous(full, es);
      for (std::size_t dim = 0; dim < global.size(); ++dim) {
        for (int parts = 1; parts <= 16; ++parts) {
          // Uneven random cut points along `dim` (some blocks may be empty).
          std::vector<std::int64_t> cuts = {0, global[dim]};
          for (int c = 1; c < parts; ++c)
            cuts.push_back(static_cast<std::int64_t>(rng() % (global[dim] + 1)));
          std::sort(cuts.begin(), cuts.end());
          std::uint64_t sum = 0;
          for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
            Shape off(global.size(), 0);
            Shape blk = global;
            off[dim] = cuts[c];
            blk[dim] = cuts[c + 1] - cuts[c];
            sum += block_hash(full, es, global, off, blk, 1 + c % 3);
          }
          EXPECT_EQ(sum, want) << "es " << es << " rank " << global.size() << " dim " << dim << " parts "
                               << parts;
        }
      }
    }
  }
}

TEST(ShardHash, TwoDimensionalMeshBlocksSumToTheFullHash) {
  // A 4x2 mesh: dim 0 split 4 ways unevenly, dim 1 split 2 ways: like FSDP x TP.
  const Shape global = {37, 23};
  const std::size_t es = 2;
  const auto full = random_bytes(37 * 23 * es, 9);
  const std::vector<std::int64_t> rows = {0, 10, 19, 30, 37};
  const std::vector<std::int64_t> cols = {0, 12, 23};
  std::uint64_t sum = 0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 2; ++c)
      sum += block_hash(full, es, global, {rows[r], cols[c]}, {rows[r + 1] - rows[r], cols[c + 1] - cols[c]});
  EXPECT_EQ(sum, shard_hash_contiguous(full, es));
}

TEST(ShardHash, NonContiguousLocalLayoutGivesTheSameHash) {
  // The same logical 6x8 block stored transposed (column-major) in local memory.
  const Shape global = {6, 8};
  const auto full = random_bytes(6 * 8 * 4, 12);
  std::vector<std::byte> colmajor(full.size());
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 8; ++j) std::memcpy(&colmajor[(j * 6 + i) * 4], &full[(i * 8 + j) * 4], 4);
  const Shape strides = {1, 6};
  const Shape zero = {0, 0};
  const BlockView view{colmajor.data(), 4, global, strides};
  EXPECT_EQ(shard_hash(view, GlobalPlacement{zero, global}), shard_hash_contiguous(full, 4));
}

TEST(ShardHash, ResultIsIndependentOfThreadCount) {
  const Shape global = {1000, 333};
  const auto full = random_bytes(1000 * 333 * 4, 13);
  const std::uint64_t one = block_hash(full, 4, global, {0, 0}, global, 1);
  for (unsigned t = 2; t <= 8; ++t) EXPECT_EQ(block_hash(full, 4, global, {0, 0}, global, t), one);
  EXPECT_EQ(block_hash(full, 4, global, {100, 0}, {700, 333}, 1),
            block_hash(full, 4, global, {100, 0}, {700, 333}, 7));
}

TEST(ShardHash, EmptyTensorsHashToZero) {
  const Shape empty = {0, 5};
  const Shape zero = {0, 0};
  EXPECT_EQ(shard_hash(BlockView{nullptr, 4, empty, {}}, GlobalPlacement{zero, empty}), 0U);
  EXPECT_EQ(shard_hash_contiguous({}, 2), 0U);
}

TEST(ShardHash, ScalarIsOneElementAtIndexZero) {
  const float v = 1.0F;
  const BlockView view{reinterpret_cast<const std::byte*>(&v), 4, {}, {}};
  EXPECT_EQ(shard_hash(view, GlobalPlacement{}), mix(0, 0x3f800000));
}

TEST(ShardHash, RejectsBlocksThatDoNotFit) {
  const auto full = random_bytes(64, 1);
  const Shape global = {4, 4};
  const Shape off = {2, 0};
  const Shape blk = {3, 4};
  EXPECT_THROW(shard_hash(BlockView{full.data(), 4, blk, {}}, GlobalPlacement{off, global}), BlockError);
  const Shape short_off = {0};
  EXPECT_THROW(shard_hash(BlockView{full.data(), 4, global, {}}, GlobalPlacement{short_off, global}),
               BlockError);
  EXPECT_THROW(shard_hash(BlockView{full.data(), 3, global, {}}, GlobalPlacement{}), BlockError);
  EXPECT_THROW(shard_hash_contiguous(std::span(full).first(7), 4), BlockError);
}

}  // namespace
}  // namespace gparity::hash
