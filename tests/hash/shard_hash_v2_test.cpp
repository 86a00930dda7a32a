// Spec v2 of the shard-invariant hash (docs/hashing.md): known answers from the independent
// Python reference, every CPU kernel against the definition, and the properties the spec keeps.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "hash/shard_hash.hpp"
#include "tests/hash/shard_hash_properties.hpp"

namespace gparity::hash {
namespace {

using testing::iota_bytes;
using testing::random_bytes;

using Shape = std::vector<std::int64_t>;

std::uint64_t bits_at(const std::vector<std::byte>& raw, std::size_t i, std::size_t es) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, raw.data() + i * es, es);  // little-endian zero-extension
  return bits;
}

ShardHashOptions v2_options(unsigned threads = 1) {
  ShardHashOptions o;
  o.spec = ShardSpec::V2;
  o.max_threads = threads;
  o.parallel_threshold_bytes = 1;
  return o;
}

std::uint64_t v2(const std::vector<std::byte>& raw, std::size_t es) {
  return shard_hash_contiguous(raw, es, v2_options());
}

// Known answers printed by `scripts/shard_hash_v2_ref.py --vectors`, an independent
// implementation of the spec.
TEST(ShardHashV2, KnownAnswerVectors) {
  EXPECT_EQ(mix_v2(0, 0, 4), 0x2b70c06912b04dc4ULL);
  EXPECT_EQ(mix_v2(1, 0, 4), 0xd39aab01b064f9b1ULL);
  EXPECT_EQ(mix_v2(0, 1, 4), 0x2b70c069e5994029ULL);
  EXPECT_EQ(mix_v2(12345, 0x3f800000, 4), 0xefdf3ce035457041ULL);
  EXPECT_EQ(mix_v2(~0ULL, 0xFFFFFFFFULL, 4), 0xd630c99a3d385b10ULL);
  EXPECT_EQ(mix_v2(7, 0xBF80, 2), 0xcbf1c6c21889b499ULL);
  EXPECT_EQ(mix_v2((1ULL << 40) + 3, 0xFF, 1), 0xd10893d29ab47100ULL);
  EXPECT_EQ(mix_v2(0, 0, 8), 0x47a12db914b07203ULL);  // 8-byte elements: v1's term
  EXPECT_EQ(mix_v2(5, ~0ULL, 8), 0xf146b6c254d628a3ULL);
  const auto raw = iota_bytes(256);
  EXPECT_EQ(v2(raw, 1), 0x51997eb19a931e00ULL);
  EXPECT_EQ(v2(raw, 2), 0x7e35040e8ed8d9c0ULL);
  EXPECT_EQ(v2(raw, 4), 0x99ed5c5ca42cbfe0ULL);
  EXPECT_EQ(v2(raw, 8), 0xa7df9106e5b917bbULL);
  EXPECT_EQ(shard_hash_run(ShardSpec::V2, raw.data(), 4, 64, 1000), 0x0c33c322d11365e0ULL);
  EXPECT_EQ(shard_hash_run(ShardSpec::V2, raw.data(), 2, 128, (1ULL << 32) - 5), 0x6b02684fd6ddd7c0ULL);
}

TEST(ShardHashV2, SpecNamesRoundTrip) {
  EXPECT_EQ(parse_shard_spec("v1"), ShardSpec::V1);
  EXPECT_EQ(parse_shard_spec("2"), ShardSpec::V2);
  EXPECT_EQ(parse_shard_spec(shard_spec_name(ShardSpec::V2)), ShardSpec::V2);
  EXPECT_FALSE(parse_shard_spec("v3").has_value());
  EXPECT_FALSE(parse_shard_spec("").has_value());
}

// The Python reference run on random bytes here (not only the pinned vectors above).
TEST(ShardHashV2, AgreesWithThePythonReferenceOnRandomBytes) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const auto raw = random_bytes(8 * 301, 42);
  const auto path = std::filesystem::temp_directory_path() / ("gparity-v2-ref-" + std::to_string(::getpid()));
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    const std::uint64_t first = es == 2 ? (1ULL << 32) - 77 : 12345;
    const std::string cmd = std::string("/usr/bin/python3 ") + GPARITY_SOURCE_DIR +
                            "/scripts/shard_hash_v2_ref.py " + path.string() + " " + std::to_string(es) +
                            " " + std::to_string(first);
    FILE* pipe = ::popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char line[64] = {};
    const bool got = std::fgets(line, sizeof line, pipe) != nullptr;
    EXPECT_EQ(::pclose(pipe), 0) << cmd;
    ASSERT_TRUE(got) << cmd;
    EXPECT_EQ(std::stoull(line, nullptr, 16),
              shard_hash_run(ShardSpec::V2, raw.data(), es, raw.size() / es, first))
        << "elem size " << es;
  }
  std::filesystem::remove(path);
}

