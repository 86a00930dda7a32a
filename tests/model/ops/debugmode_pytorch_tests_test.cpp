// The DebugMode reader (core/model/ops/debugmode.hpp) on PyTorch's own expected DebugMode
// outputs: tests/data/ops/debugmode_pytorch_tests (the assertExpectedInline strings of
// test/distributed/tensor/debug/test_debug_mode.py; README.md there says which commit and test).
// Every file reads without an issue; torch-function lines (record_torchfunction=True) are
// TorchFunction records with their dispatched ops nested below them; a backward torch function
// is the backward phase.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/model/ops/debugmode.hpp"

namespace gparity::model::ops {
namespace {

const std::string kCorpus = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode_pytorch_tests/";

std::string corpus_text(const std::string& name) {
  std::ifstream in(kCorpus + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

OpLog read_corpus(const std::string& name) {
  return read_debugmode_log(kCorpus + name, 0, 1);
}

std::vector<std::string> op_names(const OpLog& log, RecordKind kind) {
  std::vector<std::string> out;
  for (const auto& r : log.records) {
    if (r.kind == kind) out.emplace_back(log.op_name(r));
  }
  return out;
}

const std::string kSum = "<method 'sum' of 'torch._C.TensorBase' objects>";
const std::string kAdd = "<method 'add' of 'torch._C.TensorBase' objects>";

/// Counted on the text: every non-blank line that is not a `[nn.Mod]` / `[node]` line is a
/// call; the torch functions are the call lines whose name has no `::` (redistribute_input
/// aside), in file order.
struct Expected {
  const char* file;
  std::size_t records;
  std::vector<std::string> torch_functions;
};

const std::vector<Expected>& corpus() {
  static const std::vector<Expected> files = {
      {"mm.txt", 10, {"torch.mm", kSum}},
      {"mm_ids_output.txt", 10, {"torch.mm", kSum}},
      {"backward.txt", 24, {kAdd, kSum, "torch._tensor.backward"}},
      {"backward_partial_sum.txt", 24, {kAdd, kSum, "torch._tensor.backward"}},
      {"einsum.txt", 45, {"torch.functional.einsum"}},
      {"einsum_partial_sum.txt", 45, {"torch.functional.einsum"}},
      {"redistribution_trace.txt", 20, {}},
      {"real_tensor.txt", 7, {"torch._C._nn.linear", kSum}},
      {"fake_tensor.txt", 4, {"torch.matmul"}},
      {"tensor_attributes.txt", 4, {"torch.matmul"}},
      {"nn_module.txt", 6, {}},   // 11 lines, 5 of them [nn.Mod]
      {"run_graph.txt", 31, {}},  // 58 lines, 27 of them [node]
  };
  return files;
}

TEST(DebugModePyTorchTests, TheTableCoversEveryCorpusFile) {
  std::set<std::string> on_disk, listed;
  for (const auto& e : std::filesystem::directory_iterator(kCorpus)) {
    if (e.path().extension() == ".txt") on_disk.insert(e.path().filename().string());
  }
  for (const auto& f : corpus()) listed.insert(f.file);
  EXPECT_EQ(on_disk, listed);
}

TEST(DebugModePyTorchTests, EveryExpectedOutputReadsWithoutDamage) {
  for (const auto& f : corpus()) {
    SCOPED_TRACE(f.file);
    const OpLog log = read_corpus(f.file);
    for (const auto& i : log.issues) ADD_FAILURE() << f.file << ':' << i.line << ": " << i.problem;
    EXPECT_FALSE(log.truncated);
    EXPECT_EQ(log.format, "debug_string");
    EXPECT_TRUE(log.hash_spec.empty());  // the tests log no hashes
    EXPECT_EQ(log.records.size(), f.records);
    EXPECT_EQ(op_names(log, RecordKind::TorchFunction), f.torch_functions);
    for (const auto& r : log.records) {
      // A dispatched op is `ns::op`; nothing else is read as one.
      const bool dispatched = log.op_name(r).find("::") != std::string_view::npos;
      EXPECT_EQ(r.kind == RecordKind::Op, dispatched) << log.op_name(r) << " at line " << r.line;
      if (r.kind == RecordKind::TorchFunction) {
        EXPECT_TRUE(r.has_children) << r.line;
      }
    }
    EXPECT_TRUE(looks_like_debugmode(corpus_text(f.file)));  // a single file is told by content
  }
}

TEST(DebugModePyTorchTests, MethodReprsAreTorchFunctionsWithTheirOpsBelow) {
  const OpLog log = read_corpus("mm.txt");
  ASSERT_EQ(log.records.size(), 10u);
  const std::uint32_t depths[] = {0, 1, 2, 3, 4, 4, 2, 0, 1, 2};
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(log.records[i].depth, depths[i]) << i;
  const OpRecord& sum = log.records[7];
  EXPECT_EQ(sum.line, 8);
  EXPECT_EQ(log.op_name(sum), kSum);
  EXPECT_EQ(sum.kind, RecordKind::TorchFunction);
  EXPECT_TRUE(sum.has_children);  // aten::sum (DTensor) and aten::sum (local) below it
  ASSERT_EQ(sum.arg_count, 1u);
  EXPECT_EQ(log.arg(sum, 0).kind, TensorKind::DTensor);
  EXPECT_EQ(log.tensor_text(log.arg(sum, 0)), "f32[8, 32]| S(0)");
  EXPECT_EQ(log.op_name(log.records[8]), "aten::sum");
  EXPECT_EQ(log.records[8].kind, RecordKind::Op);
  EXPECT_FALSE(log.records[9].has_children);

  // With ids and outputs: the torch function's output is what the next one reads.
  const OpLog ids = read_corpus("mm_ids_output.txt");
  ASSERT_EQ(ids.records.size(), 10u);
  ASSERT_EQ(ids.records[0].out_count, 1u);
  EXPECT_EQ(ids.out(ids.records[0], 0).id, 6);
  const OpRecord& isum = ids.records[7];
  ASSERT_EQ(isum.arg_count, 1u);
  EXPECT_EQ(ids.arg(isum, 0).id, 6);
  ASSERT_EQ(isum.out_count, 1u);
  EXPECT_EQ(ids.out(isum, 0).id, 8);
  EXPECT_EQ(ids.str(ids.out(isum, 0).placement), "P(sum)");
  EXPECT_EQ(ids.out(isum, 0).numel, 1);
  EXPECT_EQ(ids.out(ids.records[9], 0).id, 7);
}

TEST(DebugModePyTorchTests, TheBackwardTorchFunctionIsTheBackward) {
  for (const char* file : {"backward.txt", "backward_partial_sum.txt"}) {
    SCOPED_TRACE(file);
    const OpLog log = read_corpus(file);
    ASSERT_EQ(log.records.size(), 24u);
    const OpRecord& bwd = log.records[9];
    EXPECT_EQ(bwd.line, 10);
    EXPECT_EQ(log.op_name(bwd), "torch._tensor.backward");
    EXPECT_EQ(bwd.kind, RecordKind::TorchFunction);
    ASSERT_EQ(bwd.arg_count, 1u);  // the loss; gradient=None and the rest are no tensors
    EXPECT_EQ(log.tensor_text(log.arg(bwd, 0)).substr(0, 6), "f32[]|");
    // No source lines and no `*_backward*` op: the torch function alone tells the backward.
    for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(log.records[i].phase, Phase::Forward) << i;
    for (std::size_t i = 9; i < 24; ++i) EXPECT_EQ(log.records[i].phase, Phase::Backward) << i;
    EXPECT_EQ(log.op_name(log.records[23]), "aten::detach");
  }
}

TEST(DebugModePyTorchTests, RealFakeAndAttributedTensors) {
  const OpLog real = read_corpus("real_tensor.txt");
  ASSERT_EQ(real.records.size(), 7u);
  EXPECT_EQ(real.op_name(real.records[0]), "torch._C._nn.linear");
  for (std::size_t i = 1; i < 5; ++i) EXPECT_EQ(real.records[i].depth, 2u) << i;  // call_depth + 1
  EXPECT_EQ(real.op_name(real.records[3]), "aten::addmm");
  EXPECT_EQ(real.op_name(real.records[5]), kSum);
  EXPECT_TRUE(real.records[5].has_children);

  const OpLog fake = read_corpus("fake_tensor.txt");
  ASSERT_EQ(fake.records.size(), 4u);
  ASSERT_EQ(fake.records[2].arg_count, 2u);
  EXPECT_EQ(fake.arg(fake.records[2], 0).kind, TensorKind::Fake);
  EXPECT_EQ(fake.op_name(fake.records[3]), "aten::_unsafe_view");

  const OpLog attr = read_corpus("tensor_attributes.txt");
  ASSERT_EQ(attr.records.size(), 4u);
  ASSERT_EQ(attr.records[0].arg_count, 2u);
  EXPECT_EQ(attr.tensor_text(attr.arg(attr.records[0], 0)), "f32[8, 8, 8]");  // {a1=y} is no shape
  EXPECT_EQ(attr.arg(attr.records[0], 1).numel, 64);
}

TEST(DebugModePyTorchTests, ModuleAndNodeLinesAreContext) {
  const OpLog mod = read_corpus("nn_module.txt");
  std::vector<std::string> modules;
  for (const auto& r : mod.records) modules.emplace_back(mod.str(r.module));
  EXPECT_EQ(modules, (std::vector<std::string>{"Bar.abc.l1", "Bar.abc.l1", "Bar.abc.l2", "Bar.abc.l2",
                                               "Bar.xyz", "Bar.xyz"}));

  const OpLog graph = read_corpus("run_graph.txt");
  ASSERT_EQ(graph.records.size(), 31u);
  EXPECT_EQ(graph.op_name(graph.records[0]), "aten::t");
  EXPECT_EQ(graph.records[0].line, 5);
  EXPECT_EQ(graph.op_name(graph.records.back()), "_c10d_functional::all_reduce");
  EXPECT_EQ(graph.str(graph.records.back().group), "5");
}

TEST(DebugModeTorchFunction, StackLinesInsideTheBackwardCallStayBackward) {
  // As PyTorch's backward test with show_stack_trace: the forward and `.backward()` are in one
  // function, so the backward ops' forward frames name the training loop's own function.
  const std::string text =
      "  # File: /t.py:5 in step, code: z = x + y\n"
      "  torch.add(t$0: f32[2], t$1: f32[2])  ->  t$2: f32[2]\n"
      "      aten::add.Tensor(t$0: f32[2], t$1: f32[2])  ->  t$2: f32[2]\n"
      "\n"
      "  # File: /t.py:6 in step, code: z.sum().backward()\n"
      "  torch._tensor.backward(t$3: f32[])\n"
      "\n"
      "      # File: /t.py:5 in step, code: z = x + y\n"
      "      aten::ones_like(t$3: f32[])  ->  t$4: f32[]\n"
      "      aten::expand(t$4: f32[], [2])  ->  t$5: f32[2]\n"
      "\n"
      "  # File: /t.py:7 in step, code: opt.step()\n"
      "  torch.add_(t$0: f32[2], t$5: f32[2])  ->  t$0: f32[2]\n"
      "      aten::add_.Tensor(t$0: f32[2], t$5: f32[2])  ->  t$0: f32[2]\n";
  const OpLog log = parse_debugmode_text(text, "bwd.txt", 0, 1);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  ASSERT_EQ(log.records.size(), 7u);
  const Phase want[] = {Phase::Forward,  Phase::Forward,   Phase::Backward, Phase::Backward,
                        Phase::Backward, Phase::Optimizer, Phase::Optimizer};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(log.records[i].phase, want[i]) << i;
  EXPECT_EQ(log.source_text(log.records[3]), "/t.py:5");  // the frame is kept, the phase not taken from it
}

TEST(DebugModeTorchFunction, WithoutSourcesTheOptimizerStartsWhenTheBackwardReturns) {
  const std::string text =
      "  <method 'sum' of 'torch._C.TensorBase' objects>(t$0: f32[2])  ->  t$1: f32[]\n"
      "      aten::sum(t$0: f32[2])  ->  t$1: f32[]\n"
      "  torch.autograd.grad(t$1: f32[], [t$0: f32[2]])\n"
      "      aten::ones_like(t$1: f32[])  ->  t$2: f32[]\n"
      "      aten::expand(t$2: f32[], [2])  ->  t$3: f32[2]\n"
      "  <method 'add_' of 'torch._C.TensorBase' objects>(t$0: f32[2], t$3: f32[2])  ->  t$0: f32[2]\n"
      "      aten::add_.Tensor(t$0: f32[2], t$3: f32[2])  ->  t$0: f32[2]\n";
  const OpLog log = parse_debugmode_text(text, "grad.txt", 0, 1);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  ASSERT_EQ(log.records.size(), 7u);
  const Phase want[] = {Phase::Forward,  Phase::Forward,   Phase::Backward, Phase::Backward,
                        Phase::Backward, Phase::Optimizer, Phase::Optimizer};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(log.records[i].phase, want[i]) << i;
  ASSERT_EQ(log.records[2].arg_count, 2u);  // the output, and the input inside a list
  EXPECT_EQ(log.arg(log.records[2], 1).id, 0);
}

TEST(DebugModeTorchFunction, ADamagedTorchFunctionLineCostsOnlyItself) {
  // Line 2's repr never closes; the ops below it are read, and are not taken for children of
  // line 1's call (which has none).
  const std::string text =
      "  torch.ones(2)  ->  t$0: f32[2]\n"
      "  <method 'sum' of 'torch._C.TensorBase' objects(t$0: f32[2])\n"
      "      aten::sum(t$0: f32[2])  ->  t$1: f32[]\n"
      "  <built-in method neg of type object at 0x7f00>(t$1: f32[])\n"
      "      aten::neg(t$1: f32[])  ->  t$2: f32[]\n";
  const OpLog log = parse_debugmode_text(text, "cut.txt", 0, 1);
  ASSERT_EQ(log.issues.size(), 1u);
  EXPECT_EQ(log.issues[0].line, 2);
  EXPECT_NE(log.issues[0].problem.find("not a DebugMode call line"), std::string::npos);
  EXPECT_FALSE(log.truncated);
  ASSERT_EQ(log.records.size(), 4u);
  EXPECT_EQ(log.op_name(log.records[0]), "torch.ones");
  EXPECT_FALSE(log.records[0].has_children);
  EXPECT_EQ(log.op_name(log.records[1]), "aten::sum");
  EXPECT_EQ(log.records[1].line, 3);
  EXPECT_EQ(log.op_name(log.records[2]), "<built-in method neg of type object at 0x7f00>");
  EXPECT_EQ(log.records[2].kind, RecordKind::TorchFunction);
  EXPECT_TRUE(log.records[2].has_children);
}

TEST(DebugModeTorchFunction, DetectionNeedsALineOnlyDebugModeWrites) {
  EXPECT_TRUE(looks_like_debugmode("  torch.mm(t: f32[2, 2], t: f32[2, 2])\n      aten::mm(t: f32[2, 2])\n"));
  EXPECT_TRUE(looks_like_debugmode("  [node] x: placeholder\n    aten::t(t: f32[2, 2])\n"));
  EXPECT_FALSE(looks_like_debugmode("torch.manual_seed(0)\nimport os\n"));
  EXPECT_FALSE(looks_like_debugmode("torch.manual_seed(0)\n"));
  EXPECT_FALSE(looks_like_debugmode("<html>(\n"));
}

}  // namespace
}  // namespace gparity::model::ops
