// The CUDA shard hash against the CPU reference on the same bytes: every element size, dense
// and strided blocks, unaligned starts, blocks with global offsets, empty and >= 256 MiB tensors.
// Runs on a machine with a CUDA device; skips, saying so, where there is none (CI).

#include "hash/cuda/shard_hash_cuda.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/hash/cuda_cases.hpp"
#include "tests/hash/device_buffer.hpp"

namespace gparity::hash {
namespace {

void cuda_ok(cudaError_t e) {
  ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
}

using testing::DeviceBuffer;

/// Every standard case copied to the device, with its device view and placement, for the batch
/// tests (the device copies live as long as this).
struct CasesOnDevice {
  std::vector<testing::Case> cases = testing::standard_cases();
  std::vector<std::unique_ptr<DeviceBuffer>> dev;
  std::vector<BlockView> views;
  std::vector<GlobalPlacement> placements;

  CasesOnDevice() {
    for (const auto& c : cases) {
      dev.push_back(std::make_unique<DeviceBuffer>(c.storage));
      views.push_back(c.view(dev.back()->data()));
      placements.push_back(c.placement());
    }
  }
};

class ShardHashCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device in this process: CUDA-vs-CPU checks not run";
  }
};

TEST_F(ShardHashCuda, MatchesCpuOnEveryStandardCase) {
  int checked = 0;
  for (const auto& c : testing::standard_cases()) {
    const DeviceBuffer dev(c.storage);
    const std::uint64_t cpu = shard_hash(c.view(c.storage.data()), c.placement());
    EXPECT_EQ(shard_hash_cuda(c.view(dev.data()), c.placement()), cpu) << c.name;
    ++checked;
  }
  std::printf("[ cuda ] %d standard cases agree with the CPU\n", checked);
}

