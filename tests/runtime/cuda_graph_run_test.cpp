// `gparity run --cuda-graph` end to end through the real binary. The option checks run
// everywhere; the rest needs a GPU and a CUDA LibTorch and is skipped without them: captured vs
// eager bitwise parity (loss, grad norm, weights, gradients, AdamW state), the trace records of
// capture and memory, the planted static-input violation caught by --cuda-graph-check (and the
// silent divergence it causes without the check), and a killed rank named with graphs alive.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "core/model/run/trace_writer.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/visible_gpus.hpp"

namespace gparity {
namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;

using gparity::testing::visible_gpus;

/// Skips (returns true) when this build of gparity cannot run on CUDA (a CPU LibTorch on a
/// machine that has a GPU); any other failure of the probe is the test's to report.
bool build_lacks_cuda(const std::filesystem::path& dir) {
  const auto r = gparity::testing::run_command(GPARITY_EXE, {"run",      "--out",   (dir / "probe").string(),
                                                             "--device", "cuda",    "--cuda-graph",
                                                             "--steps",  "2",       "--cuda-graph-warmup",
                                                             "1",        "--dim",   "8",
                                                             "--heads",  "1",       "--hidden",
                                                             "8",        "--vocab", "8",
                                                             "--layers", "1",       "--seq-len",
                                                             "4",        "--batch", "1"});
  return r.err.find("no NCCL support") != std::string::npos ||
         r.err.find("needs a LibTorch with CUDA") != std::string::npos;
}

#define SKIP_WITHOUT_GPUS(n)                                                         \
  do {                                                                               \
    if (visible_gpus() < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s)";          \
    TempDir probe_dir;                                                               \
    if (build_lacks_cuda(probe_dir.path())) GTEST_SKIP() << "no CUDA in this build"; \
  } while (false)

std::vector<std::string> tiny_run(const std::filesystem::path& out, int nproc,
                                  std::vector<std::string> extra) {
  std::vector<std::string> args{"run",
                                "--nproc",
                                std::to_string(nproc),
                                "--out",
                                out.string(),
                                "--steps",
                                "6",
                                "--dim",
                                "32",
                                "--layers",
                                "2",
                                "--heads",
                                "2",
                                "--hidden",
                                "64",
                                "--vocab",
                                "64",
                                "--seq-len",
                                "8",
                                "--batch",
                                "2",
                                "--timeout",
                                "30",
                                "--device",
                                "cuda",
                                "--hash-grads",
                                "--hash-optim"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

const model::EventRecord* find_event(const model::RankTrace& t, const std::string& kind) {
  for (const auto& e : t.events)
    if (e.kind == kind) return &e;
  return nullptr;
}

TEST(CudaGraphRun, OptionsAreChecked) {
  TempDir dir;
  auto r = run_command(GPARITY_EXE, {"run", "--out", (dir.path() / "a").string(), "--cuda-graph"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--cuda-graph needs --device cuda"), std::string::npos) << r.err;
  r = run_command(GPARITY_EXE, {"run", "--out", (dir.path() / "b").string(), "--cuda-graph-check"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("need --cuda-graph"), std::string::npos) << r.err;
  r = run_command(GPARITY_EXE, {"run", "--help"});
  EXPECT_NE(r.out.find("--cuda-graph-warmup"), std::string::npos);
  EXPECT_EQ(r.out.find("--cuda-graph-plant-violation"), std::string::npos) << "a testing option, hidden";
}

TEST(CudaGraphRun, ReplayIsBitwiseEqualToEager) {
  SKIP_WITHOUT_GPUS(1);
  const int nproc = std::min(visible_gpus(), 2);
  for (const char* dtype : {"f32", "bf16"}) {
    TempDir dir;
    const auto eager = dir.path() / "eager", graph = dir.path() / "graph";
    auto r = run_command(GPARITY_EXE, tiny_run(eager, nproc, {"--dtype", dtype}));
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    r = run_command(GPARITY_EXE,
                    tiny_run(graph, nproc, {"--dtype", dtype, "--cuda-graph", "--cuda-graph-check"}));
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto cmp = run_command(GPARITY_EXE, {"compare", eager.string(), graph.string()});
    EXPECT_EQ(cmp.exit_code, 0) << dtype << "\n" << cmp.out << cmp.err;
    EXPECT_NE(cmp.out.find("memory"), std::string::npos) << cmp.out;
    for (int rank = 0; rank < nproc; ++rank) {
      const auto t = model::read_rank_trace(model::rank_trace_path(graph, rank).string(), rank);
      ASSERT_EQ(t.steps.size(), 6u);
      EXPECT_NE(t.steps.back().find_hashes("optim.exp_avg_sq.xxh3"), nullptr);
      const auto* cap = find_event(t, "cuda_graph_capture");
      ASSERT_NE(cap, nullptr);
      EXPECT_EQ(cap->step, 3);  // after the default 2 warm-up steps
      const auto* mem = find_event(t, "device_memory");
      ASSERT_NE(mem, nullptr);
      EXPECT_EQ(mem->data.at("mode"), "cuda_graph");
      EXPECT_EQ(mem->data.at("replays"), 4);
      EXPECT_EQ(mem->data.at("copies_per_replay"), 1.0);
      EXPECT_EQ(mem->data.at("bytes_per_replay"), 2.0 * 9 * 8);  // tokens [batch, seq_len + 1] int64
      EXPECT_GT(mem->data.at("peak_reserved").get<std::int64_t>(), 0);
      const auto te = model::read_rank_trace(model::rank_trace_path(eager, rank).string(), rank);
      ASSERT_NE(find_event(te, "device_memory"), nullptr);
      EXPECT_EQ(find_event(te, "device_memory")->data.at("mode"), "eager");
    }
  }
}

TEST(CudaGraphRun, PlantedViolationIsCaughtByTheCheck) {
  SKIP_WITHOUT_GPUS(1);
  TempDir dir;
  const auto out = dir.path() / "planted";
  const auto r = run_command(
      GPARITY_EXE,
      tiny_run(out, 1, {"--cuda-graph", "--cuda-graph-check", "--cuda-graph-plant-violation", "4"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("CUDA graph check failed before the replay of step 4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("static input 'param.tok_embeddings.weight' moved"), std::string::npos) << r.err;
  const auto t = model::read_rank_trace(model::rank_trace_path(out, 0).string(), 0);
  EXPECT_EQ(t.steps.size(), 3u);
  const auto* f = find_event(t, "failure");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->step, 4);
}

TEST(CudaGraphRun, WithoutTheCheckThePlantedViolationDivergesSilently) {
  SKIP_WITHOUT_GPUS(1);
  TempDir dir;
  const auto eager = dir.path() / "eager", bad = dir.path() / "bad";
  ASSERT_EQ(run_command(GPARITY_EXE, tiny_run(eager, 1, {})).exit_code, 0);
  const auto r =
      run_command(GPARITY_EXE, tiny_run(bad, 1, {"--cuda-graph", "--cuda-graph-plant-violation", "4"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_command(GPARITY_EXE, {"compare", eager.string(), bad.string()}).exit_code, 1);
}

TEST(CudaGraphRun, KilledRankIsNamedWhileGraphsReplay) {
  SKIP_WITHOUT_GPUS(2);
  TempDir dir;
  const auto out = dir.path() / "killed";
  const auto r = run_command(GPARITY_EXE, tiny_run(out, 2, {"--cuda-graph", "--inject-fault", "kill:1:4"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("run failed: rank 1 was killed by signal 9"), std::string::npos) << r.err;
  const auto t0 = model::read_rank_trace(model::rank_trace_path(out, 0).string(), 0);
  EXPECT_GE(t0.steps.size(), 2u);
}

TEST(CudaGraphReplay, CapturedGraphIsBitwiseEqualToTheUncapturedRun) {
  SKIP_WITHOUT_GPUS(1);
  // AOT graphs of samples/replay (the attention forward is left out: traced on the CPU, it bakes
  // a device='cpu' mask, which replay keeps on the CPU). Every node's tensors after the last
  // replay equal the uncaptured run's.
  const auto samples = std::filesystem::path(GPARITY_SOURCE_DIR) / "samples" / "replay";
  for (const char* g : {"mlp_aot_forward.txt", "mlp_aot_backward.txt", "attention_aot_backward.txt"}) {
    TempDir dir;
    const auto out = dir.path() / "run";
    const auto r =
        run_command(GPARITY_EXE, {"replay", (samples / g).string(), "--out", out.string(), "--device", "cuda",
                                  "--cuda-graph", "--cuda-graph-check", "--repeat", "3", "--json"});
    ASSERT_EQ(r.exit_code, 0) << g << ": " << r.err << r.out;
    const auto t = model::read_rank_trace(model::rank_trace_path(out, 0).string(), 0);
    const auto* cg = find_event(t, "cuda_graph");
    ASSERT_NE(cg, nullptr) << g;
    EXPECT_EQ(cg->data["captured"]["runs"], 3) << g;
    EXPECT_GT(cg->data["static_inputs"].get<int>(), 0) << g;
    const auto* v = find_event(t, "replay_verdict");
    ASSERT_NE(v, nullptr) << g;
    EXPECT_EQ(v->data["outputs_equal"], true) << g << ": " << v->message;
    // Both executions' records are there, one per tensor each, with equal hashes.
    std::vector<std::uint64_t> plain, captured;
    for (const auto& n : t.nodes) (n.graph == "cuda-graph" ? captured : plain).push_back(n.shard);
    ASSERT_FALSE(plain.empty()) << g;
    EXPECT_EQ(plain, captured) << g;
  }
}

}  // namespace
}  // namespace gparity
