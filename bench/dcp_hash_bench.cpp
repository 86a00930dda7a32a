// Hashing a DCP checkpoint folder (`gparity hash DIR`: every tensor's shard-invariant hash and
// full-tensor XXH3-64, every storage's CRC-32 checked) side by side with reading the same files
// the way `cat > /dev/null` does (read() into a 128 KiB buffer, start to end). Goal of issue 11:
// the hash reaches >= 70% of the read's speed (2 threads here on the samples, 4 on the device
// machine's >= 4 GiB checkpoint, scripts/device-dcp-bench.sh).
//
// GPARITY_BENCH_DCP     the checkpoint folder (default: ../shared/samples/torch-2.11-dcp/fsdp4/step-0
//                       beside the source root)
// GPARITY_BENCH_THREADS hashing threads (default 2)
//
// BM_SideBySide alternates one read and one hash per iteration, so load from other processes
// falls on both alike, and reports `ratio` = read time / hash time (hash speed as a fraction of
// the read's). The page cache is warm for both (the fixture reads everything once first).
// BM_DcpMetadata is the `.metadata` decode alone.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model/base/mapped_file.hpp"
#include "core/model/formats/checkpoint_hash.hpp"
#include "core/model/formats/dcp_metadata.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Checkpoint {
  std::string dir;
  std::vector<std::string> files;  // .metadata and the data files: what `cat DIR/.metadata DIR/*` reads
  std::uint64_t bytes = 0;
  unsigned threads = 2;
  std::string problem;

  Checkpoint() {
    if (const char* env = std::getenv("GPARITY_BENCH_DCP")) {
      dir = env;
    } else {
      dir =
          (fs::path(GPARITY_SOURCE_DIR) / ".." / "shared" / "samples" / "torch-2.11-dcp" / "fsdp4" / "step-0")
              .string();
    }
    if (const char* env = std::getenv("GPARITY_BENCH_THREADS"))
      threads = static_cast<unsigned>(std::atoi(env));
    std::error_code ec;
    if (!fs::is_regular_file(fs::path(dir) / ".metadata", ec)) {
      problem = "no DCP checkpoint at " + dir + " (set GPARITY_BENCH_DCP)";
      return;
    }
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file()) files.push_back(e.path().string());
    for (const auto& f : files) bytes += fs::file_size(f, ec);
  }
};

const Checkpoint& checkpoint() {
  static const Checkpoint c;
  return c;
}

// What cat does: read() each file into one 128 KiB buffer until EOF.
std::uint64_t read_like_cat(const std::vector<std::string>& files) {
  static thread_local std::vector<char> buffer(std::size_t{128} << 10);
  std::uint64_t total = 0;
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // as coreutils' cat does
    for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;)
      total += static_cast<std::uint64_t>(n);
    ::close(fd);
  }
  return total;
}

std::size_t hash_once(const Checkpoint& c) {
  return gparity::model::hash_dcp_checkpoint(c.dir, {c.threads}).tensors.size();
}

bool usable(benchmark::State& state, const Checkpoint& c) {
  if (c.problem.empty()) return true;
  state.SkipWithError(c.problem.c_str());
  return false;
}

void BM_ReadLikeCat(benchmark::State& state) {
  const auto& c = checkpoint();
  if (!usable(state, c)) return;
  for (auto _ : state) benchmark::DoNotOptimize(read_like_cat(c.files));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
}

void BM_HashDcp(benchmark::State& state) {
  const auto& c = checkpoint();
  if (!usable(state, c)) return;
  for (auto _ : state) benchmark::DoNotOptimize(hash_once(c));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
  state.counters["threads"] = c.threads;
}

void BM_SideBySide(benchmark::State& state) {
  const auto& c = checkpoint();
  if (!usable(state, c)) return;
  read_like_cat(c.files);  // warm the page cache for both sides
  double read_s = 0, hash_s = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    benchmark::DoNotOptimize(read_like_cat(c.files));
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(hash_once(c));
    const auto t2 = Clock::now();
    read_s += std::chrono::duration<double>(t1 - t0).count();
    hash_s += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(std::chrono::duration<double>(t2 - t0).count());
  }
  const double n = static_cast<double>(state.iterations());
  const double gib = static_cast<double>(c.bytes) / static_cast<double>(1ULL << 30);
  state.counters["read_GiBps"] = gib * n / read_s;
  state.counters["hash_GiBps"] = gib * n / hash_s;
  state.counters["ratio"] = read_s / hash_s;  // goal: >= 0.70
  state.counters["threads"] = c.threads;
  state.counters["MiB"] = static_cast<double>(c.bytes) / static_cast<double>(1 << 20);
}

// The checkpoint's `.metadata` pickle decoded and interpreted from memory, warm: a fixed cost of
// every checkpoint, whatever its size (a process's first decode costs about three times as much:
// fresh pages for the value tree, cold code).
void BM_DcpMetadata(benchmark::State& state) {
  const auto& c = checkpoint();
  if (!usable(state, c)) return;
  const std::string path = (fs::path(c.dir) / ".metadata").string();
  const gparity::model::MappedFile file(path);
  for (auto _ : state) benchmark::DoNotOptimize(gparity::model::parse_dcp_metadata(file.bytes(), path));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * file.bytes().size()));
}

BENCHMARK(BM_DcpMetadata)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadLikeCat)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HashDcp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SideBySide)->Unit(benchmark::kMillisecond)->UseManualTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