// Every standard case (all element sizes, dense and strided, unaligned, empty) in one batch: the
// dense ones share one launch, and each block's sum lands in its own strided slot.
TEST_F(ShardHashCuda, BatchMatchesTheCpuBlockByBlock) {
  CasesOnDevice on_device;
  const auto& cases = on_device.cases;
  auto& views = on_device.views;
  auto& placements = on_device.placements;
  constexpr std::size_t kStride = 3;
  std::uint64_t* out = nullptr;
  cuda_ok(cudaMalloc(&out, cases.size() * kStride * sizeof(std::uint64_t)));
  cuda_ok(cudaMemset(out, 0, cases.size() * kStride * sizeof(std::uint64_t)));
  shard_hash_cuda_batch(views, placements, out, kStride);
  std::vector<std::uint64_t> host(cases.size() * kStride);
  cuda_ok(cudaMemcpy(host.data(), out, host.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  EXPECT_THROW(shard_hash_cuda_batch(views, std::span(placements).first(1), out, kStride), BlockError);
  cudaFree(out);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(host[i * kStride], shard_hash(cases[i].view(cases[i].storage.data()), cases[i].placement()))
        << cases[i].name;
    EXPECT_EQ(host[i * kStride + 1], 0u) << "slot between blocks written: " << cases[i].name;
  }
  EXPECT_THROW(shard_hash_cuda_batch(views, std::span(placements).first(1), out, kStride), BlockError);
}

ShardHashOptions options_of(ShardSpec spec) {
  ShardHashOptions o;
  o.spec = spec;
  return o;
}

// More blocks than one launch takes (256 a launch, passed as the kernel's parameter, with one
// table of strided blocks' dims), every element size, with strided ones between them (element by
// element, as runs of rows, 3- and 4-D ones whose dims do not merge): each sum in its own slot,
// under both specs (v2 hashes strided blocks of 1, 2 and 4 bytes in the batch's launch, the
// others one launch each), in calls of every parameter block's size and with capped grids.
TEST_F(ShardHashCuda, BatchesLargerThanOneLaunchMatchTheCpu) {
  const auto storage = testing::random_storage(1 << 20, 31);
  const DeviceBuffer dev(storage);
  std::vector<std::vector<std::int64_t>> shapes, strides, offsets, globals;
  std::vector<std::uint32_t> sizes;
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < 700; ++i) {
    const std::uint32_t es = 1U << (i % 4);
    starts.push_back((i * 4099) % 900000 / 8 * 8 + (i % 2) * es);  // aligned and one element off
    sizes.push_back(es);
    if (i % 7 == 3) {  // [a, b, c] or [a, b, c, d] read through a permutation: no dims merge
      const std::int64_t a = 2 + static_cast<std::int64_t>(i % 3), b = 3,
                         c = 5 + static_cast<std::int64_t>(i % 29);
      if (i % 2 == 0) {
        shapes.push_back({a, b, c});
        strides.push_back({c, a * c, 1});
        offsets.push_back({0, 0, 0});
        globals.push_back({a, b, c});
      } else {
        shapes.push_back({a, b, 2, c});
        strides.push_back({c, 2 * a * c, a * c * b * 2 + c, 1});
        offsets.push_back({1, 0, 0, 0});
        globals.push_back({a + 1, b, 2, c});
      }
      continue;
    }
    // Every fifth block is transposed; every tenth one with columns of 33+ elements, which the
    // kernels read as runs of neighbours in memory whose global indices step by a row.
    const bool transposed = i % 5 == 0;
    const std::int64_t rows =
        i % 10 == 0 ? 33 + static_cast<std::int64_t>(i % 47) : 1 + static_cast<std::int64_t>(i % 9);
    const std::int64_t cols =
        i % 10 == 5 ? 40 + static_cast<std::int64_t>(i % 23) : 3 + static_cast<std::int64_t>(i % 17);
    shapes.push_back({rows, cols});
    strides.push_back(transposed ? std::vector<std::int64_t>{1, rows}
                                 : std::vector<std::int64_t>{cols + 1, 1});
    offsets.push_back({static_cast<std::int64_t>(i % 3), 0});
    globals.push_back({rows + 2, cols});
  }
  std::vector<BlockView> cpu_views, gpu_views;
  std::vector<GlobalPlacement> placements;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    cpu_views.push_back({storage.data() + starts[i], sizes[i], shapes[i], strides[i]});
    gpu_views.push_back({dev.data() + starts[i], sizes[i], shapes[i], strides[i]});
    placements.push_back({offsets[i], globals[i]});
  }
  std::uint64_t* out = nullptr;
  cuda_ok(cudaMalloc(&out, shapes.size() * sizeof(std::uint64_t)));
  int calls = 0;
  for (const ShardSpec spec : {ShardSpec::V1, ShardSpec::V2}) {
    std::vector<std::uint64_t> want(shapes.size());
    for (std::size_t i = 0; i < shapes.size(); ++i)
      want[i] = shard_hash(cpu_views[i], placements[i], options_of(spec));
    for (const std::size_t n : {3UL, 13UL, 50UL, 700UL}) {
      for (const std::uint32_t cap : {0U, 5U}) {
        cuda_ok(cudaMemset(out, 0, shapes.size() * sizeof(std::uint64_t)));
        shard_hash_cuda_batch(std::span(gpu_views).first(n), std::span(placements).first(n), out, 1, nullptr,
                              true, spec, cap);
        std::vector<std::uint64_t> host(n);
        cuda_ok(cudaMemcpy(host.data(), out, n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(host[i], want[i])
              << "spec " << static_cast<int>(spec) << ", " << n << " blocks, max_ctas " << cap << ": block "
              << i << " (" << shapes[i].size() << "-D)";
        ++calls;
      }
    }
  }
  cudaFree(out);
  std::printf("[ cuda ] %d batch calls of up to 700 dense and strided blocks agree with the CPU\n", calls);
}

TEST_F(ShardHashCuda, BlocksOfAMeshSumToTheFullHash) {
  // 2-D mesh (uneven rows x columns), each tile hashed on the GPU in place from the full tensor.
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    const testing::Shape global = {301, 257};
    const auto host = testing::random_storage(301 * 257 * es, 40 + es);
    const DeviceBuffer dev(host);
    const std::uint64_t want = shard_hash_contiguous(host, es);
    EXPECT_EQ(shard_hash_cuda(BlockView{dev.data(), es, global, {}}, GlobalPlacement{}), want);
    const std::vector<std::int64_t> rows = {0, 1, 100, 188, 301};
    const std::vector<std::int64_t> cols = {0, 64, 65, 257};
    const testing::Shape strides = testing::row_major(global);
    std::uint64_t sum = 0;
    for (std::size_t r = 0; r + 1 < rows.size(); ++r) {
      for (std::size_t c = 0; c + 1 < cols.size(); ++c) {
        const testing::Shape off = {rows[r], cols[c]};
        const testing::Shape shape = {rows[r + 1] - rows[r], cols[c + 1] - cols[c]};
        const std::byte* first = dev.data() + (off[0] * strides[0] + off[1]) * static_cast<std::int64_t>(es);
        sum += shard_hash_cuda(BlockView{first, es, shape, strides}, GlobalPlacement{off, global});
      }
    }
    EXPECT_EQ(sum, want) << "es " << es;
  }
}

