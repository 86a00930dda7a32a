// CUDA-graph mode's speed: the debug model's training step eager vs captured-and-replayed
// (`gparity run --cuda-graph`), side by side in one process on GPU 0 (one rank over NCCL), at a
// small size (launch-bound: the replay saves the host's kernel launches and per-collective
// waits) and a larger one (compute-bound: little to gain). Figures are medians over the steps
// after warm-up and capture, weights hashed never (the recorder has its own benchmark). Reports
// step_ms_eager, step_ms_graph, speedup (eager / graph) and peak reserved memory of each, the
// memory ratio being the other half of the trade. Needs a GPU and a CUDA LibTorch; skips without.
// The large size keeps batch x seq_len at 2,048 tokens: above 3,072 the embedding's backward takes
// its sort-based path, whose graph safety depends on the PyTorch release.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "core/runtime/cuda_graph.hpp"
#include "core/runtime/launcher.hpp"
#include "core/runtime/runner.hpp"

namespace {

using gparity::runtime::DebugModelConfig;
using gparity::runtime::RunOptions;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Figures {
  double step_ms = 0;
  double peak_reserved_mib = 0;
};

Figures one_run(const DebugModelConfig& cfg, std::int64_t steps, bool graph) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gparity-cgbench-" + std::to_string(getpid()) + (graph ? "-graph" : "-eager"));
  RunOptions o;
  o.model = cfg;
  o.steps = steps;
  o.hash_every = 0;
  o.out_dir = dir;
  o.device = "cuda";
  o.cuda_graph = graph;
  o.cuda_graph_warmup = 2;
  const gparity::runtime::RankEnv env{0, 1, 0, "127.0.0.1", gparity::runtime::pick_free_port()};
  std::vector<double> ms;
  const auto summary = gparity::runtime::run_rank(o, env, [&](const gparity::runtime::StepReport& r) {
    // Steps 1-2: warm-up (eager in both modes); step 3 captures in graph mode.
    if (r.step > 3) ms.push_back(static_cast<double>(r.step_ns) / 1e6);
  });
  std::filesystem::remove_all(dir);
  return {median(ms), static_cast<double>(summary.peak_reserved) / (1 << 20)};
}

void compare(benchmark::State& state, const char* name, const DebugModelConfig& cfg, std::int64_t steps) {
  if (!gparity::runtime::cuda_graphs_available()) {
    state.SkipWithError("needs a CUDA LibTorch and a GPU");
    return;
  }
  Figures eager, graph;
  try {
    for (auto _ : state) {
      eager = one_run(cfg, steps, false);
      graph = one_run(cfg, steps, true);
    }
  } catch (const std::exception& e) {  // one size failing leaves the other's figures
    std::printf("cuda-graph %s: failed: %s\n", name, e.what());
    std::fflush(stdout);
    state.SkipWithError(e.what());
    return;
  }
  const double speedup = graph.step_ms > 0 ? eager.step_ms / graph.step_ms : 0;
  const double mem = eager.peak_reserved_mib > 0 ? graph.peak_reserved_mib / eager.peak_reserved_mib : 0;
  std::printf(
      "cuda-graph %s: step_ms_eager %.3f step_ms_graph %.3f speedup %.2fx peak_reserved_mib eager %.1f "
      "graph %.1f ratio %.3f\n",
      name, eager.step_ms, graph.step_ms, speedup, eager.peak_reserved_mib, graph.peak_reserved_mib, mem);
  std::fflush(stdout);
  state.counters["step_ms_eager"] = eager.step_ms;
  state.counters["step_ms_graph"] = graph.step_ms;
  state.counters["speedup"] = speedup;
  state.counters["reserved_ratio"] = mem;
}

void BM_CudaGraphSmall(benchmark::State& state) {
  compare(state, "small",
          {.vocab = 256, .dim = 64, .layers = 2, .heads = 4, .hidden = 128, .seq_len = 32, .batch = 4}, 20);
}
void BM_CudaGraphLarge(benchmark::State& state) {
  compare(state, "large",
          {.vocab = 32000, .dim = 1024, .layers = 8, .heads = 16, .hidden = 2816, .seq_len = 512, .batch = 4},
          20);
}
BENCHMARK(BM_CudaGraphSmall)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaGraphLarge)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
