// The recorder's captured step hashing (core/runtime/recorder_graph.hpp): the key that decides
// when a graph may run (any machine), and, on a GPU, that graph-launched steps write the same
// hashes as the direct path and the CPU, through in-place updates, a re-allocated tensor, a dtype
// change at the same address and a queue of pending steps.

#include "core/runtime/recorder_graph.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/runtime/recorder.hpp"
#include "tests/runtime/recorder_test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::runtime {
namespace {

using detail::StepGraphMode;
using detail::StepGraphs;
using testing_support::read_trace;
using testing_support::sample;
using testing_support::whole_param;

/// Sets GPARITY_RECORDER_GRAPH (unset for null) while alive.
class GraphModeEnv {
 public:
  explicit GraphModeEnv(const char* value) {
    if (value != nullptr)
      ::setenv("GPARITY_RECORDER_GRAPH", value, 1);
    else
      ::unsetenv("GPARITY_RECORDER_GRAPH");
  }
  ~GraphModeEnv() { ::unsetenv("GPARITY_RECORDER_GRAPH"); }
  GraphModeEnv(const GraphModeEnv&) = delete;
  GraphModeEnv& operator=(const GraphModeEnv&) = delete;
};

TEST(RecorderGraph, ModeComesFromTheEnvironment) {
  {
    const GraphModeEnv env(nullptr);
    EXPECT_EQ(detail::step_graph_mode_from_env(), StepGraphMode::Staging);
  }
  for (const char* direct : {"0", "off", "direct"}) {
    const GraphModeEnv env(direct);
    EXPECT_EQ(detail::step_graph_mode_from_env(), StepGraphMode::Direct) << direct;
  }
  {
    const GraphModeEnv env("slot");
    EXPECT_EQ(detail::step_graph_mode_from_env(), StepGraphMode::PerSlot);
  }
  const GraphModeEnv env("staging");
  EXPECT_EQ(detail::step_graph_mode_from_env(), StepGraphMode::Staging);
  EXPECT_FALSE(StepGraphs(StepGraphMode::Direct, 3).observe({}, {}));
}

// A graph may run only on the second step in a row with the same key: every tensor's address,
// bytes, dtype, sizes and strides, and the buffers the graph writes. The key is built the same
// way for any device, so CPU tensors show it here.
TEST(RecorderGraph, KeyMustRepeatBeforeAGraphRuns) {
  StepGraphs graphs(StepGraphMode::PerSlot, 3);
  const auto a = sample({8, 16});
  auto b = sample({4, 4});
  std::vector<at::Tensor> tensors{a, b};
  const std::uintptr_t buffers[] = {0x1000, 0x2000, 64};
  EXPECT_FALSE(graphs.observe(tensors, buffers));  // first step: nothing to compare with
  EXPECT_TRUE(graphs.observe(tensors, buffers));
  b.add_(1.0);  // values change, addresses do not
  EXPECT_TRUE(graphs.observe(tensors, buffers));

  tensors[1] = b.clone();  // re-allocated: a new address
  EXPECT_FALSE(graphs.observe(tensors, buffers));
  EXPECT_TRUE(graphs.observe(tensors, buffers));

  // The same address as another dtype (and so other bytes).
  const auto storage = at::zeros({8 * 16 * 4}, at::kByte);
  const auto as_f32 = storage.view(at::kFloat).view({8, 16});
  const auto as_bf16 = storage.narrow(0, 0, 8 * 16 * 2).view(at::kBFloat16).view({8, 16});
  ASSERT_EQ(as_f32.data_ptr(), as_bf16.data_ptr());
  tensors[0] = as_f32;
  EXPECT_FALSE(graphs.observe(tensors, buffers));
  EXPECT_TRUE(graphs.observe(tensors, buffers));
  tensors[0] = as_bf16;
  EXPECT_FALSE(graphs.observe(tensors, buffers));
  EXPECT_TRUE(graphs.observe(tensors, buffers));
  // The same address and bytes, another shape.
  tensors[0] = as_bf16.view({16, 8});
  EXPECT_FALSE(graphs.observe(tensors, buffers));
  EXPECT_TRUE(graphs.observe(tensors, buffers));

  // Buffers the graph writes moved (a bigger table made the recorder reallocate its words).
  const std::uintptr_t moved[] = {0x3000, 0x2000, 64};
  EXPECT_FALSE(graphs.observe(tensors, moved));
  EXPECT_TRUE(graphs.observe(tensors, moved));

  // A strided tensor never goes into a graph (XXH3 would copy it: an allocation in the capture).
  tensors[1] = sample({4, 6}).t();
  EXPECT_FALSE(graphs.observe(tensors, moved));
  EXPECT_FALSE(graphs.observe(tensors, moved));
  EXPECT_EQ(graphs.captures(), 0u);
}

struct StepHashes {
  std::vector<std::uint64_t> param_xxh3, param_shard, grad_xxh3, grad_shard;
  std::uint64_t loss_bits = 0;
  bool graph = false;
  bool operator==(const StepHashes&) const = default;
};

/// The values of the test's tensors at each step: `update` is the "optimizer step" before
/// steps 2.. (f32 adds and negations round alike on the CPU and the GPU).
struct StepTensorsOf {
  at::Tensor p0, p1, g0, g1_f32, g1_bf16;
  bool bf16 = false;  // from step 8 on, the second gradient is the bf16 one
  static StepTensorsOf initial() {
    return {sample({2048, 4096}), sample({8, 16}).mul(3.0), sample({2048, 4096}).mul(0.5),
            sample({8, 16}).add(2.0), sample({8, 16}, at::kBFloat16).neg()};
  }
  at::Tensor& g1() { return bf16 ? g1_bf16 : g1_f32; }
  void update() {
    p0.add_(1.0);
    p1.neg_();
    g0.add_(0.25);
    g1().neg_();
  }
};

/// Ten asynchronous steps of two parameters and their gradients on the GPU, updated in place
/// between steps (after before_update, as an optimizer would); at step 5 a parameter is
/// re-allocated (a new address), at step 8 a gradient becomes a bf16 tensor at the same address.
/// The host never waits for the GPU (32 MiB tensors), so steps pile up in the queue. Returns
/// what the trace says of each step, checked against the CPU's hashes of the same values.
std::vector<StepHashes> run_steps(const char* mode, std::size_t& max_pending) {
  const GraphModeEnv env(mode);
  testing::TempDir dir;
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const auto cpu = StepTensorsOf::initial();
  auto p0 = cpu.p0.to(at::kCUDA);
  const auto p1 = cpu.p1.to(at::kCUDA);
  const auto g0 = cpu.g0.to(at::kCUDA);
  const auto g1_storage = at::empty({8 * 16 * 4}, cuda.dtype(at::kByte));
  const auto g1_f32 = g1_storage.view(at::kFloat).view({8, 16});
  const auto g1_bf16 = g1_storage.narrow(0, 0, 8 * 16 * 2).view(at::kBFloat16).view({8, 16});
  g1_f32.copy_(cpu.g1_f32.to(at::kCUDA));
  const auto g1_bf16_values = cpu.g1_bf16.to(at::kCUDA);
  at::Tensor g1 = g1_f32;
  std::vector<at::Tensor> losses;
  losses.reserve(10);
  max_pending = 0;
  {
    Recorder rec(dir.path(), 0);
    rec.params({whole_param("p0", cpu.p0), whole_param("p1", cpu.p1)});
    for (std::int64_t step = 1; step <= 10; ++step) {
      rec.before_update();
      if (step > 1) {  // as StepTensorsOf::update
        p0.add_(1.0);
        p1.neg_();
        g0.add_(0.25);
        g1.neg_();
      }
      if (step == 5) p0 = p0.clone();  // a new address, the same values
      if (step == 8) {                 // the same address, another dtype
        g1 = g1_bf16;
        g1.copy_(g1_bf16_values);
      }
      losses.push_back(at::full({}, static_cast<double>(step), cuda.dtype(at::kFloat)));
      const std::vector<at::Tensor> params{p0, p1};
      const std::vector<at::Tensor> grads{g0, g1};
      rec.step_async({step, &losses.back(), nullptr, params, grads, {}});
      max_pending = std::max(max_pending, rec.pending_steps());
      EXPECT_LE(rec.pending_steps(), Recorder::kMaxPendingSteps);
    }
  }  // the destructor writes what is pending

  std::vector<StepHashes> want;
  auto mirror = StepTensorsOf::initial();
  for (std::int64_t step = 1; step <= 10; ++step) {
    if (step > 1) mirror.update();
    if (step == 8) mirror.bf16 = true;  // the bf16 values as they were at the start
    const auto hp0 = hash_block(mirror.p0), hp1 = hash_block(mirror.p1), hg0 = hash_block(mirror.g0),
               hg1 = hash_block(mirror.g1());
    const auto loss_value = static_cast<float>(step);
    std::uint32_t loss_bits = 0;
    std::memcpy(&loss_bits, &loss_value, sizeof loss_bits);
    want.push_back({{hp0.xxh3, hp1.xxh3},
                    {hp0.shard, hp1.shard},
                    {hg0.xxh3, hg1.xxh3},
                    {hg0.shard, hg1.shard},
                    loss_bits,
                    false});
  }

  const auto trace = read_trace(dir);
  EXPECT_TRUE(trace.issues.empty());
  std::vector<StepHashes> got;
  for (const auto& s : trace.steps) {
    StepHashes h;
    for (const auto& [name, field] :
         {std::pair{"param.xxh3", &StepHashes::param_xxh3},
          std::pair{"param.shard", &StepHashes::param_shard}, std::pair{"grad.xxh3", &StepHashes::grad_xxh3},
          std::pair{"grad.shard", &StepHashes::grad_shard}}) {
      const auto* values = s.find_hashes(name);
      if (values != nullptr) h.*field = values->values;
    }
    h.loss_bits = s.loss ? s.loss->bits : 0;
    h.graph = s.extra.value("recorder_graph", false);
    got.push_back(h);
  }
  EXPECT_EQ(got.size(), want.size()) << mode;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    auto expected = want[i];
    expected.graph = got[i].graph;  // checked by the caller
    EXPECT_EQ(got[i], expected) << "mode " << mode << ", step " << i + 1;
  }
  return got;
}

