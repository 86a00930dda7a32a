// CUDA shard hash next to a device-to-device copy (cudaMemcpyAsync D2D) and a read-only
// reduction kernel (bench/read_reduce_kernel.cu) on the same device buffers, in one run, timed
// with CUDA events (manual time), 64 MiB .. 4 GiB (GPARITY_BENCH_CUDA_MAX_MIB caps it). Goals:
// spec v1 reads a tensor at >= 80% of the copy's bandwidth (copy bytes read plus written; issue
// 2); spec v2 at >= 90% of the read-only reduction for f32, bf16/f16 and u8/fp8, and a bf16 column
// shard at >= 70% of the dense bf16 rate (issue 24). Prints ratio tables at the end.
// BM_cuda_xxh3_{device,host}_chain: the wall time of one XXH3-64 of an N MiB buffer, its chain
// on a GPU warp (xxh3_64_cuda_batch) or on the host (Xxh3HostDigests: block sums, 1/16 of the
// bytes copied to pinned memory, the chain on a CPU core), beside BM_cuda_d2h_sums, the copy of
// those N/16 bytes alone; run with --benchmark_filter=chain\|d2h (docs/replay.md).
// BM_cuda_hash_pairs_enqueue_host: the host time of one hash_pairs_cuda_batch call (the
// recorder's `hash` phase, issue 24's < 1 % goal), GPU time not counted; run it alone with
// --benchmark_filter=enqueue_host (it allocates 64 KiB a block, not the 4 GiB of the others).

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/read_reduce_kernel.hpp"
#include "hash/cuda/hash_pair_cuda.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"
#include "hash/cuda/xxh3_host.hpp"
#include "hash/cuda/xxh3_plan.hpp"

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

std::int64_t max_bytes() {
  const char* env = std::getenv("GPARITY_BENCH_CUDA_MAX_MIB");
  return (env ? std::atoll(env) : 4096) << 20;
}

// Source (random bytes), copy destination and the hash's sum word, allocated once.
struct Device {
  std::byte* src = nullptr;
  std::byte* dst = nullptr;
  std::uint64_t* sum = nullptr;
  cudaEvent_t start{}, stop{};
  Device() {
    const auto n = static_cast<std::size_t>(max_bytes());
    ok(cudaMalloc(&src, n), "cudaMalloc src");
    ok(cudaMalloc(&dst, n), "cudaMalloc dst");
    ok(cudaMalloc(&sum, sizeof *sum), "cudaMalloc sum");
    ok(cudaEventCreate(&start), "event");
    ok(cudaEventCreate(&stop), "event");
    // Random bytes (never zeros): 64 MiB from an LCG on the host, replicated on the device.
    const std::size_t chunk = std::min<std::size_t>(n, std::size_t{64} << 20);
    std::vector<std::byte> host(chunk);
    std::uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (std::size_t i = 0; i < chunk; i += 8) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      std::memcpy(&host[i], &x, 8);
    }
    ok(cudaMemcpy(src, host.data(), chunk, cudaMemcpyHostToDevice), "upload");
    for (std::size_t off = chunk; off < n; off += chunk) {
      ok(cudaMemcpy(src + off, src, std::min(chunk, n - off), cudaMemcpyDeviceToDevice), "replicate");
    }
    // The benchmark's own agreement check: the first 64 MiB hashed by the GPU and the CPU.
    const std::int64_t count = static_cast<std::int64_t>(chunk / 4);
    const std::int64_t shape[1] = {count};
    const std::uint64_t gpu = gparity::hash::shard_hash_cuda({src, 4, shape, {}}, {});
    const std::uint64_t cpu = gparity::hash::shard_hash({host.data(), 4, shape, {}}, {});
    std::printf("agreement check, 64 MiB f32: gpu %016llx cpu %016llx %s\n",
                static_cast<unsigned long long>(gpu), static_cast<unsigned long long>(cpu),
                gpu == cpu ? "EQUAL" : "DIFFERENT");
    gparity::hash::ShardHashOptions v2;
    v2.spec = gparity::hash::ShardSpec::V2;
    const std::int64_t count16[1] = {static_cast<std::int64_t>(chunk / 2)};
    const std::uint64_t gpu2 =
        gparity::hash::shard_hash_cuda({src, 2, count16, {}}, {}, nullptr, gparity::hash::ShardSpec::V2);
    const std::uint64_t cpu2 = gparity::hash::shard_hash({host.data(), 2, count16, {}}, {}, v2);
    std::printf("agreement check, 64 MiB bf16, spec v2: gpu %016llx cpu %016llx %s\n",
                static_cast<unsigned long long>(gpu2), static_cast<unsigned long long>(cpu2),
                gpu2 == cpu2 ? "EQUAL" : "DIFFERENT");
  }
};

