// Parse throughput of a multi-rank TORCH_TRACE directory: 2 ranks of >= 100 MiB each, made by
// repeating the sample logs (tests/data/graph/compile) in a temp dir. Reports MB/s overall and
// per core, with ranks parsed in parallel (2 threads) and serially (1 thread) side by side, and
// the record index alone (no graph parsing) for scale. Goal: >= 200 MB/s per core.

#include <benchmark/benchmark.h>
#include <time.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/model/formats/torch_trace.hpp"

namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kTargetBytes = 100ull << 20;

struct TraceDir {
  fs::path dir;
  std::uint64_t bytes = 0;
  TraceDir() {
    dir = fs::temp_directory_path() / ("gparity-bench-trace-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path src = fs::path(GPARITY_SOURCE_DIR) / "tests/data/graph/compile";
    int rank = 0;
    for (const auto& e : fs::directory_iterator(src)) {
      if (e.path().extension() != ".log") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string one = ss.str();
      std::ofstream out(dir / ("dedicated_log_torch_trace_rank_" + std::to_string(rank++) + "_bench.log"),
                        std::ios::binary);
      std::uint64_t written = 0;
      while (written < kTargetBytes) {
        out << one;
        written += one.size();
      }
      bytes += written;
    }
  }
  ~TraceDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TraceDir& trace_dir() {
  static TraceDir d;
  return d;
}

void run(benchmark::State& state, unsigned threads, bool graphs) {
  auto& d = trace_dir();
  gparity::model::TraceOptions opt;
  opt.parse_graphs = graphs;
  std::size_t nodes = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    const auto t = gparity::model::read_torch_trace_dir(d.dir.string(), opt, threads);
    if (t.problem_count() != 0) state.SkipWithError("trace problems");
    nodes = 0;
    for (const auto& r : t.ranks) {
      for (const auto& g : r.graphs) nodes += g.graph.nodes.size();
    }
    benchmark::DoNotOptimize(nodes);
  }
  const double cpu = process_cpu_seconds() - cpu0;
  // Throughput per CPU-second of all threads: the per-core figure even when other work shares
  // the cores (wall-clock MB/s per thread only equals it on an idle machine).
  state.counters["MB_per_cpu_s"] = static_cast<double>(state.iterations() * d.bytes) / 1e6 / cpu;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * d.bytes));
  state.counters["MB_per_s_per_core"] = benchmark::Counter(
      static_cast<double>(state.iterations() * d.bytes) / 1e6 / threads, benchmark::Counter::kIsRate);
  state.counters["graph_nodes"] = static_cast<double>(nodes);
  state.counters["trace_MiB"] = static_cast<double>(d.bytes) / (1 << 20);
}

void BM_TraceDir_Parallel2(benchmark::State& s) {
  run(s, 2, true);
}
void BM_TraceDir_Serial(benchmark::State& s) {
  run(s, 1, true);
}
void BM_TraceDir_IndexOnly_Parallel2(benchmark::State& s) {
  run(s, 2, false);
}

BENCHMARK(BM_TraceDir_Parallel2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_TraceDir_Serial)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK(BM_TraceDir_IndexOnly_Parallel2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
