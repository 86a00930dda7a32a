// The CUDA XXH3-64 against libxxhash on the same bytes: every size class, unaligned starts,
// batches mixing sizes (and empty buffers), a strided output, and >= 256 MiB. Runs on a machine
// with a CUDA device; skips, saying so, where there is none (CI).

#include "hash/cuda/xxh3_cuda.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hash/cuda/hash_pair_cuda.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"
#include "hash/cuda/xxh3_host.hpp"
#include "hash/xxh3.hpp"
#include "tests/hash/cuda_cases.hpp"
#include "tests/hash/device_buffer.hpp"

namespace gparity::hash {
namespace {

using testing::DeviceBuffer;

std::uint64_t cpu(const std::vector<std::byte>& host, std::size_t offset, std::size_t n) {
  return xxh3_64(std::span<const std::byte>(host.data() + offset, n));
}

class Xxh3Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device in this process: CUDA-vs-CPU checks not run";
  }
};

TEST_F(Xxh3Cuda, MatchesCpuAtEverySizeClass) {
  const auto host = testing::random_storage((std::size_t{1} << 22) + 64, 21);
  const DeviceBuffer dev(host);
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 300; ++n) sizes.push_back(n);
  for (const std::size_t n :
       {1023UL, 1024UL, 1025UL, 1088UL, 1089UL, 2048UL, 2049UL, 16385UL, 65536UL, 100003UL, (1UL << 22) + 1,
        // 63, 64, 65, 128 and 129 full blocks: around the chain's 64-block staging chunks
        64UL * 1024, 64UL * 1024 + 1, 65UL * 1024 + 1, 128UL * 1024 + 1, 129UL * 1024 + 5})
    sizes.push_back(n);
  int checked = 0;
  for (const std::size_t n : sizes) {
    EXPECT_EQ(xxh3_64_cuda({dev.data(), n}), cpu(host, 0, n)) << n << " bytes";
    ++checked;
  }
  std::printf("[ cuda ] %d sizes agree with libxxhash\n", checked);
}

TEST_F(Xxh3Cuda, UnalignedStartsMatchTheCpu) {
  const auto host = testing::random_storage(70000, 5);
  const DeviceBuffer dev(host);
  for (std::size_t skew = 1; skew < 17; ++skew) {
    EXPECT_EQ(xxh3_64_cuda({dev.data() + skew, 65536 + skew}), cpu(host, skew, 65536 + skew)) << skew;
    EXPECT_EQ(xxh3_64_cuda({dev.data() + skew, 100}), cpu(host, skew, 100)) << skew;
  }
}

