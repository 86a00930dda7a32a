// Compare two synthetic trace runs of 64 ranks x 1,000 steps x 1,000 parameters (goal: < 10 s
// and < 1 GiB peak RSS on a 2-core machine), side by side with `cat > /dev/null` of the same
// files. The runs are generated here into a temporary folder and deleted afterwards.
// Override the size with GPARITY_BENCH_RANKS / _STEPS / _PARAMS.

#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/synthetic_trace.hpp"
#include "core/model/run/run_source.hpp"
#include "diff/runs/run_compare.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gparity;

using bench::env_int;

const int kRanks = env_int("GPARITY_BENCH_RANKS", 64);
const int kSteps = env_int("GPARITY_BENCH_STEPS", 1000);
const int kParams = env_int("GPARITY_BENCH_PARAMS", 1000);

void write_run(const fs::path& dir) {
  model::RunManifest m;
  m.world_size = kRanks;
  model::write_manifest(dir, m);
  for (int r = 0; r < kRanks; ++r) {
    model::TraceWriter w(dir, r);
    model::ParamsRecord p;
    for (int i = 0; i < kParams; ++i) {
      p.params.push_back(
          {"layers." + std::to_string(i) + ".weight", model::DType::F32, {1024}, {0}, {1024}, {}, r == 0});
    }
    w.write_params(p);
    bench::write_random_steps(w, static_cast<std::uint64_t>(r), kSteps, kParams, 1.0F);
  }
}

struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("gparity-compare-bench-" + std::to_string(::getpid()));
  Fixture() {
    write_run(dir / "a");
    fs::create_directories(dir / "b");
    for (const auto& e : fs::directory_iterator(dir / "a"))
      fs::copy_file(e.path(), dir / "b" / e.path().filename());
  }
  ~Fixture() { fs::remove_all(dir); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

class NullConsumer final : public diff::FindingConsumer {
 public:
  void finding(const diff::Finding&) override {}
};

void BM_Compare(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) {
    const auto a = model::open_run((f.dir / "a").string());
    const auto b = model::open_run((f.dir / "b").string());
    NullConsumer out;
    benchmark::DoNotOptimize(diff::compare_runs(a, b, {}, out));
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void BM_CatDevNull(benchmark::State& state) {
  auto& f = fixture();
  const std::string cmd =
      "cat " + (f.dir / "a").string() + "/*.jsonl " + (f.dir / "b").string() + "/*.jsonl > /dev/null";
  for (auto _ : state) benchmark::DoNotOptimize(std::system(cmd.c_str()));
}

BENCHMARK(BM_CatDevNull)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_Compare)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