Device& device() {
  static Device d;
  return d;
}

template <typename Fn>
void timed(benchmark::State& st, std::int64_t bytes, Fn&& fn) {
  Device& d = device();
  fn();  // warm-up
  ok(cudaDeviceSynchronize(), "warm-up");
  for (auto _ : st) {
    ok(cudaEventRecord(d.start), "record");
    fn();
    ok(cudaEventRecord(d.stop), "record");
    ok(cudaEventSynchronize(d.stop), "sync");
    float ms = 0;
    ok(cudaEventElapsedTime(&ms, d.start, d.stop), "elapsed");
    st.SetIterationTime(ms / 1e3);
  }
  ok(cudaGetLastError(), "after run");
  st.SetBytesProcessed(st.iterations() * bytes);
}

template <std::size_t ES>
void BM_cuda_shard_hash(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const std::int64_t shape[1] = {n / static_cast<std::int64_t>(ES)};
  Device& d = device();
  timed(st, n, [&] { gparity::hash::shard_hash_cuda_accumulate({d.src, ES, shape, {}}, {}, d.sum); });
}

// A tensor-parallel column shard: bf16 [rows, 8192] global, this rank's columns [4096, 8192).
void column_shard_bf16(benchmark::State& st, gparity::hash::ShardSpec spec) {
  const std::int64_t n = st.range(0);
  const std::int64_t global[2] = {n / 2 / 8192, 8192};
  const std::int64_t block[2] = {global[0], 4096};
  const std::int64_t strides[2] = {8192, 1};
  const std::int64_t offsets[2] = {0, 4096};
  Device& d = device();
  timed(st, n / 2, [&] {
    gparity::hash::shard_hash_cuda_accumulate({d.src + 4096 * 2, 2, block, strides}, {offsets, global}, d.sum,
                                              nullptr, spec);
  });
}

void BM_cuda_shard_hash_columns_bf16(benchmark::State& st) {
  column_shard_bf16(st, gparity::hash::ShardSpec::V1);
}

template <std::size_t ES>
void BM_cuda_shard_hash_v2(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const std::int64_t shape[1] = {n / static_cast<std::int64_t>(ES)};
  Device& d = device();
  timed(st, n, [&] {
    gparity::hash::shard_hash_cuda_accumulate({d.src, ES, shape, {}}, {}, d.sum, nullptr,
                                              gparity::hash::ShardSpec::V2);
  });
}

// The same column shard under spec v2 (the rows kernel).
void BM_cuda_shard_hash_v2_columns_bf16(benchmark::State& st) {
  column_shard_bf16(st, gparity::hash::ShardSpec::V2);
}

void BM_cuda_read_reduce(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  Device& d = device();
  timed(st, n, [&] { gparity::bench::read_reduce_async(d.src, static_cast<std::size_t>(n), d.sum); });
}

void BM_cuda_d2d_copy(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  Device& d = device();
  timed(st, n, [&] {
    ok(cudaMemcpyAsync(d.dst, d.src, static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice), "copy");
  });
}