TEST(RecorderGraph, CudaGraphStepsEqualTheDirectPathsAndTheCpus) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device (or a LibTorch without CUDA): graph capture not run";
  std::size_t pending_direct = 0, pending_slot = 0, pending_staging = 0;
  const auto direct = run_steps("0", pending_direct);
  const auto slot = run_steps("slot", pending_slot);
  const auto staging = run_steps("staging", pending_staging);
  ASSERT_EQ(direct.size(), 10u);
  // Direct: no graphs. Graphs: every step whose key is the previous step's (not step 1, nor the
  // steps of the new address and the new dtype), captured or replayed.
  const std::set<std::size_t> graph_steps{2, 3, 4, 6, 7, 9, 10};
  for (std::size_t i = 0; i < direct.size(); ++i) {
    const std::size_t step = i + 1;
    EXPECT_FALSE(direct[i].graph) << "step " << step;
    ASSERT_LT(i, slot.size());
    ASSERT_LT(i, staging.size());
    EXPECT_EQ(slot[i].graph, graph_steps.count(step) == 1) << "slot, step " << step;
    EXPECT_EQ(staging[i].graph, graph_steps.count(step) == 1) << "staging, step " << step;
    auto same = slot[i];
    same.graph = false;
    EXPECT_EQ(same, direct[i]) << "slot vs direct, step " << step;
    same = staging[i];
    same.graph = false;
    EXPECT_EQ(same, direct[i]) << "staging vs direct, step " << step;
  }
  // The host ran ahead of the hashes: several steps were out at once, each in its own slot.
  EXPECT_GE(pending_slot, 2u);
  EXPECT_GE(pending_staging, 2u);
}