TEST(ShardHashV2, EverySimdLevelThisCpuRunsMatchesTheDefinition) {
  // Counts around every kernel's block (AVX2: 16 f32 / 32 bf16 / 64 u8 elements; AVX-512 twice
  // that), starts off any alignment, and first indices whose 32-bit keys wrap inside the run.
  using detail::SimdLevel;
  std::vector<SimdLevel> levels = {SimdLevel::Scalar};
  if (detail::best_simd_level() >= SimdLevel::Avx2) levels.push_back(SimdLevel::Avx2);
  if (detail::best_simd_level() >= SimdLevel::Avx512) levels.push_back(SimdLevel::Avx512);
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    const auto raw = random_bytes(es * 1300, 300 + es);
    for (const std::size_t count : {0UL, 1UL, 15UL, 16UL, 17UL, 31UL, 32UL, 33UL, 63UL, 64UL, 65UL, 127UL,
                                    128UL, 129UL, 255UL, 256UL, 257UL, 1037UL}) {
      for (const std::uint64_t first : {0ULL, 5ULL, (1ULL << 32) - 100, (1ULL << 40) + 3}) {
        std::uint64_t expect = 0;
        for (std::size_t i = 0; i < count; ++i) expect += mix_v2(first + i, bits_at(raw, i + 3, es), es);
        for (const auto level : levels) {
          EXPECT_EQ(detail::shard_hash_run_v2_at(level, raw.data() + 3 * es, es, count, first), expect)
              << "level " << static_cast<int>(level) << ", elem size " << es << ", count " << count
              << ", first " << first;
        }
      }
    }
  }
}

TEST(ShardHashV2, TermIsInjectiveInTheBitsForAFixedIndex) {
  // Exhaustive for 1- and 2-byte elements at a few indices; 4-byte: x = key + b is a bijection of
  // b mod 2^32 and x * x < 2^64 is exact, so distinct x give distinct squares (checked on a band).
  for (const std::uint64_t index : {0ULL, 1ULL, 77777ULL, (1ULL << 33) + 9}) {
    for (const std::size_t es : {1UL, 2UL}) {
      std::vector<std::uint64_t> terms;
      for (std::uint64_t b = 0; b < (1ULL << (8 * es)); ++b) terms.push_back(mix_v2(index, b, es));
      std::sort(terms.begin(), terms.end());
      EXPECT_EQ(std::adjacent_find(terms.begin(), terms.end()), terms.end())
          << "es " << es << " index " << index;
    }
    std::vector<std::uint64_t> terms;
    const std::uint32_t wrap = 0U - v2_key(index);  // the b where x wraps to 0
    for (std::uint64_t b = wrap - 50000; b != static_cast<std::uint32_t>(wrap + 50000);
         b = static_cast<std::uint32_t>(b + 1))
      terms.push_back(mix_v2(index, b, 4));
    std::sort(terms.begin(), terms.end());
    EXPECT_EQ(std::adjacent_find(terms.begin(), terms.end()), terms.end()) << "es 4 index " << index;
  }
}

TEST(ShardHashV2, EverySingleBitFlipChangesTheHash) {
  testing::expect_every_bit_flip_changes(v2);
}

TEST(ShardHashV2, SwappingTwoDifferentElementsChangesTheHash) {
  testing::expect_swaps_of_different_elements_change(v2);
}

// Swaps built to hit the spec's weak spots (docs/hashing.md, "Spec v2: why it keeps each
// property"): values differing only in the sign bit or in one high bit, at index distances that
// are powers of two up to 2^31 (where the 2-adic argument no longer guarantees a change), every
// element size, from random positions. The difference of the two sums is computed term by term.
TEST(ShardHashV2, AdversarialSwapsChangeTheHash) {
  std::mt19937_64 rng(7);
  int tried = 0;
  for (const std::size_t es : {1UL, 2UL, 4UL}) {
    const unsigned width = 8 * static_cast<unsigned>(es);
    for (unsigned log_d = 0; log_d < 32; ++log_d) {
      for (unsigned bit = 0; bit < width; ++bit) {
        for (int rep = 0; rep < 4; ++rep) {
          const std::uint64_t i = rng() >> 20;
          const std::uint64_t j = i + (1ULL << log_d);
          const std::uint64_t u = rng() & ((1ULL << width) - 1);
          const std::uint64_t v = u ^ (1ULL << bit);
          const std::uint64_t before = mix_v2(i, u, es) + mix_v2(j, v, es);
          const std::uint64_t after = mix_v2(i, v, es) + mix_v2(j, u, es);
          EXPECT_NE(before, after) << "es " << es << " i " << i << " distance 2^" << log_d << " bit " << bit;
          ++tried;
        }
      }
    }
  }
  EXPECT_EQ(tried, 4 * 32 * (8 + 16 + 32));
}

