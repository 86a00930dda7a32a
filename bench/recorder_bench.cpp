// Recorder overhead: the debug model trained on one rank (Gloo, CPU), every weight hashed
// (XXH3 + shard-invariant) every step. Reports the recorder's time as a ratio of the training
// step without it, side by side in one run, at two model sizes. Goal on GPU: < 1%.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "core/runtime/launcher.hpp"
#include "core/runtime/runner.hpp"

namespace {

using gparity::runtime::DebugModelConfig;

void run_model(benchmark::State& state, const DebugModelConfig& cfg) {
  const auto dir = std::filesystem::temp_directory_path() / ("gparity-bench-" + std::to_string(getpid()));
  gparity::runtime::RunOptions o;
  o.model = cfg;
  o.steps = 6;
  o.hash_every = 1;
  o.out_dir = dir;
  double ratio = 0, step_ms = 0, rec_ms = 0;
  std::int64_t params = 0;
  for (const auto& p : gparity::runtime::debug_model_params(cfg)) {
    std::int64_t n = 1;
    for (auto d : p.shape) n *= d;
    params += n;
  }
  for (auto _ : state) {
    const gparity::runtime::RankEnv env{0, 1, 0, "127.0.0.1", gparity::runtime::pick_free_port()};
    const auto s = gparity::runtime::run_rank(o, env);
    rec_ms = s.mean_recorder_ns / 1e6;
    step_ms = (s.mean_step_ns - s.mean_recorder_ns) / 1e6;
    ratio = s.mean_recorder_ns / (s.mean_step_ns - s.mean_recorder_ns);
  }
  std::filesystem::remove_all(dir);
  state.counters["params"] = static_cast<double>(params);
  state.counters["step_ms_without_recorder"] = step_ms;
  state.counters["recorder_ms"] = rec_ms;
  state.counters["recorder_over_step"] = ratio;
}

void BM_RecorderSmall(benchmark::State& state) {
  run_model(state,
            {.vocab = 256, .dim = 64, .layers = 2, .heads = 4, .hidden = 128, .seq_len = 32, .batch = 4});
}
void BM_RecorderMedium(benchmark::State& state) {
  run_model(state,
            {.vocab = 2048, .dim = 256, .layers = 4, .heads = 8, .hidden = 768, .seq_len = 64, .batch = 4});
}
BENCHMARK(BM_RecorderSmall)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RecorderMedium)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
