// Hash throughput next to its baselines, measured side by side in one run:
//   xxh3 (ours)   vs XXH3_64bits from libxxhash on the same buffer (goal: >= 95%)
//   shard hash    vs a plain 64-bit read-sum (goal: >= 70% on >= 64 MiB, single thread)
//   shard hash v2 vs the same read-sum, f32, bf16 and u8 (issue 24 goal: >= 90% at 256 MiB, f32 and bf16)
//   memcpy        for scale.
// After the runs, prints a ratio table. Sizes: 4 KiB .. 1 GiB (GPARITY_BENCH_MAX_MIB caps it).

#include <benchmark/benchmark.h>
#include <xxhash.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"

namespace {

std::vector<std::byte>& buffer(std::size_t bytes) {
  static std::vector<std::byte> buf;
  if (buf.size() < bytes) {
    buf.resize(bytes);
    std::uint64_t x = 0x12345678;
    for (std::size_t i = 0; i < buf.size(); i += 8) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      std::memcpy(&buf[i], &x, std::min<std::size_t>(8, buf.size() - i));
    }
  }
  return buf;
}

void set_bytes(benchmark::State& st, std::size_t n) {
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
}

void BM_xxh3_ours(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const auto& b = buffer(n);
  for (auto _ : st) benchmark::DoNotOptimize(gparity::hash::xxh3_64(std::span(b.data(), n)));
  set_bytes(st, n);
}

void BM_xxh3_libxxhash(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const auto& b = buffer(n);
  for (auto _ : st) benchmark::DoNotOptimize(XXH3_64bits(b.data(), n));
  set_bytes(st, n);
}

template <std::size_t ES>
void BM_shard_hash(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const auto& b = buffer(n);
  for (auto _ : st) benchmark::DoNotOptimize(gparity::hash::shard_hash_run(b.data(), ES, n / ES, 0));
  set_bytes(st, n);
}

template <std::size_t ES>
void BM_shard_hash_v2(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const auto& b = buffer(n);
  for (auto _ : st) {
    benchmark::DoNotOptimize(
        gparity::hash::shard_hash_run(gparity::hash::ShardSpec::V2, b.data(), ES, n / ES, 0));
  }
  set_bytes(st, n);
}

void BM_shard_hash_mt(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const auto& b = buffer(n);
  for (auto _ : st) benchmark::DoNotOptimize(gparity::hash::shard_hash_contiguous(std::span(b.data(), n), 4));
  set_bytes(st, n);
}

void BM_read_sum(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const auto& b = buffer(n);
  for (auto _ : st) {
    std::uint64_t acc = 0;
    const auto* p = reinterpret_cast<const std::uint64_t*>(b.data());
    for (std::size_t i = 0; i < n / 8; ++i) acc += p[i];
    benchmark::DoNotOptimize(acc);
  }
  set_bytes(st, n);
}

void BM_memcpy(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const auto& b = buffer(n);
  static std::vector<std::byte> dst;
  if (dst.size() < n) dst.resize(n);
  for (auto _ : st) {
    std::memcpy(dst.data(), b.data(), n);
    benchmark::ClobberMemory();
  }
  set_bytes(st, n);
}

std::int64_t max_bytes() {
  const char* env = std::getenv("GPARITY_BENCH_MAX_MIB");
  return (env ? std::atoll(env) : 1024) << 20;
}

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t n = 4 << 10; n <= max_bytes(); n *= 16) b->Arg(n);
}

// Collects bytes/s per (benchmark, size) so main() can print ratios of runs from this process.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      const std::string name = r.benchmark_name();
      const auto slash = name.find('/');
      rate_[name.substr(0, slash)][std::atoll(name.c_str() + slash + 1)] = r.counters.at("bytes_per_second");
    }
  }
  void print_ratios() const {
    // A benchmark left out by --benchmark_filter shows as nan.
    const auto get = [&](const char* name, long long n) {
      const auto it = rate_.find(name);
      return it == rate_.end() || !it->second.count(n) ? std::nan("") : it->second.at(n);
    };
    std::printf("\nratios (same process, same buffers)\n%12s %14s %18s %18s %18s %14s %14s %14s %14s\n",
                "bytes", "xxh3/libxxhash", "shard_f32/readsum", "shard_bf16/readsum", "shard_mt/readsum",
                "memcpy/readsum", "v2_f32/readsum", "v2_bf16/readsum", "v2_u8/readsum");
    if (!rate_.count("BM_read_sum")) return;
    for (const auto& [n, rs] : rate_.at("BM_read_sum")) {
      std::printf("%12lld %14.3f %18.3f %18.3f %18.3f %14.3f %14.3f %14.3f %14.3f\n", n,
                  get("BM_xxh3_ours", n) / get("BM_xxh3_libxxhash", n), get("BM_shard_hash<4>", n) / rs,
                  get("BM_shard_hash<2>", n) / rs, get("BM_shard_hash_mt", n) / rs, get("BM_memcpy", n) / rs,
                  get("BM_shard_hash_v2<4>", n) / rs, get("BM_shard_hash_v2<2>", n) / rs,
                  get("BM_shard_hash_v2<1>", n) / rs);
    }
  }

 private:
  std::map<std::string, std::map<long long, double>> rate_;
};

}  // namespace

BENCHMARK(BM_xxh3_ours)->Apply(sizes);
BENCHMARK(BM_xxh3_libxxhash)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_shard_hash, 4)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_shard_hash, 2)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_shard_hash_v2, 4)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_shard_hash_v2, 2)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_shard_hash_v2, 1)->Apply(sizes);
BENCHMARK(BM_shard_hash_mt)->Apply(sizes)->UseRealTime();
BENCHMARK(BM_read_sum)->Apply(sizes);
BENCHMARK(BM_memcpy)->Apply(sizes);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios();
  benchmark::Shutdown();
  return 0;
}