TEST(ShardHashV2, BlocksAlongAnyDimensionAtOddBoundariesSumToTheFullHash) {
  std::mt19937 rng(5);
  const std::vector<Shape> shapes = {{97}, {13, 17}, {5, 7, 11}, {3, 4, 5, 6}, {3, 1031}};
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    for (const Shape& global : shapes) {
      const auto numel = std::accumulate(global.begin(), global.end(), std::int64_t{1}, std::multiplies<>());
      const auto full = random_bytes(static_cast<std::size_t>(numel) * es, rng());
      const std::uint64_t want = v2(full, es);
      Shape strides(global.size(), 1);
      for (std::size_t d = global.size(); d-- > 1;) strides[d - 1] = strides[d] * global[d];
      for (std::size_t dim = 0; dim < global.size(); ++dim) {
        for (int parts = 1; parts <= 9; ++parts) {
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
            std::int64_t first = 0;
            for (std::size_t d = 0; d < global.size(); ++d) first += off[d] * strides[d];
            const BlockView view{full.data() + first * static_cast<std::int64_t>(es), es, blk, strides};
            sum += shard_hash(view, GlobalPlacement{off, global}, v2_options(1 + c % 3));
          }
          EXPECT_EQ(sum, want) << "es " << es << " rank " << global.size() << " dim " << dim << " parts "
                               << parts;
        }
      }
      // Flat pieces cut at every odd element boundary (DCP chunks of a flattened tensor).
      std::uint64_t sum = 0;
      std::size_t at = 0;
      for (std::size_t len = 1; at < static_cast<std::size_t>(numel); len += 2) {
        const std::size_t n = std::min(len, static_cast<std::size_t>(numel) - at);
        sum += shard_hash_run(ShardSpec::V2, full.data() + at * es, es, n, at);
        at += n;
      }
      EXPECT_EQ(sum, want) << "es " << es << " flat odd pieces";
    }
  }
}

TEST(ShardHashV2, TransposedAndStridedLayoutsGiveTheSameHash) {
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    const Shape global = {37, 45};
    const auto full = random_bytes(37 * 45 * es, 12 + es);
    std::vector<std::byte> colmajor(full.size());
    for (int i = 0; i < 37; ++i)
      for (int j = 0; j < 45; ++j) std::memcpy(&colmajor[(j * 37 + i) * es], &full[(i * 45 + j) * es], es);
    const Shape strides = {1, 37};
    const Shape zero = {0, 0};
    EXPECT_EQ(shard_hash(BlockView{colmajor.data(), es, global, strides}, GlobalPlacement{zero, global},
                         v2_options()),
              v2(full, es))
        << "es " << es;
    // A column shard read in place: columns 20..44 of the row-major tensor.
    const Shape block = {37, 25};
    const Shape offsets = {0, 20};
    const Shape row_strides = {45, 1};
    std::uint64_t expect = 0;
    for (std::size_t r = 0; r < 37; ++r)
      for (std::size_t c = 20; c < 45; ++c) expect += mix_v2(r * 45 + c, bits_at(full, r * 45 + c, es), es);
    EXPECT_EQ(shard_hash(BlockView{full.data() + 20 * es, es, block, row_strides},
                         GlobalPlacement{offsets, global}, v2_options()),
              expect);
  }
}

TEST(ShardHashV2, ResultIsIndependentOfThreadCountAndV1IsUnchanged) {
  const auto full = random_bytes(1000 * 333 * 2, 13);
  const std::int64_t n = 1000 * 333;
  const Shape shape = {n};
  const std::uint64_t one =
      shard_hash(BlockView{full.data(), 2, shape, {}}, GlobalPlacement{}, v2_options(1));
  for (unsigned t = 2; t <= 5; ++t)
    EXPECT_EQ(shard_hash(BlockView{full.data(), 2, shape, {}}, GlobalPlacement{}, v2_options(t)), one);
  // Spec v1 stays the default and a different function.
  EXPECT_NE(shard_hash_contiguous(full, 2), one);
  EXPECT_EQ(shard_hash_contiguous(full, 2),
            shard_hash_run(ShardSpec::V1, full.data(), 2, static_cast<std::size_t>(n), 0));
}

TEST(ShardHashV2, EmptyIsZeroAndAScalarIsIndexZero) {
  EXPECT_EQ(shard_hash_contiguous({}, 2, v2_options()), 0U);
  EXPECT_EQ(shard_hash_run(ShardSpec::V2, nullptr, 4, 0, 99), 0U);
  const float v = 1.0F;
  EXPECT_EQ(shard_hash(BlockView{reinterpret_cast<const std::byte*>(&v), 4, {}, {}}, GlobalPlacement{},
                       v2_options()),
            mix_v2(0, 0x3f800000, 4));
}

}  // namespace
}  // namespace gparity::hash
