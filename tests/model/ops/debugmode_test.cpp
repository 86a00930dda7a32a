// The DebugMode reader (core/model/ops/debugmode.hpp) on the real PyTorch 2.11 logs in
// tests/data/ops/debugmode (2 ranks, 2 steps; facts in its README.md) and on snippets written
// the way each release's torch/utils/_debug_mode renders its calls.

#include "core/model/ops/debugmode.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "core/model/ops/op_run.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::model::ops {
namespace {

const std::string kData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const OpRecord* find_op(const OpLog& log, std::string_view op, std::size_t occurrence = 0) {
  for (const auto& r : log.records) {
    if (log.op_name(r) == op && occurrence-- == 0) return &r;
  }
  return nullptr;
}

std::uint64_t int_hash(const OpLog& log, const TensorRef& t, std::uint32_t i = 0) {
  EXPECT_GT(t.hash_count, i);
  const HashValue& h = log.hash(t, i);
  EXPECT_EQ(h.kind, HashValue::Kind::Int);
  return h.bits;
}

TEST(DebugModeSample, OpLinesPerFileMatchTheSampleFacts) {
  // README: 271 op lines a step in eager, 316 compiled; compile_gelu decomposes gelu.
  const std::pair<const char*, std::size_t> modes[] = {
      {"eager", 271}, {"eager_repeat", 271}, {"compile", 316}, {"compile_gelu", 332}};
  for (const auto& [mode, count] : modes) {
    for (const int rank : {0, 1}) {
      for (const int step : {1, 2}) {
        const std::string path = kData + "/" + mode + "/rank" + std::to_string(rank) + "_step" +
                                 std::to_string(step) + ".debug.txt";
        const OpLog log = read_debugmode_log(path, rank, step);
        SCOPED_TRACE(path);
        EXPECT_EQ(log.records.size(), count);
        EXPECT_TRUE(log.issues.empty());
        EXPECT_FALSE(log.truncated);
        EXPECT_EQ(log.hash_spec.functions, std::vector<std::string>{"hash_tensor"});
        EXPECT_EQ(log.steps, std::vector<std::int64_t>{step});
        EXPECT_EQ(log.format, "debug_string (input_hash first)");  // 2.11 hashes inputs in a pre-hook
        for (std::size_t i = 0; i < log.records.size(); ++i) EXPECT_EQ(log.records[i].index, i);
      }
    }
  }
}

TEST(DebugModeSample, HashesAreZippedWithTheirTensors) {
  const OpLog log = read_debugmode_log(kData + "/eager/rank0_step1.debug.txt", 0, 1);
  const OpRecord& emb = log.records.front();
  EXPECT_EQ(log.op_name(emb), "aten::embedding");
  EXPECT_EQ(emb.line, 2);
  ASSERT_EQ(emb.arg_count, 2u);
  ASSERT_EQ(emb.out_count, 1u);
  EXPECT_TRUE(emb.has_input_hashes);
  EXPECT_EQ(log.arg(emb, 0).id, 0);
  EXPECT_EQ(log.tensor_text(log.arg(emb, 0)), "f32[256, 64]");
  EXPECT_EQ(log.arg(emb, 0).numel, 256 * 64);
  EXPECT_EQ(int_hash(log, log.arg(emb, 0)), 18419290117693767680ull);  // above 2^63: read as uint64
  EXPECT_EQ(int_hash(log, log.arg(emb, 1)), 156u);
  EXPECT_EQ(log.out(emb, 0).id, 2);
  EXPECT_EQ(int_hash(log, log.out(emb, 0)), 18390420925930536960ull);

  // Three outputs, a tuple of three one-function hashes; non-tensor arguments hash to None.
  const OpRecord* ln = find_op(log, "aten::native_layer_norm");
  ASSERT_NE(ln, nullptr);
  ASSERT_EQ(ln->out_count, 3u);
  EXPECT_EQ(int_hash(log, log.out(*ln, 1)), 35897555166429184u);
  EXPECT_EQ(int_hash(log, log.out(*ln, 2)), 8842140977201152u);
  ASSERT_EQ(ln->arg_count, 3u);                   // input, weight, bias ([64] and 1e-05 are not tensors)
  EXPECT_EQ(int_hash(log, log.arg(*ln, 1)), 0u);  // the LayerNorm weight: all ones, hash_tensor 0

  // unbind: a list of three tensors.
  const OpRecord* unbind = find_op(log, "aten::unbind.int");
  ASSERT_NE(unbind, nullptr);
  ASSERT_EQ(unbind->out_count, 3u);
  EXPECT_EQ(log.out(*unbind, 2).id, 18);
  EXPECT_EQ(int_hash(log, log.out(*unbind, 2)), 18382866922954817536ull);

  // c10d::allreduce_: tensors inside a list, a ScriptObject output hashed as None.
  const OpRecord* ar = find_op(log, "c10d::allreduce_");
  ASSERT_NE(ar, nullptr);
  ASSERT_EQ(ar->arg_count, 1u);
  ASSERT_EQ(ar->out_count, 1u);
  EXPECT_EQ(log.arg(*ar, 0).id, log.out(*ar, 0).id);
  EXPECT_EQ(int_hash(log, log.arg(*ar, 0)), 9253559916721864704ull);
  EXPECT_EQ(int_hash(log, log.out(*ar, 0)), 9365246840066277376ull);
  // A c10d collective returns a Work: its output was hashed before it completed.
  EXPECT_TRUE(ar->output_hash_unreliable);
}

TEST(DebugModeSample, StackLinesAndPhasesAttachToTheirRecords) {
  const OpLog log = read_debugmode_log(kData + "/eager/rank0_step1.debug.txt", 0, 1);
  const OpRecord* gelu = find_op(log, "aten::gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(log.source_text(*gelu), "/workspace/train_debugmode.py:37");
  const SourceLoc& src = log.sources[gelu->source];
  EXPECT_EQ(log.str(src.function), "forward");
  EXPECT_EQ(log.str(src.code), "return x + s.w2(F.gelu(s.w1(s.n2(x))))");
  EXPECT_EQ(gelu->phase, Phase::Forward);
  EXPECT_EQ(gelu->depth, 1u);  // aten ops at DebugMode call depth 1: four spaces

  // loss.backward() starts the backward; the backward's ops carry their forward's lines.
  const OpRecord* ones = find_op(log, "aten::ones_like");
  ASSERT_NE(ones, nullptr);
  EXPECT_EQ(ones->phase, Phase::Backward);
  EXPECT_EQ(log.str(log.sources[ones->source].code), "loss.backward()");
  EXPECT_EQ(log.records[ones->index - 1].phase, Phase::Forward);
  const OpRecord* gelu_bw = find_op(log, "aten::gelu_backward");
  ASSERT_NE(gelu_bw, nullptr);
  EXPECT_EQ(gelu_bw->phase, Phase::Backward);
  EXPECT_EQ(log.source_text(*gelu_bw), "/workspace/train_debugmode.py:37");
  // The gradient all-reduce in the training loop ends the backward.
  const OpRecord* ar = find_op(log, "c10d::allreduce_");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->phase, Phase::Optimizer);
  EXPECT_EQ(log.records[ar->index - 1].phase, Phase::Backward);
  EXPECT_EQ(log.records.back().phase, Phase::Optimizer);

  // The compiled run: source lines are the FX graph's (<eval_with_key>), its backward has none.
  const OpLog c = read_debugmode_log(kData + "/compile/rank0_step1.debug.txt", 0, 1);
  EXPECT_EQ(c.source_text(c.records.front()), "<eval_with_key>.3:38");
  EXPECT_EQ(find_op(c, "aten::select.int", 2)->phase, Phase::Forward);
  EXPECT_EQ(find_op(c, "aten::gelu_backward")->phase, Phase::Backward);
  EXPECT_EQ(find_op(c, "c10d::allreduce_")->phase, Phase::Optimizer);
}

TEST(DebugModeNnModSample, ModulePathsAndTwoHashFunctions) {
  // tests/data/ops/debugmode_nnmod: 2.11 with record_nn_module=True, hash_fn=["norm", "hash_tensor"].
  const OpLog log = read_debugmode_log(kData + "_nnmod/eager/rank0_step1.debug.txt", 0, 1);
  EXPECT_TRUE(log.issues.empty());
  EXPECT_EQ(log.records.size(), 271u);
  EXPECT_EQ(log.hash_spec.functions, (std::vector<std::string>{"norm", "hash_tensor"}));
  EXPECT_EQ(log.str(log.records.front().module), "Net.tok");
  const OpRecord* gelu = find_op(log, "aten::gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(log.str(gelu->module), "Net.layers.0");
  EXPECT_EQ(log.source_text(*gelu), "/workspace/gen_debugmode.py:41");
  EXPECT_FALSE(gelu->has_children);  // the next op is inside [nn.Mod] Net.layers.0.w2, not inside gelu
  EXPECT_EQ(log.str(find_op(log, "aten::addmm", 2)->module), "Net.layers.0.w1");
  EXPECT_EQ(log.str(find_op(log, "aten::gelu", 1)->module), "Net.layers.1");
  // The tensor's pair of hashes: norm (a float) then hash_tensor.
  const TensorRef& out = log.out(log.records.front(), 0);
  ASSERT_EQ(out.hash_count, 2u);
  EXPECT_EQ(log.hash(out, 0).kind, HashValue::Kind::Float);
  EXPECT_EQ(int_hash(log, out, 1), 18390420925930536960ull);  // the same embedding as ../debugmode's
  // The backward has no module lines (ModTracker records forwards).
  EXPECT_EQ(find_op(log, "aten::gelu_backward")->module, 0u);
}

TEST(DebugModeNnModSample, TritonLaunchesOfInductor) {
  const OpLog log = read_debugmode_log(kData + "_nnmod/compile_inductor/rank0_step1.debug.txt", 0, 1);
  EXPECT_TRUE(log.issues.empty());
  std::size_t kernels = 0, noise = 0;
  for (const auto& r : log.records) {
    kernels += r.kind == RecordKind::Triton ? 1 : 0;
    noise += r.hash_noise ? 1 : 0;
  }
  EXPECT_EQ(kernels, 33u);
  EXPECT_EQ(noise, 1740u);  // every one of its _to_copy, linalg_vector_norm, hash_tensor, _local_scalar_dense
  const OpRecord* k = nullptr;
  for (const auto& r : log.records) {
    if (r.kind == RecordKind::Triton) {
      k = &r;
      break;
    }
  }
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(log.op_name(*k), "triton_per_fused_embedding_native_layer_norm_0");
  EXPECT_EQ(k->arg_count, 8u);
  ASSERT_EQ(k->out_count, 4u);  // in_out_ptr0, out_ptr0..2
  EXPECT_EQ(log.str(log.out(*k, 1).name), "out_ptr0");
  EXPECT_EQ(int_hash(log, log.out(*k, 1), 1), 18390420925930536960ull);  // the embedding's value
  EXPECT_TRUE(log.records[k->index - 1].hash_noise);
}

TEST(DebugModeSample, OneFileOfTwoStepsIsSplitAtTheNextForward) {
  // One DebugMode session around two steps writes both into one text; the reader infers steps.
  const std::string text =
      slurp(kData + "/eager/rank1_step1.debug.txt") + "\n\n" + slurp(kData + "/eager/rank1_step2.debug.txt");
  const OpLog log = parse_debugmode_text(text, "rank1.debug.txt", 1, 0);
  EXPECT_TRUE(log.issues.empty());
  EXPECT_EQ(log.steps, (std::vector<std::int64_t>{1, 2}));
  ASSERT_EQ(log.records.size(), 542u);
  EXPECT_EQ(log.records[270].step, 1);
  EXPECT_EQ(log.records[271].step, 2);
  EXPECT_EQ(log.records[271].index, 0u);
  EXPECT_EQ(log.op_name(log.records[271]), "aten::embedding");
  EXPECT_EQ(log.records[271].phase, Phase::Forward);
}

TEST(DebugModeText, NestingDTensorPlacementsAndFunctionalCollectives) {
  // The nesting of the docstring's DTensor example (torch function -> aten -> redistribute ->
  // functional collectives), written with 2.11's indentation: two spaces per call depth.
  const std::string text =
      "  torch.mm(dt$0: f32[8, 8]| S(0), dt$1: f32[8, 32]| S(0))  ->  dt$6: f32[8, 32]| S(0)\n"
      "    aten::mm(dt$0: f32[8, 8]| S(0), dt$1: f32[8, 32]| S(0))\n"
      "      redistribute_input(1, S(0) -> R)\n"
      "        redistribute_input(t$2: f32[1, 32], trace: S(0)->R)\n"
      "          _c10d_functional::all_gather_into_tensor(t$2: f32[1, 32], 8, 0)  ->  t$3: f32[8, 32]  "
      "# {'hash': 11}\n"
      "          _c10d_functional::wait_tensor(t$3: f32[8, 32])  ->  t$3: f32[8, 32]  # {'hash': 12}\n"
      "      aten::mm(t$4: f32[1, 8], t$3: f32[8, 32])  ->  t$5: f32[1, 32]  # {'hash': 13}\n"
      "      -> output: (S(0),)\n";
  const OpLog log = parse_debugmode_text(text, "dt.txt", 0, 1);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  ASSERT_EQ(log.records.size(), 7u);
  const std::uint32_t depths[] = {0, 1, 2, 3, 4, 4, 2};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(log.records[i].depth, depths[i]) << i;
  EXPECT_EQ(log.records[0].kind, RecordKind::TorchFunction);
  EXPECT_TRUE(log.records[0].has_children);
  EXPECT_TRUE(log.records[1].has_children);
  EXPECT_TRUE(log.records[3].has_children);
  EXPECT_FALSE(log.records[4].has_children);
  EXPECT_FALSE(log.records[6].has_children);
  EXPECT_EQ(log.records[2].kind, RecordKind::Redistribute);
  EXPECT_EQ(log.op_name(log.records[2]), "redistribute_input");
  const TensorRef& dt = log.arg(log.records[0], 1);
  EXPECT_EQ(dt.kind, TensorKind::DTensor);
  EXPECT_EQ(log.str(dt.placement), "S(0)");
  EXPECT_EQ(log.tensor_text(dt), "f32[8, 32]| S(0)");
  // The all-gather's output hash is taken before the wait (pytorch/pytorch#169150).
  EXPECT_TRUE(log.records[4].output_hash_unreliable);
  EXPECT_FALSE(log.records[5].output_hash_unreliable);
  EXPECT_EQ(int_hash(log, log.out(log.records[5], 0)), 12u);
  // The all-gather names its group (group_name "0", its last argument); the wait names none.
  EXPECT_EQ(log.str(log.records[4].group), "0");
  EXPECT_EQ(log.records[5].group, 0u);
  EXPECT_TRUE(log.group_ranks.empty());  // a functional collective does not list its members
}

TEST(DebugModeText, CollectivesNameTheirGroupWhereTheLineDoes) {
  // Functional collectives end with group_name, printed by str() (unquoted), or pass it as a
  // keyword; the legacy c10d_functional ops list their ranks; c10d:: ops take a ProcessGroup
  // DebugMode prints as a ScriptObject: no group (all ranks).
  const std::string text =
      "_c10d_functional::all_reduce(t$0: f32[4], sum, 3)  ->  t$1: f32[4]  # {'hash': 1}\n"
      "_c10d_functional::reduce_scatter_tensor(t$1: f32[4], sum, 2, 5)  ->  t$2: f32[2]  # {'hash': 2}\n"
      "_c10d_functional::broadcast(t$2: f32[2], 0, group_name=tp)  ->  t$3: f32[2]  # {'hash': 3}\n"
      "c10d_functional::all_reduce(t$3: f32[2], sum, ptd, [2, 3], 2)  ->  t$4: f32[2]  # {'hash': 4}\n"
      "c10d::allreduce_([t$4: f32[2]], ScriptObject <__torch__.torch.classes.c10d.ProcessGroup>, "
      "ScriptObject <__torch__.torch.classes.c10d.ReduceOp>, None, False)  ->  ([t$4: f32[2]], "
      "'ScriptObject <__torch__.torch.classes.c10d.Work>')  # {'hash': ([5], None)}\n"
      "aten::add.Tensor(t$4: f32[2], 2)  ->  t$5: f32[2]  # {'hash': 6}\n"
      "_c10d_functional::all_reduce(t$5: f32[2])  ->  t$6: f32[2]  # {'hash': 7}\n";
  const OpLog log = parse_debugmode_text(text, "g.txt", 2, 1);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  ASSERT_EQ(log.records.size(), 7u);
  EXPECT_EQ(log.str(log.records[0].group), "3");
  EXPECT_EQ(log.str(log.records[1].group), "5");
  EXPECT_EQ(log.str(log.records[2].group), "tp");
  EXPECT_EQ(log.str(log.records[3].group), "ranks:2,3");
  EXPECT_EQ(log.group_ranks.at(log.records[3].group), (std::vector<int>{2, 3}));
  EXPECT_EQ(log.records[4].group, 0u);
  EXPECT_EQ(log.records[5].group, 0u);  // not a collective: its "2" is no group
  EXPECT_EQ(log.records[6].group, 0u);  // no argument but the tensor: no group
}

TEST(DebugModeText, ModulesFromNnModLinesFollowTheDepth) {
  const std::string text =
      "  [nn.Mod] Net\n"
      "    [nn.Mod] Net.layers.0\n"
      "      [nn.Mod] Net.layers.0.w1\n"
      "        aten::addmm(t$1: f32[4], t$2: f32[2, 3], t$3: f32[3, 4])  ->  t$4: f32[2, 4]\n"
      "      aten::gelu(t$4: f32[2, 4])  ->  t$5: f32[2, 4]\n"
      "    [nn.Mod (compile)] Net.layers.1\n"
      "      aten::gelu(t$5: f32[2, 4])  ->  t$6: f32[2, 4]\n"
      "  aten::sum(t$6: f32[2, 4])  ->  t$7: f32[]\n";
  const OpLog log = parse_debugmode_text(text, "mod.txt", 0, 1);
  ASSERT_TRUE(log.issues.empty());
  ASSERT_EQ(log.records.size(), 4u);
  EXPECT_EQ(log.str(log.records[0].module), "Net.layers.0.w1");
  EXPECT_EQ(log.str(log.records[1].module), "Net.layers.0");
  EXPECT_EQ(log.str(log.records[2].module), "Net.layers.1");
  EXPECT_EQ(log.records[3].module, 0u);  // back at depth 0: outside every module
  // A module line deepens the indentation but is not a call: no record has children.
  for (const auto& r : log.records) EXPECT_FALSE(r.has_children);
  EXPECT_EQ(log.out(log.records[3], 0).numel, 1);  // a 0-dim tensor
}

TEST(DebugModeText, SeveralHashFunctionsAndTheTwoTenDictOrder) {
  // log_tensor_hashes(hash_fn=["norm", "hash_tensor"]): a tuple per tensor. 2.10 wrote the
  // output hash before the input hash (one post-hook).
  const std::string text =
      "    aten::add.Tensor(t$0: f32[2], t$1: f32[2])  ->  t$2: f32[2]  # {'hash': (3.5, 77), 'input_hash': "
      "(((1.5, 5), (2.0, 6)), {})}\n"
      "    aten::mul.Tensor(t$2: f32[2], 2.0)  ->  t$3: f32[2]  # {'hash': (7.0, 0), 'input_hash': "
      "(((3.5, 77), None), {})}\n"
      "    aten::sum.dim_IntList(t$3: f32[2], [0], keepdim=True)  ->  t$4: f32[1]  # {'hash': (nan, 9)}\n";
  const OpLog log = parse_debugmode_text(text, "multi.txt", 0, 1);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  EXPECT_EQ(log.hash_spec.functions, (std::vector<std::string>{"norm", "hash_tensor"}));
  EXPECT_EQ(log.format, "debug_string (hash first)");
  const TensorRef& out = log.out(log.records[0], 0);
  ASSERT_EQ(out.hash_count, 2u);
  EXPECT_EQ(log.hash(out, 0).kind, HashValue::Kind::Float);
  EXPECT_EQ(log.hash_text(log.hash(out, 0)), "3.5");
  EXPECT_EQ(int_hash(log, out, 1), 77u);
  EXPECT_EQ(int_hash(log, log.arg(log.records[0], 1), 1), 6u);
  EXPECT_EQ(log.records[1].arg_count, 1u);  // 2.0 is not a tensor
  EXPECT_EQ(log.hash_text(log.hash(log.out(log.records[2], 0), 0)), "nan");
  EXPECT_FALSE(log.records[2].has_input_hashes);

  // A single hash function (a string, not a list) gives plain numbers.
  const OpLog one = parse_debugmode_text(
      "    aten::split(t$0: f32[4], 2)  ->  ('t$1: f32[2]', 't$2: f32[2]')  # {'hash': (5, 6)}\n", "one.txt",
      0, 1);
  ASSERT_TRUE(one.issues.empty());
  EXPECT_EQ(one.hash_spec.functions, std::vector<std::string>{"hash_tensor"});
  ASSERT_EQ(one.records[0].out_count, 2u);
  EXPECT_EQ(int_hash(one, one.out(one.records[0], 1)), 6u);
}

TEST(DebugModeText, TritonKernelsTakePreAndPostHashes) {
  // nightly / 2.11 render: a [triton] line, then pre- and post-kernel hashes, then a blank line.
  const std::string text =
      "    [triton] triton_poi_fused_gelu_0(in_ptr0=t: f32[2, 4], out_ptr0=t: f32[2, 4], xnumel=8, "
      "XBLOCK=8)\n"
      "      # pre-kernel hashes: {in_ptr0: 101, out_ptr0: 0}\n"
      "      # post-kernel hashes: {in_ptr0: 101, out_ptr0: 202}\n"
      "\n"
      "    aten::sum(t$9: f32[2, 4])  ->  t$10: f32[]  # {'hash': 303}\n";
  const OpLog log = parse_debugmode_text(text, "triton.txt", 0, 1);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  ASSERT_EQ(log.records.size(), 2u);
  const OpRecord& k = log.records[0];
  EXPECT_EQ(k.kind, RecordKind::Triton);
  EXPECT_EQ(log.op_name(k), "triton_poi_fused_gelu_0");
  ASSERT_EQ(k.arg_count, 2u);
  EXPECT_EQ(log.str(log.arg(k, 0).name), "in_ptr0");
  EXPECT_EQ(int_hash(log, log.arg(k, 0)), 101u);
  ASSERT_EQ(k.out_count, 1u);  // the argument it writes
  EXPECT_EQ(log.str(log.out(k, 0).name), "out_ptr0");
  EXPECT_EQ(int_hash(log, log.out(k, 0)), 202u);
  EXPECT_EQ(log.records[1].index, 1u);
}

TEST(DebugModeText, TensorHashDumpOfNightly) {
  // DebugMode.dump_tensor_hashes(file): one block per call; JSON values; lists for several
  // hash functions.
  const std::string text =
      "Total captured tensor hash ops: 2\n"
      "================================================================================\n"
      "\n"
      "[Net.layers.0/op_0_aten::addmm]\n"
      "  Call type: torch op\n"
      "  Call index: 3\n"
      "  Call depth: 2\n"
      "  Input hashes: [0][0]=[1.5, 11], [0][1]=[2.5, 12]\n"
      "  Output hashes: <root>=[4.0, 13]\n"
      "\n"
      "[<none>/op_0_aten::sum]\n"
      "  Call type: torch op\n"
      "  Call index: 5\n"
      "  Call depth: 1\n"
      "  Output hashes: <root>=[\"NaN\", 14]\n";
  const OpLog log = parse_debugmode_text(text, "hashes.txt", 0, 1);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  EXPECT_EQ(log.format, "dump_tensor_hashes");
  EXPECT_EQ(log.hash_spec.functions, (std::vector<std::string>{"norm", "hash_tensor"}));
  ASSERT_EQ(log.records.size(), 2u);
  EXPECT_EQ(log.op_name(log.records[0]), "aten::addmm");
  EXPECT_EQ(log.str(log.records[0].module), "Net.layers.0");
  EXPECT_EQ(log.records[0].depth, 2u);
  ASSERT_EQ(log.records[0].arg_count, 2u);
  EXPECT_EQ(int_hash(log, log.arg(log.records[0], 1), 1), 12u);
  ASSERT_EQ(log.records[0].out_count, 1u);
  EXPECT_EQ(int_hash(log, log.out(log.records[0], 0), 1), 13u);
  EXPECT_EQ(log.records[1].module, 0u);
  EXPECT_EQ(log.hash_text(log.hash(log.out(log.records[1], 0), 0)), "nan");

  // Fewer blocks than the header declares: the file was cut short.
  const OpLog cut = parse_debugmode_text(text.substr(0, text.find("[<none>")), "cut.txt", 0, 1);
  EXPECT_TRUE(cut.truncated);
  ASSERT_EQ(cut.issues.size(), 1u);
  EXPECT_NE(cut.issues[0].problem.find("declares 2 ops, 1 were read"), std::string::npos);
}

TEST(DebugModeDamage, AnUnparsableLineCostsOneRecordAndNamesItsLine) {
  std::string text = slurp(kData + "/eager/rank0_step1.debug.txt");
  // Break the gelu's line (line 32) in the middle of its annotation dict.
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_NE(lines[31].find("aten::gelu("), std::string::npos);
  lines[31] = lines[31].substr(0, lines[31].find("'hash'")) + "'hash': (((}";
  std::string damaged;
  for (const auto& l : lines) damaged += l + "\n";
  const OpLog log = parse_debugmode_text(damaged, "eager/rank0_step1.debug.txt", 0, 1);
  EXPECT_EQ(log.records.size(), 270u);
  ASSERT_EQ(log.issues.size(), 1u);
  EXPECT_EQ(log.issues[0].line, 32);
  EXPECT_FALSE(log.truncated);
  ASSERT_NE(find_op(log, "aten::gelu"), nullptr);  // layers.1's gelu is still there
  EXPECT_NE(find_op(log, "aten::gelu")->line, 32);
  EXPECT_EQ(find_op(log, "aten::gelu", 1), nullptr);
  EXPECT_NE(find_op(log, "aten::gelu_backward"), nullptr);
}

TEST(DebugModeDamage, ACutLastLineMarksTheLogTruncated) {
  const std::string text = slurp(kData + "/eager/rank0_step1.debug.txt");
  const OpLog log = parse_debugmode_text(text.substr(0, text.size() - 40), "cut.txt", 0, 1);
  EXPECT_TRUE(log.truncated);
  EXPECT_EQ(log.records.size(), 270u);
  ASSERT_EQ(log.issues.size(), 1u);
  EXPECT_EQ(log.issues[0].line, 428);  // the sample has no final newline
}

TEST(DebugModeDamage, GarbageNeverCrashesAndIsReportedPerLine) {
  const std::string text =
      "this is not a log\n"
      "    aten::mm(t$0: f32[2, 2], t$1: f32[2, 2])  ->  t$2: f32[2, 2]  # {'hash': 5}\n"
      "    aten::mm(t$0: f32[2, 2]  ->  t$2: f32[2, 2]\n"
      "    # File: nowhere\n"
      "    [annotate]\n"
      "    aten::mm(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((()\n"
      "    aten::bad name(x)\n"
      "    aten::add(t$0: f32[2], t$1: f32[2])  ->  t$2: f32[2]  # {'hash': (5, 6, 7)}\n";
  const OpLog log = parse_debugmode_text(text, "junk.txt", 0, 1);
  ASSERT_EQ(log.records.size(), 3u);  // the two mm/add lines that parse, and the deep one
  std::vector<std::int64_t> lines;
  for (const auto& i : log.issues) lines.push_back(i.line);
  EXPECT_EQ(lines, (std::vector<std::int64_t>{1, 3, 4, 5, 6, 7, 8}));
  EXPECT_FALSE(log.out(log.records[2], 0).hashed());  // three hashes for one tensor: not used
}

TEST(DebugModeText, TheSecondHashFunctionKindIsAnIssueNotAMixup) {
  const std::string text =
      "    aten::a(t$0: f32[2])  ->  t$1: f32[2]  # {'hash': 5}\n"
      "    aten::b(t$1: f32[2])  ->  t$2: f32[2]  # {'hash': 2.5}\n";
  const OpLog log = parse_debugmode_text(text, "mixed.txt", 0, 1);
  EXPECT_EQ(log.hash_spec.functions, std::vector<std::string>{"hash_tensor"});
  ASSERT_EQ(log.issues.size(), 1u);
  EXPECT_EQ(log.issues[0].line, 2);
  EXPECT_FALSE(log.out(log.records[1], 0).hashed());
}

TEST(DebugModeDetect, LooksLikeDebugModeByContent) {
  EXPECT_TRUE(looks_like_debugmode("\n    # File: /x.py:3 in f, code: y\n"));
  EXPECT_TRUE(looks_like_debugmode("    aten::mm(t$0: f32[2])  ->  t$1: f32[2]\n"));
  EXPECT_TRUE(looks_like_debugmode("Total captured tensor hash ops: 3\n"));
  EXPECT_TRUE(looks_like_debugmode("  [nn.Mod] Net\n"));
  EXPECT_FALSE(looks_like_debugmode("{\"kind\": \"step\"}\n"));
  EXPECT_FALSE(looks_like_debugmode("step 1 loss 3.2\n"));
  EXPECT_FALSE(looks_like_debugmode(""));
}

TEST(OpRun, FolderFilesByRankAndStep) {
  const OpRun run = open_op_run(kData + "/eager");
  ASSERT_EQ(run.files.size(), 4u);  // the meta JSON files are not logs
  EXPECT_EQ(run.ranks(), (std::vector<int>{0, 1}));
  EXPECT_EQ(run.files[1].rank, 0);
  EXPECT_EQ(run.files[1].step, 2);
  EXPECT_TRUE(is_op_log_path(kData + "/eager"));
  EXPECT_TRUE(is_op_log_path(kData + "/eager/rank1_step2.debug.txt"));
  EXPECT_FALSE(is_op_log_path(kData + "/eager/rank0_meta.json"));
  EXPECT_FALSE(is_op_log_path(kData));  // the folder of modes holds no log itself
}

TEST(OpRun, NamesAndMixUps) {
  int rank = -1;
  std::int64_t step = -1;
  EXPECT_TRUE(parse_op_log_name("rank3_step12.debug.txt", rank, step));
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(step, 12);
  EXPECT_TRUE(parse_op_log_name("rank_1.debug.txt", rank, step));
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(step, 0);
  EXPECT_FALSE(parse_op_log_name("log.debug.txt", rank, step));
  EXPECT_FALSE(parse_op_log_name("crank2.debug.txt", rank, step));

  const std::string line = "    aten::a(t$0: f32[2])  ->  t$1: f32[2]  # {'hash': 5}\n";
  {
    testing::TempDir d;
    d.write("rank0_step1.debug.txt", line);
    d.write("rank0_step01.debug.txt", line);
    EXPECT_THROW(open_op_run(d.path().string()), InputError);  // two files for rank 0 step 1
  }
  {
    testing::TempDir d;
    d.write("rank0.debug.txt", line);
    d.write("rank0_step2.debug.txt", line);
    try {
      open_op_run(d.path().string());
      FAIL() << "a whole-run file beside per-step files of one rank";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("rank0.debug.txt"), std::string::npos);
    }
  }
  {
    testing::TempDir d;
    d.write("a.debug.txt", line);
    d.write("rank1_step1.debug.txt", line);
    EXPECT_THROW(open_op_run(d.path().string()), InputError);  // no rank in a.debug.txt
  }
  {
    testing::TempDir d;
    EXPECT_THROW(open_op_run(d.path().string()), InputError);  // no logs at all
    const auto single = d.write("run.log", line);
    const OpRun run = open_op_run(single);
    ASSERT_EQ(run.files.size(), 1u);
    EXPECT_EQ(run.files[0].rank, 0);
    EXPECT_EQ(run.files[0].step, 0);
    EXPECT_TRUE(is_op_log_path(single));  // by content
  }
}

}  // namespace
}  // namespace gparity::model::ops