TEST_F(Xxh3Cuda, BatchWritesEachDigestAtItsStride) {
  const auto host = testing::random_storage(300000, 9);
  const DeviceBuffer dev(host);
  // Mixed sizes and offsets, empty ones between long ones (no full blocks, shared block index).
  const std::vector<std::pair<std::size_t, std::size_t>> parts = {
      {0, 0}, {0, 5000}, {5000, 0}, {7, 241}, {10, 1025}, {3, 250000}, {100, 16}, {64, 2048}, {1, 1}};
  std::vector<DeviceBytes> buffers;
  for (const auto& [off, n] : parts) buffers.push_back({n ? dev.data() + off : nullptr, n});
  const std::vector<std::byte> zeros(parts.size() * 2 * sizeof(std::uint64_t));
  const DeviceBuffer out(zeros);
  xxh3_64_cuda_batch(buffers, out.words(), 2);
  std::vector<std::uint64_t> got(parts.size() * 2);
  ASSERT_EQ(cudaMemcpy(got.data(), out.words(), got.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(got[2 * i], cpu(host, parts[i].first, parts[i].second)) << "buffer " << i;
    EXPECT_EQ(got[2 * i + 1], 0U) << "stride slot " << i << " was written";
  }
}

// More buffers than one launch takes (512 a launch, their table passed as the kernels'
// parameter): every digest in its slot, block sums of later launches offset right.
TEST_F(Xxh3Cuda, BatchesLargerThanOneLaunchMatchTheCpu) {
  const auto host = testing::random_storage(1 << 20, 13);
  const DeviceBuffer dev(host);
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  for (std::size_t i = 0; i < 1300; ++i) parts.emplace_back((i * 7919) % 500000, (i * 104729) % 5000);
  std::vector<DeviceBytes> buffers;
  for (const auto& [off, n] : parts) buffers.push_back({n ? dev.data() + off : nullptr, n});
  const std::vector<std::byte> zeros(parts.size() * sizeof(std::uint64_t));
  const DeviceBuffer out(zeros);
  xxh3_64_cuda_batch(buffers, out.words(), 1);
  std::vector<std::uint64_t> got(parts.size());
  ASSERT_EQ(cudaMemcpy(got.data(), out.words(), got.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < parts.size(); ++i)
    ASSERT_EQ(got[i], cpu(host, parts[i].first, parts[i].second)) << "buffer " << i;
}

TEST_F(Xxh3Cuda, RejectsHostPointers) {
  const std::vector<std::byte> host(4096);
  EXPECT_THROW(xxh3_64_cuda({host.data(), host.size()}), CudaError);
}

TEST_F(Xxh3Cuda, LargeBuffersMatchTheCpu) {
  // 256 MiB + 7 bytes from an unaligned start: 262,144 chained blocks and a partial tail.
  const std::size_t n = (std::size_t{256} << 20) + 7;
  const auto host = testing::random_storage(n + 3, 77);
  const DeviceBuffer dev(host);
  EXPECT_EQ(xxh3_64_cuda({dev.data() + 3, n}), cpu(host, 3, n));
  EXPECT_EQ(xxh3_64_cuda({dev.data(), std::size_t{256} << 20}), cpu(host, 0, std::size_t{256} << 20));
}

// Both hashes in one call, on a stream of the caller's: the XXH3 chains run on a side stream,
// and the caller's stream must wait for them. A 64 MiB buffer's chain takes about 1 ms, so a
// copy enqueued on the caller's stream right after the call would read a digest not yet written
// if it did not.
TEST_F(Xxh3Cuda, HashPairsMatchTheCpuAndTheCallersStreamWaitsForTheChains) {
  const std::size_t big = std::size_t{64} << 20;
  const auto host = testing::random_storage(big + 64, 31);
  const DeviceBuffer dev(host);
  const std::vector<std::pair<std::size_t, std::size_t>> parts = {
      {0, big}, {16, 4096}, {2, 0}, {32, 240}, {48, 100000}, {8, 2}};  // bytes; f32 blocks below
  std::vector<DeviceBytes> bytes;
  std::vector<std::vector<std::int64_t>> shapes;
  for (const auto& [off, n] : parts) {
    bytes.push_back({n ? dev.data() + off : nullptr, n});
    shapes.push_back({static_cast<std::int64_t>(n / 2)});
  }
  std::vector<BlockView> blocks;
  for (std::size_t i = 0; i < parts.size(); ++i)
    blocks.push_back({dev.data() + parts[i].first, 2, shapes[i], {}});
  const std::vector<GlobalPlacement> placements(parts.size());
  const std::vector<std::byte> zeros(parts.size() * 2 * sizeof(std::uint64_t));
  const DeviceBuffer out(zeros);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::vector<std::uint64_t> got(parts.size() * 2);
  hash_pairs_cuda_batch(bytes, blocks, placements, out.words(), 2, stream);
  ASSERT_EQ(cudaMemcpyAsync(got.data(), out.words(), got.size() * 8, cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto [off, n] = parts[i];
    EXPECT_EQ(got[2 * i], cpu(host, off, n)) << "xxh3 of buffer " << i;
    const BlockView host_block{host.data() + off, 2, shapes[i], {}};
    EXPECT_EQ(got[2 * i + 1], shard_hash(host_block, {})) << "shard hash of buffer " << i;
  }
}

// Both hashes of `parts` (offset, bytes; bf16 blocks for the shard hash) of `dev` in one call on
// `stream`, into `out`; nothing waited for.
void enqueue_pairs(const DeviceBuffer& dev, const std::vector<std::pair<std::size_t, std::size_t>>& parts,
                   std::vector<std::vector<std::int64_t>>& shapes, const DeviceBuffer& out,
                   cudaStream_t stream) {
  std::vector<DeviceBytes> bytes;
  std::vector<BlockView> blocks;
  shapes.clear();
  for (const auto& [off, n] : parts) shapes.push_back({static_cast<std::int64_t>(n / 2)});
  for (std::size_t i = 0; i < parts.size(); ++i) {
    bytes.push_back({parts[i].second ? dev.data() + parts[i].first : nullptr, parts[i].second});
    blocks.push_back({dev.data() + parts[i].first, 2, shapes[i], {}});
  }
  const std::vector<GlobalPlacement> placements(parts.size());
  hash_pairs_cuda_batch(bytes, blocks, placements, out.words(), 2, stream);
}

void expect_pairs(const std::vector<std::byte>& host,
                  const std::vector<std::pair<std::size_t, std::size_t>>& parts,
                  const std::vector<std::vector<std::int64_t>>& shapes, const DeviceBuffer& out,
                  const char* what) {
  std::vector<std::uint64_t> got(parts.size() * 2);
  ASSERT_EQ(cudaMemcpy(got.data(), out.words(), got.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto [off, n] = parts[i];
    EXPECT_EQ(got[2 * i], cpu(host, off, n)) << what << ": xxh3 of buffer " << i;
    const BlockView host_block{host.data() + off, 2, shapes[i], {}};
    EXPECT_EQ(got[2 * i + 1], shard_hash(host_block, {})) << what << ": shard hash of buffer " << i;
  }
}

// The XXH3 scratch (the block sums) is kept from call to call, one per thread, device and
// stream. Three calls in a row on two streams that do not wait for each other, none waited for
// on the host: stream B's call takes a scratch of its own while stream A's chains (about 1 ms for
// 64 MiB) may still read A's; the third call (stream A again, smaller) reuses A's. A call whose
// block sums overwrote sums a chain had not read yet would get a wrong digest.
TEST_F(Xxh3Cuda, ReusedScratchWaitsForTheChainsOfEarlierCallsOnOtherStreams) {
  const std::size_t big = std::size_t{64} << 20;
  const auto host = testing::random_storage(2 * big + 8192, 57);
  const DeviceBuffer dev(host);
  const std::vector<std::byte> zeros(16 * 2 * sizeof(std::uint64_t));
  const DeviceBuffer out1(zeros), out2(zeros), out3(zeros);
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  const std::vector<std::pair<std::size_t, std::size_t>> first = {{0, big}, {8, 5000}};
  const std::vector<std::pair<std::size_t, std::size_t>> second = {{big, big + 4096}, {2, 3000}, {64, 241}};
  const std::vector<std::pair<std::size_t, std::size_t>> third = {{4096, big / 2}, {96, 100000}};
  std::vector<std::vector<std::int64_t>> s1, s2, s3;
  enqueue_pairs(dev, first, s1, out1, a);
  enqueue_pairs(dev, second, s2, out2, b);
  enqueue_pairs(dev, third, s3, out3, a);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  expect_pairs(host, first, s1, out1, "first call (stream A)");
  expect_pairs(host, second, s2, out2, "second call (stream B, larger scratch)");
  expect_pairs(host, third, s3, out3, "third call (stream A, smaller)");
}

// The same stream's next call takes the same scratch: with its chains on a chain stream that
// the caller has not joined, the next call's block sums must still wait for them.
TEST_F(Xxh3Cuda, ACallsBlockSumsWaitForTheUnjoinedChainsOfTheCallBefore) {
  const std::size_t big = std::size_t{64} << 20;
  const auto host = testing::random_storage(2 * big, 58);
  const DeviceBuffer dev(host);
  const std::vector<std::byte> zeros(sizeof(std::uint64_t));
  const DeviceBuffer out1(zeros), out2(zeros);
  cudaStream_t a = nullptr, chains = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&chains, cudaStreamNonBlocking), cudaSuccess);
  const DeviceBytes first{dev.data(), big}, second{dev.data() + big, big};
  xxh3_64_cuda_batch(std::span(&first, 1), out1.words(), 1, a, true, chains);
  xxh3_64_cuda_batch(std::span(&second, 1), out2.words(), 1, a);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStreamDestroy(a);
  cudaStreamDestroy(chains);
  std::uint64_t got1 = 0, got2 = 0;
  ASSERT_EQ(cudaMemcpy(&got1, out1.words(), 8, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&got2, out2.words(), 8, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got1, cpu(host, 0, big)) << "the first call's chains read sums the second call overwrote";
  EXPECT_EQ(got2, cpu(host, big, big));
}

// More streams than a thread keeps scratches for (4): each new stream takes the least recently
// used one, which is freed once its chains are done. Nothing waited for between the calls.
TEST_F(Xxh3Cuda, CallsOnMoreStreamsThanScratchesMatchTheCpu) {
  const std::size_t part = std::size_t{16} << 20;
  constexpr std::size_t kStreams = 7;
  const auto host = testing::random_storage(kStreams * part + 64, 59);
  const DeviceBuffer dev(host);
  const std::vector<std::byte> zeros(2 * 2 * sizeof(std::uint64_t));
  std::vector<std::unique_ptr<DeviceBuffer>> outs;
  std::vector<cudaStream_t> streams(kStreams);
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> parts;
  std::vector<std::vector<std::vector<std::int64_t>>> shapes(2 * kStreams);
  for (std::size_t round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < kStreams; ++i) {
      if (round == 0) {
        ASSERT_EQ(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking), cudaSuccess);
      }
      const std::size_t k = round * kStreams + i;
      parts.push_back({{((i + round) % kStreams) * part, part - 2 * round * i}, {2 * i, 3000 + 1000 * i}});
      outs.push_back(std::make_unique<DeviceBuffer>(zeros));
      enqueue_pairs(dev, parts[k], shapes[k], *outs[k], streams[i]);
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
  for (std::size_t k = 0; k < parts.size(); ++k)
    expect_pairs(host, parts[k], shapes[k], *outs[k], ("call " + std::to_string(k)).c_str());
}

// Each launch's parameter block is the smallest that holds the call's buffers (XXH3: 32, 128 or
// 512 segments; the shard batch: 16, 64 or 256 blocks): calls of every size class between.
TEST_F(Xxh3Cuda, HashPairsMatchTheCpuAtEveryBatchCapacity) {
  const auto host = testing::random_storage(1 << 20, 91);
  const DeviceBuffer dev(host);
  for (const std::size_t count : {1, 16, 17, 32, 33, 64, 65, 128, 129, 256, 257, 700}) {
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    for (std::size_t i = 0; i < count; ++i)
      parts.emplace_back((i * 7919) % 500000 & ~std::size_t{1}, (i * 104729) % 5000);
    const std::vector<std::byte> zeros(count * 2 * sizeof(std::uint64_t));
    const DeviceBuffer out(zeros);
    std::vector<std::vector<std::int64_t>> shapes;
    enqueue_pairs(dev, parts, shapes, out, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_pairs(host, parts, shapes, out, ("a batch of " + std::to_string(count)).c_str());
  }
}

// Host-finished digests: mixed sizes (empty, short, one partial block, unaligned, long), two
// enqueues in one round and a second round on the same object (its buffers reused, grown), every
// digest equal to the CPU's in enqueue order.
TEST_F(Xxh3Cuda, HostFinishedDigestsMatchTheCpuOverRounds) {
  const auto host = testing::random_storage(3 << 20, 23);
  const DeviceBuffer dev(host);
  Xxh3HostDigests digests;
  const std::vector<std::vector<std::pair<std::size_t, std::size_t>>> rounds = {
      {{0, 0}, {0, 5000}, {7, 241}, {10, 1025}, {3, 250000}, {100, 16}, {64, 2048}, {1, 1}},
      {{5, 1030}, {0, 3 << 20}, {9, 2049}},
      {{11, 2 << 20}, {0, 240}, {13, 1088}, {2, 1089}}};
  for (std::size_t r = 0; r + 1 < rounds.size(); r += 2) {
    std::vector<std::pair<std::size_t, std::size_t>> all;
    for (std::size_t k = r; k < r + 2 && k < rounds.size(); ++k) {
      std::vector<DeviceBytes> buffers;
      for (const auto& [off, n] : rounds[k]) buffers.push_back({n ? dev.data() + off : nullptr, n});
      EXPECT_EQ(digests.enqueue(buffers, nullptr), all.size()) << "round " << r << ", enqueue " << k;
      all.insert(all.end(), rounds[k].begin(), rounds[k].end());
    }
    EXPECT_EQ(digests.pending(), all.size());
    const auto got = digests.finish();
    ASSERT_EQ(got.size(), all.size());
    EXPECT_EQ(digests.pending(), 0U);
    for (std::size_t i = 0; i < all.size(); ++i)
      EXPECT_EQ(got[i], cpu(host, all[i].first, all[i].second)) << "round " << r << ", buffer " << i;
  }
  // A round of one enqueue after the others: the object starts over.
  std::vector<DeviceBytes> last;
  for (const auto& [off, n] : rounds[2]) last.push_back({dev.data() + off, n});
  EXPECT_EQ(digests.enqueue(last, nullptr), 0U);
  const auto got = digests.finish();
  for (std::size_t i = 0; i < last.size(); ++i)
    EXPECT_EQ(got[i], cpu(host, rounds[2][i].first, rounds[2][i].second)) << "buffer " << i;
}

// Once enqueue()'s kernels have run, the buffers are not read again: overwriting them on the same
// stream right after the call (and the copy on a stream of its own) leaves the digests those of
// the bytes as they were. Several 16 MiB buffers: the chains are walked on more than one thread.
TEST_F(Xxh3Cuda, HostFinishedDigestsDoNotReadTheBuffersAfterTheirKernels) {
  const std::size_t each = std::size_t{16} << 20;
  const auto host = testing::random_storage(4 * each + 5, 29);
  DeviceBuffer dev(host);
  cudaStream_t s = nullptr;
  cudaStream_t copy = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking), cudaSuccess);
  Xxh3HostDigests digests;
  std::vector<DeviceBytes> buffers;
  for (std::size_t k = 0; k < 4; ++k)
    buffers.push_back({dev.data() + k * each + (k == 3 ? 5 : 0), each - (k == 3 ? 5 : 0)});
  digests.enqueue(buffers, s, copy);
  ASSERT_EQ(cudaMemsetAsync(const_cast<std::byte*>(dev.data()), 0xAB, 4 * each + 5, s), cudaSuccess);
  const auto got = digests.finish();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (std::size_t k = 0; k < 4; ++k)
    EXPECT_EQ(got[k], cpu(host, k * each + (k == 3 ? 5 : 0), each - (k == 3 ? 5 : 0))) << "buffer " << k;
  cudaStreamDestroy(copy);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace gparity::hash
