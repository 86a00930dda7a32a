// The GPU's restatement of XXH3-64 (hash/cuda/xxh3_plan.hpp) run on the CPU against libxxhash:
// every size class (0, 1-3, 4-8, 9-16, 17-128, 129-240, long with and without a partial last
// block) and the block-sum split the kernels use. Needs no GPU: a wrong constant, offset or
// lane pairing shows here before any device time is spent.

#define XXH_STATIC_LINKING_ONLY
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <vector>

#include "hash/cuda/xxh3_plan.hpp"
#include "tests/hash/cuda_cases.hpp"

namespace gparity::hash::cuda_detail {
namespace {

Xxh3Secret secret() {
  Xxh3Secret s{};
  XXH3_generateSecret_fromSeed(s.bytes, 0);
  return s;
}

const unsigned char* bytes(const std::vector<std::byte>& v) {
  return reinterpret_cast<const unsigned char*>(v.data());
}

std::vector<std::uint64_t> sizes_across_classes() {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t n = 0; n <= 300; ++n) sizes.push_back(n);  // every short length, first long ones
  for (const std::uint64_t n : {1023ULL, 1024ULL, 1025ULL, 1087ULL, 1088ULL, 1089ULL, 2047ULL, 2048ULL,
                                2049ULL, 4096ULL + 63, 16384ULL, 16385ULL, 100000ULL, (1ULL << 20) + 13})
    sizes.push_back(n);
  return sizes;
}

TEST(Xxh3CudaPlan, ShortPathsMatchLibxxhash) {
  const auto s = secret();
  const auto data = testing::random_storage(256, 7);
  for (std::uint64_t n = 0; n <= kXxh3MidsizeMax; ++n)
    EXPECT_EQ(xxh3_short(bytes(data), n, s), XXH3_64bits(data.data(), n)) << n << " bytes";
}

TEST(Xxh3CudaPlan, BlockSplitMatchesLibxxhashAtEverySizeClass) {
  const auto s = secret();
  const auto data = testing::random_storage((1ULL << 20) + 64, 11);
  for (const std::uint64_t n : sizes_across_classes())
    EXPECT_EQ(xxh3_by_blocks(bytes(data), n, s), XXH3_64bits(data.data(), n)) << n << " bytes";
}

TEST(Xxh3CudaPlan, UnalignedStartsMatch) {
  const auto s = secret();
  const auto data = testing::random_storage(5000, 3);
  for (std::uint64_t skew = 1; skew < 16; ++skew)
    EXPECT_EQ(xxh3_by_blocks(bytes(data) + skew, 4096 + skew, s),
              XXH3_64bits(data.data() + skew, 4096 + skew));
}

TEST(Xxh3CudaPlan, ConstantInputsStillDependOnEveryBlock) {
  // Zeros and a single flipped bit in a middle block: the split must not lose a block.
  const auto s = secret();
  std::vector<std::byte> zeros(8192 + 100);
  const std::uint64_t z = xxh3_by_blocks(bytes(zeros), zeros.size(), s);
  EXPECT_EQ(z, XXH3_64bits(zeros.data(), zeros.size()));
  zeros[3000] = std::byte{1};
  EXPECT_NE(xxh3_by_blocks(bytes(zeros), zeros.size(), s), z);
  EXPECT_EQ(xxh3_by_blocks(bytes(zeros), zeros.size(), s), XXH3_64bits(zeros.data(), zeros.size()));
}

TEST(Xxh3CudaPlan, ScrambleInHalvesEqualsTheScrambleThenTheAdd) {
  // Every lane's key, values that carry across the halves and the 47-bit shift's edge.
  const auto s = secret();
  std::uint64_t x = 0x0123456789ABCDEFULL;
  const auto next = [&] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (int lane = 0; lane < kXxh3Lanes; ++lane) {
    const std::uint64_t key = xxh3_read64(s.bytes + 128 + 8 * lane);
    for (int i = 0; i < 2000; ++i) {
      std::uint64_t z = next();
      std::uint64_t add = next();
      if (i % 4 == 1) z |= 0xFFFFFFFF00000000ULL;
      if (i % 4 == 2) add = 0xFFFFFFFFFFFFFFFFULL;
      if (i % 4 == 3) z = (std::uint64_t{1} << 47) - static_cast<std::uint64_t>(i);
      const Xxh3Halves got =
          xxh3_scramble_add({static_cast<std::uint32_t>(z), static_cast<std::uint32_t>(z >> 32)}, add,
                            static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32),
                            static_cast<std::uint32_t>(kP32_1));
      ASSERT_EQ((static_cast<std::uint64_t>(got.hi) << 32) | got.lo, xxh3_scramble(z, key) + add)
          << "lane " << lane << " z " << z << " add " << add;
    }
  }
}