// GPARITY_RECORDER_PROFILE=1 on a GPU: the graph launch is a phase of its own, and the profile
// says how the hashes were launched.
TEST(RecorderGraph, CudaProfileShowsTheGraphLaunch) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device (or a LibTorch without CUDA): graph capture not run";
  const GraphModeEnv env(nullptr);
  testing::TempDir dir;
  const auto w_cpu = sample({64, 32});
  const auto w = w_cpu.to(at::kCUDA);
  const auto loss = at::full({}, 1.0, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
  const std::vector<at::Tensor> params{w};
  ::setenv("GPARITY_RECORDER_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  {
    Recorder rec(dir.path(), 0);
    rec.params({whole_param("w", w_cpu)});
    for (std::int64_t step = 1; step <= 6; ++step) {
      rec.before_update();
      rec.step_async({step, &loss, nullptr, params, {}, {}});
    }
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  ::unsetenv("GPARITY_RECORDER_PROFILE");
  EXPECT_NE(err.find("hash launches: staging, 1 captures"), std::string::npos) << err;
  EXPECT_NE(err.find("  graph "), std::string::npos) << err;
  EXPECT_NE(err.find("  capture "), std::string::npos) << err;
  const auto trace = read_trace(dir);
  ASSERT_EQ(trace.steps.size(), 6u);
  EXPECT_FALSE(trace.steps[0].extra.value("recorder_graph", false));
  for (std::size_t i = 1; i < trace.steps.size(); ++i)
    EXPECT_TRUE(trace.steps[i].extra.value("recorder_graph", false)) << "step " << i + 1;
}

}  // namespace
}  // namespace gparity::runtime