TEST_F(ShardHashCuda, AccumulatesOnAStreamWithoutWaiting) {
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreate(&stream));
  const auto a = testing::random_storage(4 * 100000, 7);
  const auto b = testing::random_storage(2 * 77777, 8);
  const DeviceBuffer da(a);
  const DeviceBuffer db(b);
  std::uint64_t* sum = nullptr;
  cuda_ok(cudaMalloc(&sum, sizeof *sum));
  cuda_ok(cudaMemsetAsync(sum, 0, sizeof *sum, stream));
  const testing::Shape sa = {100000};
  const testing::Shape sb = {77777};
  shard_hash_cuda_accumulate(BlockView{da.data(), 4, sa, {}}, GlobalPlacement{}, sum, stream);
  shard_hash_cuda_accumulate(BlockView{db.data(), 2, sb, {}}, GlobalPlacement{}, sum, stream);
  std::uint64_t got = 0;
  cuda_ok(cudaMemcpyAsync(&got, sum, sizeof got, cudaMemcpyDeviceToHost, stream));
  cuda_ok(cudaStreamSynchronize(stream));
  EXPECT_EQ(got, shard_hash_contiguous(a, 4) + shard_hash_contiguous(b, 2));
  EXPECT_EQ(shard_hash_cuda(BlockView{da.data(), 4, sa, {}}, GlobalPlacement{}, stream),
            shard_hash_contiguous(a, 4));
  cudaFree(sum);
  cudaStreamDestroy(stream);
}

TEST_F(ShardHashCuda, EmptyBlocksHashToZeroWithoutTouchingMemory) {
  const testing::Shape empty = {0, 5};
  const testing::Shape zero = {0, 0};
  EXPECT_EQ(shard_hash_cuda(BlockView{nullptr, 4, empty, {}}, GlobalPlacement{zero, empty}), 0U);
}

TEST_F(ShardHashCuda, RejectsHostPointersAndBadBlocks) {
  const auto host = testing::random_storage(64, 1);
  const testing::Shape shape = {16};
  EXPECT_THROW(shard_hash_cuda(BlockView{host.data(), 4, shape, {}}, GlobalPlacement{}), CudaError);
  const testing::Shape global = {4, 4};
  const testing::Shape off = {2, 0};
  const testing::Shape blk = {3, 4};
  const DeviceBuffer dev(host);
  EXPECT_THROW(shard_hash_cuda(BlockView{dev.data(), 4, blk, {}}, GlobalPlacement{off, global}), BlockError);
  // The context is still usable after the rejections.
  EXPECT_EQ(shard_hash_cuda(BlockView{dev.data(), 4, shape, {}}, GlobalPlacement{}),
            shard_hash_contiguous(host, 4));
}

TEST_F(ShardHashCuda, LargeTensorsMatchTheCpu) {
  // 256 MiB + 6 bytes: f32 dense from an unaligned start, then bf16 as a strided column block.
  const std::size_t bytes = (std::size_t{256} << 20) + 6;
  const auto host = testing::random_storage(bytes, 99);
  const DeviceBuffer dev(host);
  ShardHashOptions threads;  // the CPU reference may use every core; its result does not change
  const testing::Shape s32 = {static_cast<std::int64_t>((bytes - 4) / 4)};
  EXPECT_EQ(shard_hash_cuda(BlockView{dev.data() + 4, 4, s32, {}}, GlobalPlacement{}),
            shard_hash(BlockView{host.data() + 4, 4, s32, {}}, GlobalPlacement{}, threads));
  const testing::Shape global = {8192, 16384};  // bf16: 256 MiB
  const testing::Shape off = {0, 4096};
  const testing::Shape blk = {8192, 12288};
  const testing::Shape strides = testing::row_major(global);
  const std::byte* first = dev.data() + off[1] * 2;
  EXPECT_EQ(shard_hash_cuda(BlockView{first, 2, blk, strides}, GlobalPlacement{off, global}),
            shard_hash(BlockView{host.data() + off[1] * 2, 2, blk, strides}, GlobalPlacement{off, global},
                       threads));
}