TEST(Xxh3CudaPlan, FullBlocksLeaveTheLastByteToTheTail) {
  EXPECT_EQ(xxh3_full_blocks(240), 0U);
  EXPECT_EQ(xxh3_full_blocks(241), 0U);
  EXPECT_EQ(xxh3_full_blocks(1024), 0U);
  EXPECT_EQ(xxh3_full_blocks(1025), 1U);
  EXPECT_EQ(xxh3_full_blocks(2048), 1U);
  EXPECT_EQ(xxh3_full_blocks(2049), 2U);
}

// What the host-finished digests (xxh3_host.hpp) are given: the block sums as block_sums_kernel
// lays them out (8 words a block) and a copy of the tail only, from xxh3_tail_start on, in a buffer
// of its own (so a read outside the tail would read other bytes, or trip a sanitizer).
TEST(Xxh3CudaPlan, DigestFromBlockSumsAndTheTailAloneMatchesLibxxhash) {
  const auto s = secret();
  const auto data = testing::random_storage((1ULL << 20) + 64, 19);
  for (const std::uint64_t n : sizes_across_classes()) {
    const unsigned char* p = bytes(data) + 1;  // an odd start, as a view's bytes may have
    std::vector<std::uint64_t> sums(xxh3_full_blocks(n) * kXxh3Lanes);
    for (std::uint64_t b = 0; b < xxh3_full_blocks(n); ++b)
      for (int j = 0; j < kXxh3Lanes; ++j)
        for (std::uint64_t st = 0; st < kXxh3StripesPerBlock; ++st) {
          const unsigned char* in = p + b * kXxh3BlockBytes + st * kXxh3StripeBytes;
          sums[b * kXxh3Lanes + static_cast<std::uint64_t>(j)] +=
              xxh3_lane_contribution(xxh3_read64(in + 8 * j), xxh3_read64(in + 8 * (j ^ 1)),
                                     xxh3_read64(s.bytes + 8 * (st + static_cast<std::uint64_t>(j))));
        }
    const std::uint64_t start = xxh3_tail_start(n);
    ASSERT_LE(start, n);
    ASSERT_LE(n - start, kXxh3BlockBytes + kXxh3StripeBytes) << n << " bytes";
    const std::vector<unsigned char> tail(p + start, p + n);
    EXPECT_EQ(xxh3_from_block_sums(sums.data(), tail.data(), n, s), XXH3_64bits(p, n)) << n << " bytes";
  }
}

TEST(Xxh3CudaPlan, TheTailStartsAtTheLastPartialBlockOrTheLastStripe) {
  EXPECT_EQ(xxh3_tail_start(0), 0U);
  EXPECT_EQ(xxh3_tail_start(240), 0U);
  EXPECT_EQ(xxh3_tail_start(241), 0U);           // no full block: the partial block is all of it
  EXPECT_EQ(xxh3_tail_start(1025), 1025U - 64);  // the last stripe reaches back into block 0
  EXPECT_EQ(xxh3_tail_start(1030), 1030U - 64);
  EXPECT_EQ(xxh3_tail_start(2048), 1024U);  // a whole last block: its first stripe starts it
  EXPECT_EQ(xxh3_tail_start(2049), 2049U - 64);
}

}  // namespace
}  // namespace gparity::hash::cuda_detail
