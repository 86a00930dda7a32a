// CPU-only checks of what the CUDA kernels compute, run everywhere (CI has no GPU): the device
// mixer equals the spec's mixer, and the kernels' two ways of walking a block (dense split into
// head / 16-byte vectors / tail, and per-element locate through coalesced dims), replayed here
// over host memory, cover every element exactly once with its global index.

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "hash/cuda/shard_hash_cuda.hpp"
#include "tests/hash/cuda_cases.hpp"

namespace gparity::hash {
namespace {

using cuda_detail::LaunchPlan;

std::uint64_t bits_at(const unsigned char* p, std::size_t es) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, es);  // little-endian zero-extension, as the kernels load
  return v;
}

// The strided kernel's walk, on the host.
std::uint64_t replay_strided(const LaunchPlan& plan) {
  std::uint64_t acc = 0;
  for (std::int64_t f = 0; f < plan.total; ++f) {
    const auto loc = cuda_detail::locate(plan, f);
    acc += cuda_detail::mix_at(loc.global, bits_at(plan.data + loc.local * plan.elem_size, plan.elem_size));
  }
  return acc;
}

// The dense kernel's walk, on the host: head, whole vectors, tail.
std::uint64_t replay_dense(const LaunchPlan& plan) {
  const std::size_t es = plan.elem_size;
  const auto split = cuda_detail::split_dense(reinterpret_cast<std::uintptr_t>(plan.data), plan.elem_size,
                                              static_cast<std::uint64_t>(plan.total));
  const std::uint64_t per = 16 / es;
  EXPECT_EQ(split.head + split.vectors * per + split.tail, static_cast<std::uint64_t>(plan.total));
  EXPECT_TRUE(split.vectors == 0 || reinterpret_cast<std::uintptr_t>(plan.data + split.head * es) % 16 == 0);
  std::uint64_t acc = 0;
  for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(plan.total); ++i) {
    acc += cuda_detail::mix_at(plan.global_base + i, bits_at(plan.data + i * es, es));
  }
  return acc;
}

TEST(CudaPlan, DeviceMixerIsTheSpecMixer) {
  static_assert(cuda_detail::mix_at(0, 0) == mix(0, 0));
  static_assert(cuda_detail::mix_at(~0ULL, ~0ULL) == mix(~0ULL, ~0ULL));
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t idx = rng();
    const std::uint64_t bits = rng() >> (rng() % 64);
    ASSERT_EQ(cuda_detail::mix_at(idx, bits), mix(idx, bits)) << idx << " " << bits;
  }
  // Known answer from scripts/shard_hash_ref.py (also in shard_hash_test.cpp).
  EXPECT_EQ(cuda_detail::mix_at(12345, 0x3f800000), 0x4e342170f698bbf6ULL);
}

TEST(CudaPlan, DeviceMixerIsTheSpecV2Mixer) {
  static_assert(cuda_detail::kV2Seed == kV2KeySeed && cuda_detail::kV2Step == kV2KeyStep);
  std::mt19937_64 rng(4);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t idx = rng();
    const std::uint32_t es = 1U << (i % 4);
    const std::uint64_t bits = es == 8 ? rng() : rng() & ((1ULL << (8 * es)) - 1);
    ASSERT_EQ(cuda_detail::mix_v2_at(idx, bits, es), mix_v2(idx, bits, es)) << idx << " " << bits;
  }
  // Known answer from scripts/shard_hash_v2_ref.py (also in shard_hash_v2_test.cpp).
  EXPECT_EQ(cuda_detail::mix_v2_at(12345, 0x3f800000, 4), 0xefdf3ce035457041ULL);
  // The plan carries the spec asked for.
  const std::int64_t shape[1] = {4};
  const std::uint32_t data[4] = {};
  const BlockView view{reinterpret_cast<const std::byte*>(data), 4, shape, {}};
  EXPECT_EQ(cuda_detail::make_launch_plan(view, {}).spec, 1U);
  EXPECT_EQ(cuda_detail::make_launch_plan(view, {}, ShardSpec::V2).spec, 2U);
}