// One buffer of 8, 32 and 128 MiB, wall time: the chain figures' sizes.
void chain_sizes(benchmark::internal::Benchmark* b) {
  b->Arg(8 << 20)->Arg(32 << 20)->Arg(128 << 20)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// Wall time of one XXH3-64 of `n` bytes with the chain on the device: one call, then the wait.
void BM_cuda_xxh3_device_chain(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  Device& d = device();
  const gparity::hash::DeviceBytes b{d.src, n};
  for (auto _ : st) {
    gparity::hash::xxh3_64_cuda_batch({&b, 1}, d.sum, 1, nullptr, false);
    ok(cudaDeviceSynchronize(), "sync");
  }
  st.SetBytesProcessed(st.iterations() * st.range(0));
}

// The same with the chain on the host.
void BM_cuda_xxh3_host_chain(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  Device& d = device();
  gparity::hash::Xxh3HostDigests digests;
  const gparity::hash::DeviceBytes b{d.src, n};
  for (auto _ : st) {
    digests.enqueue({&b, 1}, nullptr);
    benchmark::DoNotOptimize(digests.finish());
  }
  st.SetBytesProcessed(st.iterations() * st.range(0));
}

// The host's part alone: one buffer's chains from its block sums already in host memory (CPU).
void BM_xxh3_chain_from_block_sums(benchmark::State& st) {
  const auto n = static_cast<std::uint64_t>(st.range(0));
  namespace cd = gparity::hash::cuda_detail;
  std::vector<std::uint64_t> sums(cd::xxh3_full_blocks(n) * cd::kXxh3Lanes);
  std::uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (auto& v : sums) v = x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  const std::vector<unsigned char> tail(2048, 0x5A);
  for (auto _ : st)
    benchmark::DoNotOptimize(
        cd::xxh3_from_block_sums(sums.data(), tail.data(), n, cd::xxh3_default_secret()));
  st.SetBytesProcessed(st.iterations() * st.range(0));
}

// The copy the host chain waits for: n / 16 bytes (the block sums) into pinned memory.
void BM_cuda_d2h_sums(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0)) / 16;
  Device& d = device();
  void* pinned = nullptr;
  ok(cudaMallocHost(&pinned, n), "cudaMallocHost");
  for (auto _ : st) {
    ok(cudaMemcpyAsync(pinned, d.src, n, cudaMemcpyDeviceToHost, nullptr), "copy");
    ok(cudaStreamSynchronize(nullptr), "sync");
  }
  cudaFreeHost(pinned);
  st.SetBytesProcessed(st.iterations() * static_cast<std::int64_t>(n));
}

// Host time of one hash_pairs_cuda_batch call over `n` dense f32 blocks of 64 KiB (a small
// model's weights), as the recorder makes it: a non-blocking stream of the caller's, the XXH3
// chains on the side stream, no pointer checks. The stream is drained between calls, outside
// the timing, so every call finds the GPU idle, as the recorder's steps do (docs/performance.md).
void BM_cuda_hash_pairs_enqueue_host(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  constexpr std::int64_t kElems = 16384;
  constexpr std::size_t kBytes = kElems * 4;
  std::byte* data = nullptr;
  std::uint64_t* words = nullptr;
  ok(cudaMalloc(&data, n * kBytes), "cudaMalloc blocks");
  ok(cudaMalloc(&words, n * 2 * sizeof(std::uint64_t)), "cudaMalloc words");
  ok(cudaMemset(data, 0x5A, n * kBytes), "cudaMemset");
  cudaStream_t stream = nullptr;
  ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const std::int64_t shape[1] = {kElems};
  std::vector<gparity::hash::DeviceBytes> bytes;
  std::vector<gparity::hash::BlockView> blocks;
  const std::vector<gparity::hash::GlobalPlacement> placements(n);
  for (std::size_t i = 0; i < n; ++i) {
    bytes.push_back({data + i * kBytes, kBytes});
    blocks.push_back({data + i * kBytes, 4, shape, {}});
  }
  const auto call = [&] {
    gparity::hash::hash_pairs_cuda_batch(bytes, blocks, placements, words, 2, stream,
                                         /*check_pointers=*/false);
  };
  call();  // first launches, the side stream, the scratch
  ok(cudaStreamSynchronize(stream), "warm-up");
  for (auto _ : st) {
    const auto start = std::chrono::steady_clock::now();
    call();
    const auto stop = std::chrono::steady_clock::now();
    st.SetIterationTime(std::chrono::duration<double>(stop - start).count());
    ok(cudaStreamSynchronize(stream), "sync");
  }
  ok(cudaGetLastError(), "after run");
  cudaStreamDestroy(stream);
  cudaFree(words);
  cudaFree(data);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t n = std::int64_t{64} << 20; n <= max_bytes(); n *= 4) b->Arg(n);
  b->UseManualTime()->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMicrosecond);
}

