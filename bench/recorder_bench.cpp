// Recorder overhead: the debug model trained on one rank, every weight hashed (XXH3 +
// shard-invariant) every step. Reports the recorder's time as a ratio of the training step
// without it, side by side in one run, at two model sizes (a third, larger one on CUDA).
// GPARITY_BENCH_DEVICE=cuda runs on GPU 0 over NCCL (default: cpu over Gloo); the first step
// (allocator and kernel warm-up) is left out of the figures, which are medians of the others
// (GPU: 20 steps, 15 for the large model; CPU: 6, its medium step takes seconds). Goal on GPU: < 1%.
// GPARITY_RECORDER_PROFILE=1 adds, on stderr, where the recorder's host time goes per phase
// (core/runtime/recorder.hpp). GPARITY_RECORDER_GRAPH picks how the GPU steps launch their hashes
// (unset: one captured graph and a staging copy; "slot": a graph per pinned slot; "0": directly, launch by
// launch; core/runtime/recorder_graph.hpp); each line says which.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/runtime/launcher.hpp"
#include "core/runtime/recorder_graph.hpp"
#include "core/runtime/runner.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::runtime::DebugModelConfig;

std::string bench_device() {
  const char* d = std::getenv("GPARITY_BENCH_DEVICE");
  return d && *d ? d : "cpu";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run_model(benchmark::State& state, const char* name, const DebugModelConfig& cfg, std::int64_t steps) {
  const auto dir = std::filesystem::temp_directory_path() / ("gparity-bench-" + std::to_string(getpid()));
  gparity::runtime::RunOptions o;
  o.model = cfg;
  o.steps = bench_device() == "cuda" ? steps : std::min<std::int64_t>(steps, 7);
  o.hash_every = 1;
  o.out_dir = dir;
  o.device = bench_device();
  std::int64_t params = 0;
  for (const auto& p : gparity::runtime::debug_model_params(cfg)) {
    std::int64_t n = 1;
    for (auto d : p.shape) n *= d;
    params += n;
  }
  std::vector<double> step_ms, rec_ms, ratio;
  for (auto _ : state) {
    const gparity::runtime::RankEnv env{.master_addr = "127.0.0.1",
                                        .master_port = gparity::runtime::pick_free_port()};
    gparity::runtime::run_rank(o, env, [&](const gparity::runtime::StepReport& r) {
      if (r.step == 1) return;
      const double without = static_cast<double>(r.step_ns - r.recorder_ns);
      step_ms.push_back(without / 1e6);
      rec_ms.push_back(static_cast<double>(r.recorder_ns) / 1e6);
      ratio.push_back(static_cast<double>(r.recorder_ns) / without);
    });
  }
  gparity::testing::remove_tree(dir);  // not std::filesystem::remove_all (temp_dir.hpp says why)
  // Also printed at once: the figures survive a crash in a later benchmark or at exit.
  const char* graphs =
      gparity::runtime::detail::step_graph_mode_name(gparity::runtime::detail::step_graph_mode_from_env());
  std::printf(
      "recorder %s %s (hash launches: %s): params %lld step_ms_without_recorder %.3f recorder_ms %.4f ratio "
      "%.5f\n",
      o.device.c_str(), name, o.device == "cuda" ? graphs : "cpu, synchronous",
      static_cast<long long>(params), median(step_ms), median(rec_ms), median(ratio));
  std::fflush(stdout);
  state.counters["params"] = static_cast<double>(params);
  state.counters["step_ms_without_recorder"] = median(step_ms);
  state.counters["recorder_ms"] = median(rec_ms);
  state.counters["recorder_over_step"] = median(ratio);
}

void BM_RecorderSmall(benchmark::State& state) {
  run_model(state, "small",
            {.vocab = 256, .dim = 64, .layers = 2, .heads = 4, .hidden = 128, .seq_len = 32, .batch = 4}, 21);
}
void BM_RecorderMedium(benchmark::State& state) {
  run_model(state, "medium",
            {.vocab = 2048, .dim = 256, .layers = 4, .heads = 8, .hidden = 768, .seq_len = 64, .batch = 4},
            21);
}
void BM_RecorderLarge(benchmark::State& state) {
  if (bench_device() != "cuda") {
    state.SkipWithError("GPU only (GPARITY_BENCH_DEVICE=cuda)");
    return;
  }
  run_model(
      state, "large",
      {.vocab = 32000, .dim = 1024, .layers = 8, .heads = 16, .hidden = 2816, .seq_len = 512, .batch = 8},
      16);
}
BENCHMARK(BM_RecorderSmall)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RecorderMedium)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RecorderLarge)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