TEST(CudaPlan, KernelWalksMatchTheCpuHash) {
  for (const auto& c : testing::standard_cases()) {
    const BlockView view = c.view(c.storage.data());
    const std::uint64_t want = shard_hash(view, c.placement());
    const LaunchPlan plan = cuda_detail::make_launch_plan(view, c.placement());
    ASSERT_EQ(plan.total, testing::numel(c.shape)) << c.name;
    if (plan.total == 0) continue;
    EXPECT_EQ(replay_strided(plan), want) << c.name;
    if (cuda_detail::is_dense(plan)) {
      EXPECT_EQ(replay_dense(plan), want) << c.name;
    }
  }
}

TEST(CudaPlan, DenseBlocksTakeTheVectorPath) {
  // Whole tensors, row blocks and blocks dense in their inner dims coalesce to one dense run.
  for (const auto& c : testing::standard_cases()) {
    const LaunchPlan plan = cuda_detail::make_launch_plan(c.view(c.storage.data()), c.placement());
    const bool expect_dense = c.name.rfind("dense", 0) == 0 || c.name.rfind("rows of", 0) == 0 ||
                              c.name.rfind("4-d dense", 0) == 0 || c.name.rfind("scalar", 0) == 0;
    if (expect_dense) {
      EXPECT_TRUE(cuda_detail::is_dense(plan)) << c.name;
    }
    if (c.name.rfind("columns", 0) == 0 || c.name.rfind("transposed", 0) == 0) {
      EXPECT_FALSE(cuda_detail::is_dense(plan)) << c.name;
    }
  }
}

TEST(CudaPlan, StridedBlocksAreWalkedInMemoryOrder) {
  // A transposed matrix: the kernel's fastest dim is the one of local stride 1, so neighbouring
  // threads read neighbouring elements; the walk still gives every element its global index.
  const std::int64_t rows = 6, cols = 5;
  std::vector<float> storage(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<float>(i) * 0.5F - 3.0F;
  const std::vector<std::int64_t> shape{cols, rows}, strides{1, cols};  // storage is [rows, cols]
  const BlockView view{reinterpret_cast<const std::byte*>(storage.data()), 4, shape, strides};
  const LaunchPlan plan = cuda_detail::make_launch_plan(view, GlobalPlacement{});
  ASSERT_EQ(plan.ndims, 2);
  EXPECT_EQ(plan.dims[1].local_stride, 1);
  EXPECT_EQ(plan.dims[1].global_stride, static_cast<std::uint64_t>(rows));
  EXPECT_EQ(replay_strided(plan), shard_hash(view, GlobalPlacement{}));
  // Dims contiguous in memory and in the global tensor merge: a permuted-back view is dense.
  LaunchPlan split{};
  split.data = plan.data;
  split.elem_size = 4;
  split.total = rows * cols;
  split.ndims = 2;
  split.dims[0] = {cols, 1, 1};  // inner first: memory order puts it last, then both merge
  split.dims[1] = {rows, cols, static_cast<std::uint64_t>(cols)};
  cuda_detail::in_memory_order(split);
  EXPECT_TRUE(cuda_detail::is_dense(split));
}

TEST(CudaPlan, DenseSplitCoversEveryElementOnce) {
  for (const std::uint32_t es : {1U, 2U, 4U, 8U}) {
    for (std::uint64_t addr = 0; addr < 64; addr += es) {
      for (std::uint64_t n = 0; n < 80; ++n) {
        const auto s = cuda_detail::split_dense(addr, es, n);
        ASSERT_EQ(s.head + s.vectors * (16 / es) + s.tail, n);
        ASSERT_LT(s.head, 16U / es);
        if (s.vectors > 0) {
          ASSERT_EQ((addr + s.head * es) % 16, 0U);
        }
        ASSERT_LT(s.tail, 16U / es);
      }
    }
  }
}

TEST(CudaPlan, RejectsWhatTheCpuRejects) {
  const testing::Shape global = {4, 4};
  const testing::Shape off = {2, 0};
  const testing::Shape blk = {3, 4};
  const std::byte dummy[64] = {};
  EXPECT_THROW(cuda_detail::make_launch_plan(BlockView{dummy, 4, blk, {}}, GlobalPlacement{off, global}),
               BlockError);
  EXPECT_THROW(cuda_detail::make_launch_plan(BlockView{dummy, 3, global, {}}, GlobalPlacement{}), BlockError);
  const testing::Shape deep(26, 1);
  EXPECT_THROW(cuda_detail::make_launch_plan(BlockView{dummy, 4, deep, {}}, GlobalPlacement{}), BlockError);
}

}  // namespace
}  // namespace gparity::hash
