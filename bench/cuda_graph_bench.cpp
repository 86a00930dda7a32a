// CUDA-graph mode's speed: the debug model's training step eager vs captured-and-replayed
// (`gparity run --cuda-graph`), side by side in one benchmark run on GPU 0 (one rank over NCCL),
// at a small size (launch-bound: the replay saves the host's kernel launches and per-collective
// waits) and a larger one (compute-bound: less to gain). Each configuration runs as its own
// `gparity run --nproc 1 --json` process (as users run it; an in-process second run crashed on
// the device), 20 steps, weights never hashed (the recorder has its own benchmark); the figures
// are the rank's median step time and peak reserved device memory. Reports step_ms_eager,
// step_ms_graph, speedup (eager / graph) and reserved_ratio (graph / eager). Needs a GPU and a
// CUDA build of gparity; a configuration that fails is reported as an error, the others still run.
// The large size keeps batch x seq_len at 2,048 tokens: above 3,072 the embedding's backward takes
// its sort-based path, whose graph safety depends on the PyTorch release.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.hpp"

namespace {

struct Figures {
  double step_ms = 0;
  double peak_reserved_mib = 0;
  std::string error;
};

Figures one_run(const std::vector<std::string>& model, bool graph) {
  const std::string out = "/tmp/gparity-cgbench-" + std::string(graph ? "graph" : "eager");
  std::vector<std::string> args{"run", "--nproc", "1",  "--device",     "cuda", "--out",
                                out,   "--steps", "20", "--hash-every", "0",    "--json"};
  args.insert(args.end(), model.begin(), model.end());
  if (graph) args.emplace_back("--cuda-graph");
  const auto r = gparity::testing::run_command(GPARITY_EXE, args);
  Figures f;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const auto brace = line.find('{');
    if (brace == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line.substr(brace), nullptr, false);
    if (j.is_discarded() || !j.contains("median_step_ns")) continue;
    f.step_ms = j["median_step_ns"].get<double>() / 1e6;
    f.peak_reserved_mib = j.value("peak_reserved", 0.0) / (1 << 20);
  }
  if (r.exit_code != 0 || f.step_ms == 0)
    f.error = "gparity run" + std::string(graph ? " --cuda-graph" : "") + " exited " +
              std::to_string(r.exit_code) + ": " + r.err.substr(0, 300);
  return f;
}

void compare(benchmark::State& state, const char* name, const std::vector<std::string>& model) {
  Figures eager, graph;
  for (auto _ : state) {
    eager = one_run(model, false);
    graph = one_run(model, true);
  }
  for (const auto* f : {&eager, &graph}) {
    if (!f->error.empty()) {
      std::printf("cuda-graph %s: %s\n", name, f->error.c_str());
      state.SkipWithError(f->error.c_str());
      return;
    }
  }
  const double speedup = eager.step_ms / graph.step_ms;
  const double mem = eager.peak_reserved_mib > 0 ? graph.peak_reserved_mib / eager.peak_reserved_mib : 0;
  // Also printed at once: the figures survive a crash in a later benchmark.
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
          {"--vocab", "256", "--dim", "64", "--layers", "2", "--heads", "4", "--hidden", "128", "--seq-len",
           "32", "--batch", "4"});
}
void BM_CudaGraphLarge(benchmark::State& state) {
  compare(state, "large",
          {"--vocab", "32000", "--dim", "1024", "--layers", "8", "--heads", "16", "--hidden", "2816",
           "--seq-len", "512", "--batch", "4"});
}
BENCHMARK(BM_CudaGraphSmall)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CudaGraphLarge)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