// Spec v2 (docs/hashing.md): every standard case, one by one and as one batch, against the CPU
// (which tests/hash/shard_hash_v2_test.cpp pins to scripts/shard_hash_v2_ref.py), plus blocks that
// take each v2 kernel: dense, rows (column shards, transposed layouts, odd starts), strided.
ShardHashOptions v2_cpu() {
  ShardHashOptions o;
  o.spec = ShardSpec::V2;
  return o;
}

TEST_F(ShardHashCuda, SpecV2MatchesCpuOnEveryStandardCaseAndInABatch) {
  const auto cases = testing::standard_cases();
  std::vector<std::unique_ptr<DeviceBuffer>> dev;
  std::vector<BlockView> views;
  std::vector<GlobalPlacement> placements;
  int checked = 0;
  for (const auto& c : cases) {
    dev.push_back(std::make_unique<DeviceBuffer>(c.storage));
    views.push_back(c.view(dev.back()->data()));
    placements.push_back(c.placement());
    const std::uint64_t cpu = shard_hash(c.view(c.storage.data()), c.placement(), v2_cpu());
    EXPECT_EQ(shard_hash_cuda(views.back(), c.placement(), nullptr, ShardSpec::V2), cpu) << c.name;
    if (c.elem_size != 8 && testing::numel(c.shape) > 1) {
      EXPECT_NE(cpu, shard_hash(c.view(c.storage.data()), c.placement())) << "v2 equals v1: " << c.name;
    }
    ++checked;
  }
  std::uint64_t* out = nullptr;
  cuda_ok(cudaMalloc(&out, cases.size() * sizeof(std::uint64_t)));
  cuda_ok(cudaMemset(out, 0, cases.size() * sizeof(std::uint64_t)));
  shard_hash_cuda_batch(views, placements, out, 1, nullptr, true, ShardSpec::V2);
  std::vector<std::uint64_t> host(cases.size());
  cuda_ok(cudaMemcpy(host.data(), out, host.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  cudaFree(out);
  for (std::size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(host[i], shard_hash(cases[i].view(cases[i].storage.data()), cases[i].placement(), v2_cpu()))
        << "batch: " << cases[i].name;
  std::printf("[ cuda ] spec v2: %d standard cases agree with the CPU\n", checked);
}

// A capped grid (max_ctas: the side stream's share of the GPU) gives the same sums as the full
// one, under both specs: each CTA takes several virtual CTAs' shares of the dense launch in turn,
// and the strided kernels walk more elements a thread. One CTA, a few, and more than the work needs.
TEST_F(ShardHashCuda, CappedGridsMatchTheCpu) {
  CasesOnDevice on_device;
  const auto& cases = on_device.cases;
  auto& views = on_device.views;
  auto& placements = on_device.placements;
  // And one large dense block, whose uncapped launch has many CTAs.
  const auto big = testing::random_storage(std::size_t{48} << 20, 7);
  const DeviceBuffer big_dev(big);
  const std::vector<std::int64_t> big_shape = {static_cast<std::int64_t>(big.size() / 2)}, one = {1};
  const std::vector<std::int64_t> big_off = {0};
  views.push_back({big_dev.data(), 2, big_shape, one});
  placements.push_back({big_off, big_shape});
  ASSERT_GT(shard_hash_cuda_resident_ctas(), 0u);
  std::uint64_t* out = nullptr;
  cuda_ok(cudaMalloc(&out, views.size() * sizeof(std::uint64_t)));
  for (const ShardSpec spec : {ShardSpec::V1, ShardSpec::V2}) {
    std::vector<std::uint64_t> want(views.size());
    for (std::size_t i = 0; i < cases.size(); ++i)
      want[i] = shard_hash(cases[i].view(cases[i].storage.data()), cases[i].placement(),
                           spec == ShardSpec::V2 ? v2_cpu() : ShardHashOptions{});
    want.back() = shard_hash({big.data(), 2, big_shape, one}, {big_off, big_shape},
                             spec == ShardSpec::V2 ? v2_cpu() : ShardHashOptions{});
    for (const std::uint32_t cap : {1U, 3U, 17U, shard_hash_cuda_resident_ctas() / 4 + 1, 1U << 20}) {
      cuda_ok(cudaMemset(out, 0, views.size() * sizeof(std::uint64_t)));
      shard_hash_cuda_batch(views, placements, out, 1, nullptr, true, spec, cap);
      std::vector<std::uint64_t> host(views.size());
      cuda_ok(cudaMemcpy(host.data(), out, host.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < views.size(); ++i)
        EXPECT_EQ(host[i], want[i]) << "spec " << static_cast<int>(spec) << ", max_ctas " << cap << ", "
                                    << (i < cases.size() ? cases[i].name : std::string("48 MiB bf16"));
    }
  }
  cudaFree(out);
}

TEST_F(ShardHashCuda, SpecV2RowsKernelMatchesCpu) {
  // Column shards of [rows, cols] tensors (rows start at any alignment), transposed blocks, and
  // blocks whose inner dim is strided: every element size, the key wrap inside a row included.
  const auto storage = testing::random_storage(3 << 20, 77);
  const DeviceBuffer dev(storage);
  int checked = 0;
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    for (const std::int64_t cols : {64L, 515L, 8192L}) {
      const std::int64_t rows =
          std::min<std::int64_t>(40, static_cast<std::int64_t>((1 << 20) / (cols * 8)) + 1);
      for (const std::int64_t c0 : {0L, 1L, 3L, cols / 2}) {
        const testing::Shape global = {rows + 3, cols};
        const testing::Shape off = {3, c0};
        const testing::Shape blk = {rows, cols - c0};
        const testing::Shape strides = {cols, 1};
        const std::size_t first = static_cast<std::size_t>(c0) * es + 7 * es;  // odd element starts
        const BlockView cpu{storage.data() + first, es, blk, strides};
        const BlockView gpu{dev.data() + first, es, blk, strides};
        EXPECT_EQ(shard_hash_cuda(gpu, GlobalPlacement{off, global}, nullptr, ShardSpec::V2),
                  shard_hash(cpu, GlobalPlacement{off, global}, v2_cpu()))
            << "es " << es << " cols " << cols << " c0 " << c0;
        ++checked;
      }
    }
    // Transposed storage and an inner stride of 3; global offsets near a 2^32 key wrap.
    const testing::Shape global = {70000, 65537};
    const testing::Shape off = {65536, 100};
    const testing::Shape blk = {50, 77};
    for (const testing::Shape& strides : {testing::Shape{1, 50}, testing::Shape{3 * 77, 3}}) {
      const BlockView cpu{storage.data() + es, es, blk, strides};
      const BlockView gpu{dev.data() + es, es, blk, strides};
      EXPECT_EQ(shard_hash_cuda(gpu, GlobalPlacement{off, global}, nullptr, ShardSpec::V2),
                shard_hash(cpu, GlobalPlacement{off, global}, v2_cpu()))
          << "es " << es << " strides " << strides[0] << "," << strides[1];
      ++checked;
    }
  }
  std::printf("[ cuda ] spec v2: %d row / strided blocks agree with the CPU\n", checked);
}

TEST_F(ShardHashCuda, SpecV2LargeTensorsMatchTheCpu) {
  // 256 MiB + 6 bytes: u8 and bf16 dense from unaligned starts, a bf16 column shard.
  const std::size_t bytes = (std::size_t{256} << 20) + 6;
  const auto host = testing::random_storage(bytes, 98);
  const DeviceBuffer dev(host);
  const testing::Shape s8 = {static_cast<std::int64_t>(bytes - 3)};
  EXPECT_EQ(shard_hash_cuda(BlockView{dev.data() + 3, 1, s8, {}}, GlobalPlacement{}, nullptr, ShardSpec::V2),
            shard_hash(BlockView{host.data() + 3, 1, s8, {}}, GlobalPlacement{}, v2_cpu()));
  const testing::Shape s16 = {static_cast<std::int64_t>((bytes - 2) / 2)};
  EXPECT_EQ(shard_hash_cuda(BlockView{dev.data() + 2, 2, s16, {}}, GlobalPlacement{}, nullptr, ShardSpec::V2),
            shard_hash(BlockView{host.data() + 2, 2, s16, {}}, GlobalPlacement{}, v2_cpu()));
  const testing::Shape global = {16384, 8192};  // bf16: 256 MiB, columns 4096..8191
  const testing::Shape off = {0, 4096};
  const testing::Shape blk = {16384, 4096};
  const testing::Shape strides = testing::row_major(global);
  EXPECT_EQ(
      shard_hash_cuda(BlockView{dev.data() + 4096 * 2, 2, blk, strides}, GlobalPlacement{off, global},
                      nullptr, ShardSpec::V2),
      shard_hash(BlockView{host.data() + 4096 * 2, 2, blk, strides}, GlobalPlacement{off, global}, v2_cpu()));
}

}  // namespace
}  // namespace gparity::hash