// Keeps each median's bytes/s so main() can print ratios of runs from this one process.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.aggregate_name != "median") continue;
      const std::string name = r.run_name.function_name;
      rate_[name][std::atoll(r.run_name.args.c_str())] = r.counters.at("bytes_per_second");
    }
  }
  void print_ratios() const {
    if (!rate_.count("BM_cuda_d2d_copy")) return;
    std::printf(
        "\nmedians of 3 (GB/s = 1e9 bytes/s). copy traffic = 2 x bytes (read + write); hash traffic = bytes "
        "read\n"
        "%8s %12s %10s %10s %10s %10s %10s | %9s %9s %9s %9s %9s\n",
        "MiB", "copy traffic", "hash u8", "hash bf16", "hash f32", "hash f64", "cols bf16", "u8/copy",
        "bf16/copy", "f32/copy", "f64/copy", "cols/copy");
    const auto get = [&](const char* name, long long n) {
      const auto it = rate_.find(name);
      return it == rate_.end() || !it->second.count(n) ? 0.0 : it->second.at(n);
    };
    for (const auto& [n, copy] : rate_.at("BM_cuda_d2d_copy")) {
      const double traffic = 2 * copy;
      const double h1 = get("BM_cuda_shard_hash<1>", n), h2 = get("BM_cuda_shard_hash<2>", n);
      const double h4 = get("BM_cuda_shard_hash<4>", n), h8 = get("BM_cuda_shard_hash<8>", n);
      const double hc = get("BM_cuda_shard_hash_columns_bf16", n);
      std::printf("%8lld %12.0f %10.0f %10.0f %10.0f %10.0f %10.0f | %9.3f %9.3f %9.3f %9.3f %9.3f\n",
                  n >> 20, traffic / 1e9, h1 / 1e9, h2 / 1e9, h4 / 1e9, h8 / 1e9, hc / 1e9, h1 / traffic,
                  h2 / traffic, h4 / traffic, h8 / traffic, hc / traffic);
    }
    if (!rate_.count("BM_cuda_read_reduce")) return;
    std::printf(
        "\nspec v2 vs a read-only reduction over the same bytes (medians of 3, GB/s = 1e9 bytes/s; bf16 is "
        "also f16, u8 also fp8; cols: bf16 [rows, 8192] columns 4096..8191, bytes of the shard)\n"
        "%8s %10s %9s %9s %9s %9s | %8s %8s %8s | %9s %9s | %8s %8s %8s\n",
        "MiB", "read (GB/s)", "v2 u8", "v2 bf16", "v2 f32", "v2 cols", "u8/read", "bf16/rd", "f32/read",
        "cols/bf16", "v1cols/b", "v1 u8/rd", "v1 bf16", "v1 f32");
    for (const auto& [n, rr] : rate_.at("BM_cuda_read_reduce")) {
      const double h1 = get("BM_cuda_shard_hash_v2<1>", n), h2 = get("BM_cuda_shard_hash_v2<2>", n);
      const double h4 = get("BM_cuda_shard_hash_v2<4>", n), hc = get("BM_cuda_shard_hash_v2_columns_bf16", n);
      const double v1c = get("BM_cuda_shard_hash_columns_bf16", n), v1b = get("BM_cuda_shard_hash<2>", n);
      std::printf(
          "%8lld %10.0f %9.0f %9.0f %9.0f %9.0f | %8.3f %8.3f %8.3f | %9.3f %9.3f | %8.3f %8.3f %8.3f\n",
          n >> 20, rr / 1e9, h1 / 1e9, h2 / 1e9, h4 / 1e9, hc / 1e9, h1 / rr, h2 / rr, h4 / rr,
          h2 > 0 ? hc / h2 : 0.0, v1b > 0 ? v1c / v1b : 0.0, get("BM_cuda_shard_hash<1>", n) / rr, v1b / rr,
          get("BM_cuda_shard_hash<4>", n) / rr);
    }
  }

 private:
  std::map<std::string, std::map<long long, double>> rate_;
};

}  // namespace

BENCHMARK(BM_cuda_d2d_copy)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_cuda_shard_hash, 4)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_cuda_shard_hash, 2)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_cuda_shard_hash, 1)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_cuda_shard_hash, 8)->Apply(sizes);
BENCHMARK(BM_cuda_shard_hash_columns_bf16)->Apply(sizes);
BENCHMARK(BM_cuda_read_reduce)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_cuda_shard_hash_v2, 4)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_cuda_shard_hash_v2, 2)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_cuda_shard_hash_v2, 1)->Apply(sizes);
BENCHMARK(BM_cuda_shard_hash_v2_columns_bf16)->Apply(sizes);
BENCHMARK(BM_cuda_xxh3_device_chain)->Apply(chain_sizes);
BENCHMARK(BM_cuda_xxh3_host_chain)->Apply(chain_sizes);
BENCHMARK(BM_xxh3_chain_from_block_sums)->Arg(8 << 20)->Arg(32 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_cuda_d2h_sums)->Apply(chain_sizes);
// 24: about the small bench_recorder model's weights; 56: the medium one's; 200: over every
// launch's largest parameter block.
BENCHMARK(BM_cuda_hash_pairs_enqueue_host)
    ->Arg(1)
    ->Arg(24)
    ->Arg(56)
    ->Arg(200)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (!gparity::hash::cuda_device_present()) {
    std::printf("no CUDA device: nothing to measure\n");
    return 0;
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios();
  benchmark::Shutdown();
  return 0;
}
