// Op-level alignment and verdicts (diff/ops) on the PyTorch 2.11 DebugMode samples in
// tests/data/ops (facts in their README.md files) and on small logs written here the way
// DebugMode writes them.

#include "diff/ops/op_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/model/ops/debugmode.hpp"
#include "core/model/ops/op_records.hpp"
#include "core/model/ops/op_run.hpp"

namespace gparity::diff::ops {
namespace {

using model::ops::OpLog;
using model::ops::Phase;

const std::string kData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/";

std::vector<RankLogs> load(const std::string& dir) {
  return read_rank_logs(model::ops::open_op_run(dir));
}

struct Compared {
  int code = -1;
  CollectingConsumer report;
  [[nodiscard]] std::vector<const Finding*> of_kind(std::string_view kind) const {
    std::vector<const Finding*> out;
    for (const auto& f : report.findings) {
      if (f.kind == kind) out.push_back(&f);
    }
    return out;
  }
};

Compared compare(const std::vector<RankLogs>& e, const std::vector<RankLogs>& c,
                 bool allow_incomplete = false) {
  Compared r;
  OpCompareOptions o;
  o.allow_incomplete = allow_incomplete;
  r.code = compare_op_logs(e, c, o, r.report);
  return r;
}

std::vector<RankVerdict> judge(const std::vector<RankLogs>& e, const std::vector<RankLogs>& c) {
  const HashChoice choice = choose_hashes(e.front().logs.front(), c.front().logs.front());
  EXPECT_TRUE(choice.usable());
  return judge_op_logs(e, c, choice);
}

std::string_view op_of(const OpSlice& s, std::uint32_t i) {
  return s.log->op_name(s.at(i));
}

// ---- the shared sample: eager, eager_repeat, compile, compile_gelu --------------------------------

TEST(OpCompareSample, EagerRepeatIsParity) {
  const auto e = load(kData + "debugmode/eager");
  const auto c = compare(e, load(kData + "debugmode/eager_repeat"));
  EXPECT_EQ(c.code, 0);
  EXPECT_EQ(c.report.verdict.exit_code, 0);
  ASSERT_EQ(c.report.checks.size(), 2u);
  for (const auto& ch : c.report.checks) EXPECT_EQ(ch.outcome, Check::Outcome::Pass);
  EXPECT_EQ(c.report.verdict.data["decided_by"], "hash_tensor");
  const auto steps = c.of_kind("op_step_compared");
  ASSERT_EQ(steps.size(), 4u);  // 2 ranks x 2 steps
  for (const auto* f : steps) {
    EXPECT_EQ(f->values["eager_ops"], 271);
    EXPECT_EQ(f->values["compiled_ops"], 271);
    EXPECT_EQ(f->values["divergent_ops"], 0);
    EXPECT_GT(f->values["values_matched"].get<int>(), 250);
    EXPECT_EQ(f->values["compiled_only_ops"], 0);  // the same program: every op pairs
  }
}

TEST(OpCompareSample, CompileIsParityAlthoughTheOpSequencesDiffer) {
  const auto e = load(kData + "debugmode/eager");
  const auto cl = load(kData + "debugmode/compile");
  const auto c = compare(e, cl);
  EXPECT_EQ(c.code, 0);
  EXPECT_TRUE(c.of_kind("op_divergence").empty());
  for (const auto* f : c.of_kind("op_step_compared")) {
    EXPECT_EQ(f->values["eager_ops"], 271);
    EXPECT_EQ(f->values["compiled_ops"], 316);
    EXPECT_EQ(f->values["divergent_ops"], 0);
    EXPECT_GT(f->values["compiled_only_ops"].get<int>(), 0);  // extra detaches
  }
  // eager's one unbind pairs with the compiled run's three selects, by their values.
  const auto v = judge(e, cl);
  const StepVerdict& sv = v[0].steps[0];
  std::uint32_t unbind = 0;
  while (op_of(sv.eager, unbind) != "aten::unbind.int") ++unbind;
  const auto cps = sv.alignment.counterparts_of(unbind);
  ASSERT_EQ(cps.size(), 3u);
  for (const auto cp : cps) EXPECT_EQ(op_of(sv.compiled, cp), "aten::select.int");
  EXPECT_EQ(sv.alignment.eager[unbind].paired_by, PairedBy::Value);
  // ... and the backward's gelu_backward pairs with the compiled one although the order differs.
  std::uint32_t gb = 0;
  while (op_of(sv.eager, gb) != "aten::gelu_backward") ++gb;
  ASSERT_EQ(sv.alignment.counterparts_of(gb).size(), 1u);
  EXPECT_EQ(op_of(sv.compiled, sv.alignment.counterparts_of(gb)[0]), "aten::gelu_backward");
  EXPECT_EQ(sv.eager.at(gb).phase, Phase::Backward);
}

TEST(OpCompareSample, CompileGeluNamesTheGeluOfTheFirstLayerOnBothRanks) {
  const auto e = load(kData + "debugmode/eager");
  const auto cl = load(kData + "debugmode/compile_gelu");
  const auto c = compare(e, cl);
  EXPECT_EQ(c.code, 1);
  EXPECT_EQ(c.report.verdict.exit_code, 1);
  const auto first = c.of_kind("op_divergence");
  ASSERT_EQ(first.size(), 2u);  // one per rank
  for (int rank = 0; rank < 2; ++rank) {
    const Finding& f = *first[static_cast<std::size_t>(rank)];
    SCOPED_TRACE(rank);
    EXPECT_EQ(f.where.rank, rank);
    EXPECT_EQ(f.where.step, 1);
    EXPECT_EQ(f.where.node, "aten::gelu");
    EXPECT_EQ(f.values["cause"], "origin");
    EXPECT_EQ(f.values["eager"]["phase"], "forward");
    EXPECT_EQ(f.values["eager"]["source"]["file"], "/workspace/train_debugmode.py");
    EXPECT_EQ(f.values["eager"]["source"]["line"], 37);
    EXPECT_EQ(f.values["eager"]["line"], 32);  // the first of the two gelus: layers.0's
    EXPECT_EQ(f.values["eager"]["index"], 22);
    EXPECT_EQ(f.values["decided_by"], "hash_tensor");
    // Its input (the w1 output) equals eager's by its hash.
    ASSERT_EQ(f.values["inputs"].size(), 1u);
    EXPECT_EQ(f.values["inputs"][0]["state"], "equal");
    EXPECT_EQ(f.values["inputs"][0]["decided_by"], "its hash");
    // The compiled run's tanh approximation: 0.5 * x * (1 + tanh(c * (x + 0.044715 * x^3))).
    std::vector<std::string> ops;
    for (const auto& cp : f.values["compiled"]) ops.push_back(cp["op"]);
    EXPECT_EQ(ops.size(), 9u);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten::tanh"), 1);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten::mul.Tensor"), 6);
    EXPECT_EQ(f.values["paired_by"], "decomposition");
    // Everything downstream carries it: the next layer, the loss, the whole backward.
    EXPECT_GT(f.values["carried_total"].get<int>(), 200);
    EXPECT_EQ(f.values["carriers"][0]["op"], "aten::view");
    EXPECT_EQ(f.values["other_origin_total"], 0);
  }
  // Step 2 follows from step 1 on both ranks: the embedding's weight differs.
  const auto follows = c.of_kind("op_divergence_follows");
  ASSERT_EQ(follows.size(), 2u);
  for (const auto* f : follows) {
    EXPECT_EQ(f->where.step, 2);
    EXPECT_EQ(f->where.node, "aten::embedding");
    EXPECT_EQ(f->values["cause"], "follows step");
    EXPECT_EQ(f->values["follows_step"], 1);
    EXPECT_EQ(f->values["inputs"][0]["state"], "differs");
  }
  EXPECT_NE(c.report.verdict.headline.find("aten::gelu"), std::string::npos);
  EXPECT_NE(c.report.verdict.headline.find("train_debugmode.py:37"), std::string::npos);
  EXPECT_NE(c.report.verdict.headline.find("origin"), std::string::npos);
}

// ---- the module-path sample: record_nn_module, norm+hash_tensor, a bug on rank 1 only -------------

TEST(OpCompareNnModSample, CompileIsParityByTwoHashFunctions) {
  const auto c = compare(load(kData + "debugmode_nnmod/eager"), load(kData + "debugmode_nnmod/compile"));
  EXPECT_EQ(c.code, 0);
  EXPECT_EQ(c.report.verdict.data["decided_by"], "hash_tensor+norm");
}

TEST(OpCompareNnModSample, RankOneIsTheOriginRankZeroReceivesThroughTheAllReduce) {
  const auto c =
      compare(load(kData + "debugmode_nnmod/eager"), load(kData + "debugmode_nnmod/compile_gelu_rank1"));
  EXPECT_EQ(c.code, 1);
  const auto first = c.of_kind("op_divergence");
  ASSERT_EQ(first.size(), 2u);
  const Finding& r0 = *first[0];
  const Finding& r1 = *first[1];
  EXPECT_EQ(r1.where.rank, 1);
  EXPECT_EQ(r1.where.node, "aten::gelu");
  EXPECT_EQ(r1.values["eager"]["module"], "Net.layers.0");
  EXPECT_EQ(r1.values["eager"]["source"]["line"], 41);
  EXPECT_EQ(r1.values["cause"], "origin");
  EXPECT_EQ(r0.where.rank, 0);
  EXPECT_EQ(r0.where.step, 1);
  EXPECT_EQ(r0.where.node, "c10d::allreduce_");
  EXPECT_EQ(r0.values["eager"]["phase"], "optimizer");
  EXPECT_EQ(r0.values["cause"], "received");
  EXPECT_EQ(r0.values["from_ranks"], nlohmann::json::array({1}));
  EXPECT_EQ(r0.values["carriers"][0]["op"], "aten::div_.Tensor");
  // The headline leads with the origin.
  EXPECT_NE(c.report.verdict.headline.find("rank 1"), std::string::npos);
  EXPECT_NE(c.report.verdict.headline.find("Net.layers.0"), std::string::npos);
  EXPECT_EQ(c.of_kind("op_divergence_follows").size(), 2u);
}

// ---- small logs: what the alignment tolerates and what it does not --------------------------------

/// One op line in 2.11's form with one-function hashes: args and outputs as "t$N: f32[4]".
std::string op(const std::string& name, const std::vector<std::pair<std::string, std::uint64_t>>& args,
               const std::vector<std::pair<std::string, std::uint64_t>>& outs) {
  std::string a, ih, o, oh;
  for (const auto& [t, h] : args) {
    a += (a.empty() ? "" : ", ") + t;
    ih += "(" + std::to_string(h) + ",), ";
  }
  for (const auto& [t, h] : outs) {
    o += (o.empty() ? "" : ", ") + ("'" + t + "'");
    oh += "(" + std::to_string(h) + ",), ";
  }
  const std::string out_text = outs.size() == 1 ? outs[0].first : "(" + o + ")";
  const std::string out_hash =
      outs.size() == 1 ? "(" + std::to_string(outs[0].second) + ",)" : "(" + oh + ")";
  return "    " + name + "(" + a + ")  ->  " + out_text + "  # {'input_hash': ((" + ih +
         "), {}), 'hash': " + out_hash + "}\n";
}

std::vector<RankLogs> logs_of(const std::vector<std::string>& per_rank, const char* side) {
  std::vector<RankLogs> out;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    RankLogs rl{static_cast<int>(r), {}};
    rl.logs.push_back(model::ops::parse_debugmode_text(
        per_rank[r], std::string(side) + "/rank" + std::to_string(r) + "_step1.debug.txt",
        static_cast<int>(r), 1));
    out.push_back(std::move(rl));
  }
  return out;
}

TEST(OpAlign, DecompositionFunctionalizationAndOneSidedOps) {
  const std::string eager =
      op("aten::mm", {{"t$0: f32[4]", 11}, {"t$1: f32[4]", 12}}, {{"t$2: f32[4]", 13}}) +
      op("aten::native_layer_norm", {{"t$2: f32[4]", 13}}, {{"t$3: f32[4]", 14}}) +
      op("aten::add_.Tensor", {{"t$3: f32[4]", 14}, {"t$0: f32[4]", 11}}, {{"t$3: f32[4]", 15}}) +
      op("aten::detach", {{"t$3: f32[4]", 15}}, {{"t$4: f32[4]", 15}});
  const std::string compiled =
      op("aten::mm", {{"t$0: f32[4]", 11}, {"t$1: f32[4]", 12}}, {{"t$2: f32[4]", 13}}) +
      op("aten::var_mean.correction", {{"t$2: f32[4]", 13}}, {{"t$3: f32[1]", 21}, {"t$4: f32[1]", 22}}) +
      op("aten::rsqrt", {{"t$3: f32[1]", 21}}, {{"t$5: f32[1]", 23}}) +
      op("aten::mul.Tensor", {{"t$2: f32[4]", 13}, {"t$5: f32[1]", 23}}, {{"t$6: f32[4]", 14}}) +
      op("aten::add.Tensor", {{"t$6: f32[4]", 14}, {"t$0: f32[4]", 11}}, {{"t$7: f32[4]", 15}}) +
      op("aten::view", {{"t$7: f32[4]", 15}}, {{"t$8: f32[4]", 15}});
  const auto e = logs_of({eager}, "eager");
  const auto c = logs_of({compiled}, "compiled");
  const auto v = judge(e, c);
  const StepVerdict& sv = v[0].steps[0];
  EXPECT_FALSE(sv.first);  // every eager value is in the compiled run
  // native_layer_norm's value comes out of the decomposition's last op.
  ASSERT_EQ(sv.alignment.counterparts_of(1).size(), 1u);
  EXPECT_EQ(op_of(sv.compiled, sv.alignment.counterparts_of(1)[0]), "aten::mul.Tensor");
  // add_ (in place) pairs with the functional add; the eager detach with the compiled view.
  EXPECT_EQ(op_of(sv.compiled, sv.alignment.counterparts_of(2)[0]), "aten::add.Tensor");
  EXPECT_EQ(sv.alignment.compiled_only, 2u);  // var_mean and rsqrt: compiled only
  EXPECT_EQ(compare(e, c).code, 0);
}

TEST(OpAlign, TorchFunctionCallsAreNeitherCountedAsOpsNorPaired) {
  // DebugMode with record_torchfunction=True writes the torch function above the ops it
  // dispatches (tests/data/ops/debugmode_pytorch_tests/mm_ids_output.txt). Those ops hold the
  // values: the calls are not ops of the step, and no eager op pairs with one.
  const std::string eager =
      op("aten::mm", {{"t$0: f32[4]", 11}, {"t$1: f32[4]", 12}}, {{"t$2: f32[4]", 13}}) +
      op("aten::add.Tensor", {{"t$2: f32[4]", 13}, {"t$0: f32[4]", 11}}, {{"t$3: f32[4]", 14}});
  const std::string compiled =
      "    torch.mm(t$0: f32[4], t$1: f32[4])  ->  t$2: f32[4]\n" + std::string("  ") +
      op("aten::mm", {{"t$0: f32[4]", 11}, {"t$1: f32[4]", 12}}, {{"t$2: f32[4]", 99}}) +
      "    <method 'add' of 'torch._C.TensorBase' objects>(t$2: f32[4], t$0: f32[4])  ->  t$3: f32[4]\n" +
      "  " + op("aten::add.Tensor", {{"t$2: f32[4]", 99}, {"t$0: f32[4]", 11}}, {{"t$3: f32[4]", 98}});
  const auto e = logs_of({eager}, "e");
  const auto c = logs_of({compiled}, "c");
  const OpLog& cl = c[0].logs.front();
  ASSERT_EQ(cl.records.size(), 4u);
  ASSERT_EQ(cl.records[0].kind, model::ops::RecordKind::TorchFunction);
  ASSERT_EQ(cl.records[2].kind, model::ops::RecordKind::TorchFunction);
  const auto v = judge(e, c);
  const StepVerdict& sv = v[0].steps[0];
  ASSERT_TRUE(sv.first);
  EXPECT_EQ(op_of(sv.eager, sv.first->record), "aten::mm");
  EXPECT_EQ(sv.first->cause, OpCause::Origin);
  // mm's counterpart is the compiled aten::mm alone; the add's torch function (which reads mm's
  // output) is not taken as part of it.
  const auto cps = sv.alignment.counterparts_of(0);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(op_of(sv.compiled, cps[0]), "aten::mm");
  for (const std::uint32_t tf : {0u, 2u}) EXPECT_EQ(sv.alignment.compiled_partner[tf], -1) << tf;
  EXPECT_EQ(sv.alignment.compiled_only, 0u) << "a torch function is no compiled op without a partner";
  // Counted: two ops each side, in the step's account and the evidence line.
  const auto r = compare(e, c);
  EXPECT_EQ(r.code, 1);
  const auto steps = r.of_kind("op_step_compared");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]->values["eager_ops"], 2);
  EXPECT_EQ(steps[0]->values["compiled_ops"], 2);
  EXPECT_TRUE(steps[0]->message.starts_with("2 ") && steps[0]->message.find(" ops, 2 ") != std::string::npos)
      << steps[0]->message;
  const auto& summary = r.report.verdict.summary;
  EXPECT_TRUE(std::any_of(summary.begin(), summary.end(), [](const std::string& l) {
    return l.starts_with("compared: ") && l.find("of 2 ops on 1 rank") != std::string::npos &&
           l.find("of 4 ops") == std::string::npos;
  })) << ::testing::PrintToString(summary);
}

TEST(OpCompareSample, TwoEagerRunsAreBaselineAndCandidateNeverACompiledRun) {
  // The report names the sides by what their records show: the compiled logs' ops run FX graph
  // code (`# File: <eval_with_key>.3:38`); the eager logs' do not.
  const auto text_of = [](const Compared& c) {
    std::string all = c.report.verdict.headline;
    for (const auto& l : c.report.verdict.summary) all += "\n" + l;
    for (const auto& f : c.report.findings) all += "\n" + f.message;
    return all;
  };
  const auto eager = load(kData + "debugmode/eager");
  const auto repeat = compare(eager, load(kData + "debugmode/eager_repeat"));
  EXPECT_EQ(repeat.code, 0);
  EXPECT_EQ(repeat.report.verdict.data["sides"]["baseline"], "baseline");
  EXPECT_EQ(repeat.report.verdict.data["sides"]["candidate"], "candidate");
  EXPECT_NE(repeat.report.verdict.headline.find("every baseline op's value was found in the candidate"),
            std::string::npos)
      << repeat.report.verdict.headline;
  const std::string said = text_of(repeat);
  EXPECT_EQ(said.find("compiled"), std::string::npos) << said;
  EXPECT_EQ(said.find("eager"), std::string::npos) << said;
  // A divergence between two eager runs (one hash changed) is named in the same words.
  std::ifstream in(kData + "debugmode/eager/rank0_step1.debug.txt");
  const std::string original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string text = original;
  // Another value out of the step's last op (the last gradient's div_: nothing reads it).
  const auto last = text.rfind("'hash': (") + 9;
  text[last] = text[last] == '1' ? '2' : '1';
  const auto differ = compare(logs_of({original}, "eager"), logs_of({text}, "eager_other"));
  EXPECT_EQ(differ.code, 1);
  const auto divs = differ.of_kind("op_divergence");
  ASSERT_FALSE(divs.empty());
  EXPECT_NE(divs.front()->message.find("its inputs' values are in the candidate"), std::string::npos)
      << divs.front()->message;
  EXPECT_NE(divs.front()->message.find("candidate counterpart(s): aten::div_.Tensor"), std::string::npos)
      << divs.front()->message;
  EXPECT_EQ(text_of(differ).find("compiled"), std::string::npos) << text_of(differ);
  // Eager against compiled keeps its words.
  const auto compiled = compare(eager, load(kData + "debugmode/compile"));
  EXPECT_EQ(compiled.report.verdict.data["sides"]["baseline"], "eager");
  EXPECT_EQ(compiled.report.verdict.data["sides"]["candidate"], "compiled");
  EXPECT_NE(compiled.report.verdict.headline.find("every eager op's value was found in the compiled run"),
            std::string::npos)
      << compiled.report.verdict.headline;
}

TEST(OpAlign, AFusedIntermediateIsUnobservedNotDivergent) {
  // Inductor-style: the compiled run never writes mul's value, but add (which reads it) agrees.
  const std::string eager =
      op("aten::mul.Tensor", {{"t$0: f32[4]", 11}, {"t$1: f32[4]", 12}}, {{"t$2: f32[4]", 13}}) +
      op("aten::add.Tensor", {{"t$2: f32[4]", 13}, {"t$1: f32[4]", 12}}, {{"t$3: f32[4]", 14}});
  const std::string compiled =
      op("aten::fused", {{"t$0: f32[4]", 11}, {"t$1: f32[4]", 12}}, {{"t$3: f32[4]", 14}});
  const auto v = judge(logs_of({eager}, "e"), logs_of({compiled}, "c"));
  EXPECT_FALSE(v[0].steps[0].first);
  EXPECT_EQ(v[0].steps[0].alignment.eager[0].status, ValueStatus::Unobserved);
  EXPECT_EQ(v[0].steps[0].unobserved, 1u);
}

TEST(OpAlign, ADifferentDtypeOrSizeIsNotTheSameValue) {
  // hash_tensor hashes float64 copies: f32 and bf16 tensors of equal values hash alike.
  const std::string eager = op("aten::mm", {{"t$0: f32[4]", 11}}, {{"t$1: f32[4]", 13}});
  const std::string compiled = op("aten::mm", {{"t$0: f32[4]", 11}}, {{"t$1: bf16[4]", 13}});
  const auto v = judge(logs_of({eager}, "e"), logs_of({compiled}, "c"));
  ASSERT_TRUE(v[0].steps[0].first);
  EXPECT_EQ(v[0].steps[0].first->cause, OpCause::Origin);
  // Name pairing still finds the compiled mm as its counterpart.
  EXPECT_EQ(v[0].steps[0].alignment.eager[0].paired_by, PairedBy::Name);
}

TEST(OpAlign, HashZeroIsNeverEvidence) {
  // Constant tensors hash to 0 under hash_tensor: found, but weakly.
  const std::string eager =
      op("aten::ones", {}, {{"t$0: f32[4]", 0}}) +
      op("aten::mul.Tensor", {{"t$0: f32[4]", 0}, {"t$1: f32[4]", 7}}, {{"t$2: f32[4]", 9}});
  const std::string compiled =
      op("aten::full", {}, {{"t$0: f32[4]", 0}}) +
      op("aten::mul.Tensor", {{"t$0: f32[4]", 0}, {"t$1: f32[4]", 7}}, {{"t$2: f32[4]", 9}});
  const auto v = judge(logs_of({eager}, "e"), logs_of({compiled}, "c"));
  const auto& a = v[0].steps[0].alignment;
  EXPECT_EQ(a.eager[0].status, ValueStatus::WeakMatched);
  EXPECT_EQ(a.eager[1].status, ValueStatus::Matched);
  EXPECT_EQ(a.values_weak, 1u);
  EXPECT_EQ(a.values_matched, 1u);
  // Only weak values on both sides: nothing compared, exit 2, never parity.
  const auto weak_only = compare(logs_of({op("aten::zeros", {}, {{"t$0: f32[4]", 0}})}, "e"),
                                 logs_of({op("aten::zeros", {}, {{"t$0: f32[4]", 0}})}, "c"));
  EXPECT_EQ(weak_only.code, 2);
  EXPECT_EQ(weak_only.of_kind("nothing_compared").size(), 1u);
  EXPECT_EQ(weak_only.report.verdict.data["nothing_compared"], true);
}

/// DebugMode's line of a cuDNN attention (torch 2.11 returns: output, logsumexp, cum_seq_q,
/// cum_seq_k, max_q, max_k, philox_seed, philox_offset, debug_attn_mask), its backward reading
/// the RNG state, and a mul reading the output. `seed`, `offset`, `mask`: the hashes DebugMode
/// printed of the RNG state and debug outputs (uninitialized bytes on CUDA: any value).
std::string attention_step(const std::string& name, std::uint64_t seed, std::uint64_t offset,
                           std::uint64_t mask, bool readers = true) {
  const std::string s = std::to_string(seed), o = std::to_string(offset), m = std::to_string(mask);
  const std::string attention =
      "    aten::" + name +
      "(t$0: f32[4], t$1: f32[4], t$2: f32[4], None, True, 0.0, True, False)  ->  ('t$3: f32[4]', "
      "'t$4: f32[4]', 'None', 'None', 32, 32, 't$5: i64[]', 't$6: i64[]', 't$7: f32[0]')  # "
      "{'input_hash': (((11,), (12,), (13,), None, None, None, None, None), {}), 'hash': ((14,), (15,), "
      "None, None, None, None, (" +
      s + ",), (" + o + ",), (" + m + ",))}\n";
  if (!readers) return attention;
  return attention +
         op("aten::mul.Tensor", {{"t$3: f32[4]", 14}, {"t$1: f32[4]", 12}}, {{"t$8: f32[4]", 16}}) +
         "    aten::" + name +
         "_backward(t$8: f32[4], t$0: f32[4], t$5: i64[], t$6: i64[])  ->  ('t$9: f32[4]', "
         "'t$10: f32[4]')  # {'input_hash': (((16,), (11,), (" +
         s + ",), (" + o + ",)), {}), 'hash': ((17,), (18,))}\n";
}

TEST(OpAlign, AnAttentionsRngStateIsNoValueInDebugModeLogs) {
  // On CUDA with dropout 0 the RNG state and debug mask may be uninitialized bytes: their hashes
  // differ between two runs of the same computation. Not values: parity.
  const auto e = logs_of({attention_step("_scaled_dot_product_cudnn_attention", 100, 200, 300)}, "e");
  const auto c = logs_of({attention_step("_scaled_dot_product_cudnn_attention", 101, 201, 301)}, "c");
  const OpLog& log = e[0].logs.front();
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  const auto& attn = log.records[0];
  ASSERT_EQ(attn.out_count, 5u);  // output, logsumexp, philox_seed, philox_offset, debug_attn_mask
  EXPECT_TRUE(log.out(attn, 0).hashed());
  EXPECT_TRUE(log.out(attn, 1).hashed());
  for (std::uint32_t i = 2; i < 5; ++i) EXPECT_FALSE(log.out(attn, i).hashed()) << i;
  EXPECT_EQ(log.out(attn, 2).unhashed, model::ops::Unhashed::RngState);
  EXPECT_EQ(log.out(attn, 3).unhashed, model::ops::Unhashed::RngState);
  EXPECT_EQ(log.out(attn, 4).unhashed, model::ops::Unhashed::Debug);
  // The backward reads the same bytes: no input value either.
  const auto& back = log.records[2];
  ASSERT_EQ(back.arg_count, 4u);
  EXPECT_TRUE(log.arg(back, 1).hashed());
  EXPECT_EQ(log.arg(back, 2).unhashed, model::ops::Unhashed::RngState);
  EXPECT_FALSE(log.arg(back, 2).hashed());
  EXPECT_FALSE(log.arg(back, 3).hashed());
  const auto v = judge(e, c);
  EXPECT_FALSE(v[0].steps[0].first);
  EXPECT_EQ(v[0].steps[0].alignment.eager[0].status, ValueStatus::Matched);  // by its output
  EXPECT_EQ(compare(e, c).code, 0);
  // Alone (no reader whose agreement would make a differing output unobserved): still parity.
  const auto alone_e =
      logs_of({attention_step("_scaled_dot_product_cudnn_attention", 100, 200, 300, false)}, "e");
  const auto alone_c =
      logs_of({attention_step("_scaled_dot_product_cudnn_attention", 101, 201, 301, false)}, "c");
  const auto alone = judge(alone_e, alone_c);
  EXPECT_FALSE(alone[0].steps[0].first);
  EXPECT_EQ(alone[0].steps[0].alignment.eager[0].status, ValueStatus::Matched);
  // Other ops' outputs are values: the same outputs of an op without that schema diverge.
  const auto other_e = logs_of({attention_step("my_attention", 100, 200, 300, false)}, "e");
  const auto other_c = logs_of({attention_step("my_attention", 101, 201, 301, false)}, "c");
  const auto other = judge(other_e, other_c);
  ASSERT_TRUE(other[0].steps[0].first);
  EXPECT_EQ(op_of(other[0].steps[0].eager, other[0].steps[0].first->record), "aten::my_attention");
}

TEST(OpAlign, ReceivedThroughAFunctionalCollectiveNamesTheRanksWhoseInputsDiffer) {
  // Rank 1 computes x wrong before an all-reduce; rank 0's x is right, its reduced value is not.
  // The all_reduce's own output hash is taken before the wait: the wait_tensor's is the value.
  auto rank = [](std::uint64_t x, std::uint64_t reduced) {
    return op("aten::mul.Tensor", {{"t$0: f32[4]", 5}}, {{"t$1: f32[4]", x}}) +
           op("_c10d_functional::all_reduce", {{"t$1: f32[4]", x}}, {{"t$2: f32[4]", x}}) +
           op("_c10d_functional::wait_tensor", {{"t$2: f32[4]", x}}, {{"t$2: f32[4]", reduced}}) +
           op("aten::add.Tensor", {{"t$2: f32[4]", reduced}}, {{"t$3: f32[4]", reduced + 1000}});
  };
  const auto e = logs_of({rank(100, 300), rank(200, 300)}, "eager");
  const auto c = logs_of({rank(100, 301), rank(201, 301)}, "compiled");
  const auto v = judge(e, c);
  ASSERT_TRUE(v[0].steps[0].first);
  ASSERT_TRUE(v[1].steps[0].first);
  const OpDivergence& d0 = *v[0].steps[0].first;
  EXPECT_EQ(op_of(v[0].steps[0].eager, d0.record), "_c10d_functional::wait_tensor");
  EXPECT_EQ(d0.cause, OpCause::Received);
  EXPECT_EQ(d0.from_ranks, std::vector<int>{1});
  EXPECT_EQ(op_of(v[0].steps[0].eager, static_cast<std::uint32_t>(d0.collective)),
            "_c10d_functional::all_reduce");
  const OpDivergence& d1 = *v[1].steps[0].first;
  EXPECT_EQ(op_of(v[1].steps[0].eager, d1.record), "aten::mul.Tensor");
  EXPECT_EQ(d1.cause, OpCause::Origin);
  // Every rank's inputs equal but the outputs not: the collective itself is the origin.
  const auto same =
      judge(logs_of({rank(100, 300), rank(200, 300)}, "e"), logs_of({rank(100, 301), rank(200, 301)}, "c"));
  EXPECT_EQ(same[0].steps[0].first->cause, OpCause::Origin);
  EXPECT_TRUE(same[0].steps[0].first->from_ranks.empty());
}

// ---- gparity op records (python/gparity/op_recorder.py) ---------------------------------------------

/// One op record line: tensors as {id, hashes or none}; "async" marks a collective.
std::string rec(std::int64_t step, const std::string& op, const std::string& args, const std::string& outs,
                bool async = false) {
  return R"({"type":"op","step":)" + std::to_string(step) + R"(,"op":")" + op +
         R"(","phase":"forward","args":[)" + args + R"(],"outs":[)" + outs + "]" +
         (async ? R"(,"collective":true,"group":"default","async":true)" : "") + "}\n";
}
std::string t(int id, std::uint64_t h = 0) {
  std::string s = R"({"id":)" + std::to_string(id) + R"(,"dtype":"float32","shape":[4])";
  if (h != 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, R"(,"xxh3":"%016llx","shard":"%016llx")",
                  static_cast<unsigned long long>(h), static_cast<unsigned long long>(h * 3));
    s += buf;
  }
  return s + "}";
}

std::vector<RankLogs> records_of(const std::vector<std::string>& per_rank) {
  std::vector<RankLogs> out;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    RankLogs rl{static_cast<int>(r), {}};
    rl.logs.push_back(model::ops::parse_op_records(per_rank[r], "rank-" + std::to_string(r) + ".jsonl",
                                                   static_cast<int>(r)));
    out.push_back(std::move(rl));
  }
  return out;
}

TEST(OpRecordsCompare, ReceivedThroughAnAsyncAllReduceNamesTheOriginOnTheOtherRank) {
  // Rank 1's gelu differs; both ranks all-reduce what they computed (c10d::allreduce_ returns
  // before the data is reduced: the reader hashes it) and rank 0's reduced value differs.
  auto rank = [](std::uint64_t gelu, std::uint64_t reduced) {
    return rec(1, "aten::mm", t(0, 11), t(1, 21)) + rec(1, "aten::gelu", t(1), t(2, gelu)) +
           rec(1, "c10d::allreduce_", t(2), t(2), true) +
           rec(1, "aten::div_.Tensor", t(2, reduced), t(2, reduced + 5));
  };
  const auto e = records_of({rank(31, 41), rank(32, 41)});
  const auto c = records_of({rank(31, 51), rank(33, 51)});
  for (const auto* side : {&e, &c})
    for (const auto& rl : *side) ASSERT_TRUE(rl.logs.front().issues.empty());
  const auto v = judge(e, c);
  ASSERT_EQ(v.size(), 2u);
  const OpDivergence& d0 = *v[0].steps[0].first;
  EXPECT_EQ(op_of(v[0].steps[0].eager, d0.record), "c10d::allreduce_");
  EXPECT_EQ(d0.cause, OpCause::Received);
  EXPECT_EQ(d0.from_ranks, std::vector<int>{1});
  EXPECT_EQ(d0.origin_rank, 1);
  EXPECT_EQ(d0.origin_op, "aten::gelu");
  EXPECT_EQ(d0.causal["group"], "default");
  const OpDivergence& d1 = *v[1].steps[0].first;
  EXPECT_EQ(op_of(v[1].steps[0].eager, d1.record), "aten::gelu");
  EXPECT_EQ(d1.cause, OpCause::Origin);
  const auto r = compare(e, c);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.report.verdict.data["decided_by"], "xxh3+shard");
  const auto divs = r.of_kind("op_divergence");
  ASSERT_EQ(divs.size(), 2u);
  EXPECT_NE(divs[0]->message.find("origin aten::gelu"), std::string::npos) << divs[0]->message;
  EXPECT_EQ(divs[0]->values["origin"]["rank"], 1);
}

std::string view(int id, int base) {
  return R"({"id":)" + std::to_string(id) + R"(,"dtype":"float32","shape":[4],"view":{"base":)" +
         std::to_string(base) + "}}";
}

TEST(OpRecordsCompare, AViewHasNoVerdictOfItsOwnItFollowsItsBase) {
  // The op recorder hashes no view (issue 24): aten::t of a weight and aten::view of the mm's
  // output name their bases. A differing mm output is the origin and the gelu reading its view
  // is propagated from it; a differing weight shows at the mm that reads its transpose.
  auto step = [](std::uint64_t weight, std::uint64_t mm, std::uint64_t gelu) {
    return rec(1, "aten::t", t(0, weight), view(1, 0)) +
           rec(1, "aten::mm", t(2, 12) + "," + view(1, 0), t(3, mm)) +
           rec(1, "aten::view", t(3), view(4, 3)) + rec(1, "aten::gelu", view(4, 3), t(5, gelu));
  };
  const auto e = records_of({step(11, 13, 15)});
  ASSERT_TRUE(e[0].logs.front().issues.empty()) << e[0].logs.front().issues.front().problem;
  const auto same = judge(e, records_of({step(11, 13, 15)}));
  EXPECT_FALSE(same[0].steps[0].first);
  const auto v = judge(e, records_of({step(11, 23, 25)}));
  const StepVerdict& s = v[0].steps[0];
  ASSERT_TRUE(s.first);
  EXPECT_EQ(op_of(s.eager, s.first->record), "aten::mm");
  EXPECT_EQ(s.first->cause, OpCause::Origin);
  EXPECT_EQ(s.alignment.eager[3].status, ValueStatus::Divergent);  // the gelu
  EXPECT_EQ(s.alignment.eager[2].status, ValueStatus::Unhashed);   // the view op: no verdict
  // The weight's transpose is paired with the compiled one (it read the same weight): an anchor.
  EXPECT_EQ(s.alignment.eager[0].status, ValueStatus::Unhashed);
  ASSERT_EQ(s.alignment.eager[0].counterpart_count, 1u);
  EXPECT_EQ(s.alignment.counterparts[s.alignment.eager[0].first_counterpart], 0u);
  const std::uint32_t gelu_arg = s.alignment.arg_first[3];
  EXPECT_EQ(s.alignment.arg_producer[gelu_arg], 1);  // the mm, through the view
  EXPECT_EQ(s.alignment.arg_value[gelu_arg], 2);     // read as the mm's output: not in the compiled run
  ASSERT_EQ(s.first->carried_total, 1u);             // the gelu carries it on
  // The weight differs: the mm's input (the weight's transpose) differs, read as the weight.
  const auto w = judge(e, records_of({step(21, 23, 25)}));
  const StepVerdict& ws = w[0].steps[0];
  ASSERT_TRUE(ws.first);
  EXPECT_EQ(op_of(ws.eager, ws.first->record), "aten::mm");
  EXPECT_NE(ws.first->cause, OpCause::Origin);
  ASSERT_EQ(ws.first->inputs.size(), 2u);
  EXPECT_EQ(ws.first->inputs[0].state, InputState::Equal);
  EXPECT_EQ(ws.first->inputs[1].state, InputState::Differs);
  EXPECT_TRUE(ws.first->inputs[1].by_hash);
}

TEST(OpRecordsCompare, AnOutBufferIsNoInputOfTheOpThatWritesIt) {
  // mm(a, b, out=buf) with buf made before the step: what it held (garbage of another step, a
  // reused buffer) differs between the runs; the mm's own inputs are equal and its output
  // differs: the mm is the origin, not an op whose input differed.
  auto step = [](std::uint64_t garbage, std::uint64_t mm) {
    std::string out_arg = t(5, garbage);
    out_arg.insert(out_arg.size() - 1, R"(,"name":"out")");
    return rec(1, "aten::mm.out", t(3, 12) + "," + t(4, 13) + "," + out_arg, t(5, mm)) +
           rec(1, "aten::sum", t(5), t(6, mm + 1));
  };
  const auto e = records_of({step(97, 15)});
  ASSERT_TRUE(e[0].logs.front().issues.empty()) << e[0].logs.front().issues.front().problem;
  EXPECT_FALSE(judge(e, records_of({step(98, 15)}))[0].steps[0].first);  // other garbage: parity
  const auto v = judge(e, records_of({step(98, 25)}));
  const StepVerdict& s = v[0].steps[0];
  ASSERT_TRUE(s.first);
  EXPECT_EQ(op_of(s.eager, s.first->record), "aten::mm.out");
  EXPECT_EQ(s.first->cause, OpCause::Origin);
  EXPECT_EQ(s.alignment.arg_value[s.alignment.arg_first[0] + 2], 0);  // the buffer: not read
}

TEST(OpRecordsCompare, AnAttentionsRngStateIsUnhashedAndNoDivergence) {
  // The recorders write the RNG state and debug outputs unhashed and marked, and so an input that
  // is one of them: an attention whose outputs 3 and 4 (philox_seed, philox_offset) differ between
  // runs is compared by its output and logsumexp alone.
  auto step = [](std::uint64_t out, const char* seed_extra, bool readers = true) {
    const std::string rng =
        std::string(R"(,"dtype":"int64","shape":[],"unhashed":"rng_state")") + seed_extra + "}";
    return rec(1, "aten::_scaled_dot_product_cudnn_attention", t(0, 11) + "," + t(1, 12) + "," + t(2, 13),
               t(3, out) + "," + t(4, 15) + R"(,{"id":5)" + rng + R"(,{"id":6)" + rng +
                   R"(,{"id":7,"dtype":"float32","shape":[0],"unhashed":"debug"})") +
           (readers ? rec(1, "aten::_scaled_dot_product_cudnn_attention_backward",
                          t(3) + "," + t(8, 16) + R"(,{"id":5)" + rng + R"(,{"id":6)" + rng, t(9, out + 3))
                    : "");
  };
  const auto e = records_of({step(14, "")});
  const OpLog& log = e[0].logs.front();
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  const auto& attn = log.records[0];
  ASSERT_EQ(attn.out_count, 5u);
  EXPECT_EQ(log.out(attn, 2).unhashed, model::ops::Unhashed::RngState);
  EXPECT_EQ(log.out(attn, 3).unhashed, model::ops::Unhashed::RngState);
  EXPECT_EQ(log.out(attn, 4).unhashed, model::ops::Unhashed::Debug);
  EXPECT_EQ(log.out(attn, 1).unhashed, model::ops::Unhashed::No);
  EXPECT_FALSE(log.out(attn, 2).hashed());
  EXPECT_EQ(log.arg(log.records[1], 2).unhashed, model::ops::Unhashed::RngState);
  EXPECT_EQ(model::ops::unhashed_name(log.out(attn, 2).unhashed), "rng_state");
  EXPECT_EQ(model::ops::unhashed_name(log.out(attn, 4).unhashed), "debug");
  const auto same = judge(e, records_of({step(14, "")}));
  EXPECT_FALSE(same[0].steps[0].first);
  EXPECT_EQ(same[0].steps[0].alignment.eager[0].status, ValueStatus::Matched);
  EXPECT_EQ(compare(e, records_of({step(14, "")})).code, 0);
  EXPECT_FALSE(judge(records_of({step(14, "", false)}), records_of({step(14, "", false)}))[0].steps[0].first);
  // The output differs: the attention is the origin (its RNG state takes no part).
  const auto v = judge(e, records_of({step(24, "")}));
  ASSERT_TRUE(v[0].steps[0].first);
  EXPECT_EQ(op_of(v[0].steps[0].eager, v[0].steps[0].first->record),
            "aten::_scaled_dot_product_cudnn_attention");
  // A marked tensor with hashes, or an unknown marker, is a damaged record.
  const auto bad = records_of({step(14, R"(,"shard":"0000000000000001")")});
  ASSERT_FALSE(bad[0].logs.front().issues.empty());
  EXPECT_NE(bad[0].logs.front().issues.front().problem.find("\"unhashed\" with hashes"), std::string::npos);
  const auto unknown =
      records_of({rec(1, "aten::x", "", R"({"id":1,"dtype":"int64","shape":[],"unhashed":"nonce"})")});
  ASSERT_FALSE(unknown[0].logs.front().issues.empty());
  EXPECT_NE(unknown[0].logs.front().issues.front().problem.find(
                "is not \"rng_state\", \"debug\", \"uninitialized\" or \"captured\""),
            std::string::npos);
}

TEST(OpRecordsCompare, AnAllocationsOutputIsUninitializedNoValue) {
  // The recorders mark aten::empty's output (whatever bytes the block held) and the fill_ that
  // reads it unchanged; fill_'s result is the value.
  const std::string alloc = R"({"id":1,"dtype":"float32","shape":[4],"unhashed":"uninitialized"})";
  auto step = [&](std::uint64_t filled) {
    return rec(1, "aten::empty.memory_format", "", alloc) +
           rec(1, "aten::fill_.Scalar", alloc, t(1, filled)) +
           rec(1, "aten::mul.Tensor", t(1) + "," + t(2, 31), t(3, filled + 100));
  };
  const auto e = records_of({step(21)});
  const OpLog& log = e[0].logs.front();
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  EXPECT_EQ(log.out(log.records[0], 0).unhashed, model::ops::Unhashed::Uninitialized);
  EXPECT_FALSE(log.out(log.records[0], 0).hashed());
  EXPECT_EQ(model::ops::unhashed_name(model::ops::Unhashed::Uninitialized), "uninitialized");
  EXPECT_EQ(compare(e, records_of({step(21)})).code, 0);
  // What was written into it is a value: fill_ is the origin, never the allocation.
  const auto v = judge(e, records_of({step(22)}));
  ASSERT_TRUE(v[0].steps[0].first);
  EXPECT_EQ(op_of(v[0].steps[0].eager, v[0].steps[0].first->record), "aten::fill_.Scalar");
}

TEST(OpAlign, AnAllocationsBytesAreNoValueInDebugModeLogs) {
  // DebugMode hashes aten::empty's output: two runs of the same program hash different garbage.
  auto step = [](std::uint64_t garbage) {
    return op("aten::empty.memory_format", {}, {{"t$0: f32[4]", garbage}}) +
           op("aten::fill_.Scalar", {{"t$0: f32[4]", garbage}}, {{"t$0: f32[4]", 21}}) +
           op("aten::mul.Tensor", {{"t$0: f32[4]", 21}, {"t$1: f32[4]", 12}}, {{"t$2: f32[4]", 16}});
  };
  const auto e = logs_of({step(1000)}, "e");
  const auto c = logs_of({step(2000)}, "c");
  const OpLog& log = e[0].logs.front();
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  EXPECT_EQ(log.out(log.records[0], 0).unhashed, model::ops::Unhashed::Uninitialized);
  EXPECT_FALSE(log.arg(log.records[1], 0).hashed());  // fill_ reads the garbage unchanged
  EXPECT_TRUE(log.out(log.records[1], 0).hashed());   // and writes the value
  const auto v = judge(e, c);
  EXPECT_FALSE(v[0].steps[0].first);
  EXPECT_EQ(compare(e, c).code, 0);
  for (const char* a : {"aten::empty", "empty_strided", "aten::new_empty.default", "aten::empty_like",
                        "aten::new_empty_strided", "aten::empty_permuted"})
    EXPECT_TRUE(model::ops::allocates_uninitialized(a)) << a;
  for (const char* a : {"aten::zeros", "aten::empty_cache", "aten::fill_", "my::empty"})
    EXPECT_FALSE(model::ops::allocates_uninitialized(a)) << a;
}

TEST(OpRecordsCompare, EveryAllReduceOfTheStepIsReceivedNoneIsAnOtherOrigin) {
  // Two all-reduces in one step (hashed when they return, like Gloo's on the CPU); rank 1's gelu
  // differs, so rank 1's inputs to both differ. Rank 0's inputs to both are equal and both of
  // its reduced values differ: both are received from rank 1, and what rank 0 computes from the
  // second is propagated. Rank 0 has no origin at all.
  auto rank = [](std::uint64_t gelu, std::uint64_t scaled, std::uint64_t reduced) {
    return rec(1, "aten::mm", t(0, 11), t(1, 21)) + rec(1, "aten::gelu", t(1), t(2, gelu)) +
           rec(1, "c10d::allreduce_", t(2), t(3, reduced)) + rec(1, "aten::mul.Tensor", t(2), t(4, scaled)) +
           rec(1, "c10d::allreduce_", t(4), t(5, reduced + 1)) +
           rec(1, "aten::div.Tensor", t(5), t(6, reduced + 2));
  };
  const auto e = records_of({rank(31, 61, 41), rank(32, 62, 41)});
  const auto c = records_of({rank(31, 61, 51), rank(33, 63, 51)});
  for (const auto* side : {&e, &c})
    for (const auto& rl : *side) ASSERT_TRUE(rl.logs.front().issues.empty());
  const auto v = judge(e, c);
  ASSERT_EQ(v.size(), 2u);
  const StepVerdict& s0 = v[0].steps[0];
  ASSERT_TRUE(s0.first);
  const OpDivergence& d0 = *s0.first;
  EXPECT_EQ(op_of(s0.eager, d0.record), "c10d::allreduce_");
  EXPECT_EQ(d0.record, 2u);  // the first all-reduce
  EXPECT_EQ(d0.cause, OpCause::Received);
  EXPECT_EQ(d0.from_ranks, std::vector<int>{1});
  EXPECT_EQ(d0.origin_rank, 1);
  EXPECT_EQ(d0.origin_op, "aten::gelu");
  // The second all-reduce is received too, and the div reading it is not an origin either.
  EXPECT_EQ(d0.other_origin_total, 0u);
  EXPECT_TRUE(d0.other_origins.empty());
  ASSERT_EQ(d0.other_received_total, 1u);
  ASSERT_EQ(d0.other_received.size(), 1u);
  EXPECT_EQ(d0.other_received.front(), 4u);
  // Rank 1 started it; its all-reduces read its divergent values (propagated, not origins).
  const OpDivergence& d1 = *v[1].steps[0].first;
  EXPECT_EQ(op_of(v[1].steps[0].eager, d1.record), "aten::gelu");
  EXPECT_EQ(d1.cause, OpCause::Origin);
  EXPECT_EQ(d1.other_origin_total, 0u);
  EXPECT_EQ(d1.other_received_total, 0u);
  // The report says so: no other origin on rank 0, the second all-reduce listed as received.
  const auto r = compare(e, c);
  EXPECT_EQ(r.code, 1);
  const auto divs = r.of_kind("op_divergence");
  ASSERT_EQ(divs.size(), 2u);
  for (const auto* f : divs) {
    EXPECT_EQ(f->values["other_origin_total"], 0) << f->message;
    if (f->values["rank"] != 0) continue;
    EXPECT_EQ(f->values["cause"], "received");
    EXPECT_EQ(f->values["other_received_total"], 1);
    ASSERT_EQ(f->values["other_received"].size(), 1u);
    EXPECT_EQ(f->values["other_received"][0]["op"], "c10d::allreduce_");
  }
}

/// An async all-reduce record on a named group; `ranks` its members ("" leaves them out, as a
/// DebugMode functional collective does).
std::string group_rec(const std::string& group, const std::string& ranks, const std::string& tensor) {
  return R"({"type":"op","step":1,"op":"c10d::allreduce_","phase":"forward","args":[)" + tensor +
         R"(],"outs":[)" + tensor + R"(],"collective":true,"group":")" + group + "\"" +
         (ranks.empty() ? "" : R"(,"group_ranks":[)" + ranks + "]") + R"(,"async":true})" + "\n";
}

/// One step of a 2x2 mesh (FSDP x TP): ranks [[0, 1], [2, 3]], TP groups the rows, DP groups the
/// columns. Each rank: gelu, all-reduce over its TP group, a scale, all-reduce over its DP group,
/// a shift. `wrong3`: rank 3's gelu differs, so does every value its groups reduce.
std::vector<RankLogs> mesh_2x2(bool wrong3, bool with_members) {
  std::vector<std::string> per_rank;
  for (int r = 0; r < 4; ++r) {
    const bool tp_hit = wrong3 && r >= 2;  // {2, 3} reduces rank 3's gelu
    const bool dp_hit = wrong3;            // {0, 2} gets rank 2's, {1, 3} rank 3's
    const std::string tp = r < 2 ? "tp0" : "tp1", dp = r % 2 == 0 ? "dp0" : "dp1";
    const std::string tp_ranks = !with_members ? "" : r < 2 ? "0,1" : "2,3";
    const std::string dp_ranks = !with_members ? "" : r % 2 == 0 ? "0,2" : "1,3";
    const std::uint64_t base = 100 * static_cast<std::uint64_t>(r + 1);
    per_rank.push_back(
        rec(1, "aten::mm", t(0, base + 1), t(1, base + 2)) +
        rec(1, "aten::gelu", t(1), t(2, base + 3 + (wrong3 && r == 3 ? 50 : 0))) +
        group_rec(tp, tp_ranks, t(2)) +
        rec(1, "aten::mul.Tensor", t(2, base + 4 + (tp_hit ? 50 : 0)), t(3, base + 5 + (tp_hit ? 50 : 0))) +
        group_rec(dp, dp_ranks, t(3)) +
        rec(1, "aten::add.Tensor", t(3, base + 6 + (dp_hit ? 50 : 0)), t(4, base + 7 + (dp_hit ? 50 : 0))));
  }
  return records_of(per_rank);
}

TEST(OpRecordsCompare, OnA2x2MeshTheSendersAreTheMembersOfTheCollectivesGroup) {
  // Rank 3's gelu is the origin. The TP all-reduce of {2, 3} makes rank 2 received from rank 3;
  // ranks 0 and 1 (the other TP group) get it only through their DP all-reduces, rank 0 from
  // rank 2 and rank 1 from rank 3. With every collective in one group, rank 0 and rank 1 would
  // both be "received from ranks 2, 3".
  for (const bool with_members : {true, false}) {
    SCOPED_TRACE(with_members ? "groups with their members" : "groups by name only");
    const auto e = mesh_2x2(false, with_members);
    const auto c = mesh_2x2(true, with_members);
    for (const auto* side : {&e, &c})
      for (const auto& rl : *side)
        ASSERT_TRUE(rl.logs.front().issues.empty()) << rl.logs.front().issues.front().problem;
    const auto v = judge(e, c);
    ASSERT_EQ(v.size(), 4u);
    const OpDivergence& d3 = *v[3].steps[0].first;
    EXPECT_EQ(op_of(v[3].steps[0].eager, d3.record), "aten::gelu");
    EXPECT_EQ(d3.cause, OpCause::Origin);
    struct Expect {
      int rank;
      std::uint32_t record;  // 2: the TP all-reduce, 4: the DP all-reduce
      const char* group;
      int sender;
    };
    for (const Expect x : {Expect{2, 2, "tp1", 3}, Expect{0, 4, "dp0", 2}, Expect{1, 4, "dp1", 3}}) {
      SCOPED_TRACE("rank " + std::to_string(x.rank));
      ASSERT_TRUE(v[x.rank].steps[0].first);
      const OpDivergence& d = *v[x.rank].steps[0].first;
      EXPECT_EQ(d.record, x.record);
      EXPECT_EQ(d.cause, OpCause::Received);
      EXPECT_EQ(d.from_ranks, std::vector<int>{x.sender});
      EXPECT_EQ(d.causal["group"], x.group);
      EXPECT_EQ(d.origin_rank, 3);
      EXPECT_EQ(d.origin_op, "aten::gelu");
      EXPECT_EQ(d.other_origin_total, 0u);
    }
    // Rank 2 carries the damage on through its DP all-reduce: propagated there, not received again.
    EXPECT_EQ(v[2].steps[0].first->other_received_total, 0u);
    const auto r = compare(e, c);
    EXPECT_EQ(r.code, 1);
    for (const auto* f : r.of_kind("op_divergence")) {
      if (f->values["rank"] != 0) continue;
      EXPECT_EQ(f->values["group"]["name"], "dp0");
      if (with_members) {
        EXPECT_EQ(f->values["group"]["ranks"], (std::vector<int>{0, 2}));
        EXPECT_NE(f->message.find("received through c10d::allreduce_ (group 'dp0': ranks 0, 2) from rank 2"),
                  std::string::npos)
            << f->message;
      } else {
        EXPECT_TRUE(f->values["group"]["ranks"].is_null());
        EXPECT_NE(f->message.find("(group 'dp0') from rank 2"), std::string::npos) << f->message;
      }
    }
  }
}

TEST(OpRecordsCompare, ACollectiveAMemberDidNotRecordIsUnknownNeverAnOrigin) {
  // Rank 1 has the step but no all-reduce in it: rank 0's divergent all-reduce cannot be judged.
  const std::string r0 = rec(1, "aten::mm", t(0, 11), t(1, 21)) +
                         rec(1, "c10d::allreduce_", t(1), t(1), true) +
                         rec(1, "aten::div_.Tensor", t(1, 41), t(1, 46));
  const std::string r0c = rec(1, "aten::mm", t(0, 11), t(1, 21)) +
                          rec(1, "c10d::allreduce_", t(1), t(1), true) +
                          rec(1, "aten::div_.Tensor", t(1, 42), t(1, 47));
  const std::string r1 = rec(1, "aten::mm", t(0, 11), t(1, 21));
  const auto e = records_of({r0, r1});
  const auto c = records_of({r0c, r1});
  for (const auto* side : {&e, &c})
    for (const auto& rl : *side) ASSERT_TRUE(rl.logs.front().issues.empty());
  const auto v = judge(e, c);
  const OpDivergence& d0 = *v[0].steps[0].first;
  EXPECT_EQ(op_of(v[0].steps[0].eager, d0.record), "c10d::allreduce_");
  EXPECT_EQ(d0.cause, OpCause::Unknown);
  EXPECT_NE(d0.causal_text.find("rank 1"), std::string::npos) << d0.causal_text;
}

TEST(OpRecordsCompare, OpRecordsAgainstADebugModeLogShareNoHashFunction) {
  const auto e = records_of({rec(1, "aten::mm", t(0, 11), t(1, 21))});
  auto c = load(kData + "debugmode/compile");
  c.resize(1);  // rank 0
  const auto r = compare(e, c);
  EXPECT_EQ(r.code, 2);
  ASSERT_EQ(r.of_kind("op_hash_functions_differ").size(), 1u);
  EXPECT_NE(r.of_kind("op_hash_functions_differ")[0]->message.find("xxh3+shard"), std::string::npos);
}

// ---- bad input -------------------------------------------------------------------------------------

TEST(OpCompareBadInput, DifferentHashFunctionsAreNamed) {
  const auto e = logs_of({op("aten::mm", {{"t$0: f32[4]", 1}}, {{"t$1: f32[4]", 2}})}, "eager");
  auto c = logs_of({"    aten::mm(t$0: f32[4])  ->  t$1: f32[4]  # {'hash': (2.5,)}\n"}, "compiled");
  const auto r = compare(e, c);
  EXPECT_EQ(r.code, 2);
  const auto f = r.of_kind("op_hash_functions_differ");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0]->message.find("hash_tensor"), std::string::npos);
  EXPECT_NE(f[0]->message.find("norm"), std::string::npos);
  EXPECT_NE(f[0]->message.find("eager/rank0_step1.debug.txt"), std::string::npos);
  EXPECT_NE(f[0]->message.find("compiled/rank0_step1.debug.txt"), std::string::npos);
  EXPECT_EQ(r.report.verdict.exit_code, 2);
}

TEST(OpCompareBadInput, LogsWithoutHashes) {
  const auto e = logs_of({"    aten::mm(t$0: f32[4])  ->  t$1: f32[4]\n"}, "eager");
  const auto c = logs_of({op("aten::mm", {{"t$0: f32[4]", 1}}, {{"t$1: f32[4]", 2}})}, "compiled");
  const auto r = compare(e, c);
  EXPECT_EQ(r.code, 2);
  const auto f = r.of_kind("op_no_hashes");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->where.source, "eager/rank0_step1.debug.txt");
  EXPECT_NE(f[0]->message.find("log_tensor_hashes"), std::string::npos);
}

TEST(OpCompareBadInput, RanksAndStepsOnOneSideOnlyAreIncomplete) {
  const auto e = load(kData + "debugmode/eager");
  auto c = load(kData + "debugmode/eager_repeat");
  c.pop_back();               // no rank 1
  c.front().logs.pop_back();  // rank 0: step 1 only
  const auto r = compare(e, c);
  EXPECT_EQ(r.code, 1);  // what was compared agrees, but evidence is missing: never parity
  const auto rank = r.of_kind("op_rank_missing");
  ASSERT_EQ(rank.size(), 1u);
  EXPECT_EQ(rank[0]->where.rank, 1);
  const auto step = r.of_kind("op_step_missing");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0]->where.step, 2);
  EXPECT_EQ(compare(e, c, /*allow_incomplete=*/true).code, 0);
  // Nothing in common at all: exit 2.
  auto other = load(kData + "debugmode/eager_repeat");
  for (auto& rl : other) rl.rank += 10;
  EXPECT_EQ(compare(e, other).code, 2);
}

TEST(OpCompareBadInput, DamagedAndTruncatedLogsNameTheirLines) {
  std::ifstream in(kData + "debugmode/eager_repeat/rank0_step1.debug.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // Line 5 (the first layer norm) loses its closing parenthesis; the last line is cut short.
  std::vector<std::string> lines;
  std::stringstream split(text);
  for (std::string l; std::getline(split, l);) lines.push_back(l);
  lines[4] = lines[4].substr(0, lines[4].find(")  ->  "));
  std::string damaged;
  for (const auto& l : lines) damaged += l + "\n";
  damaged.resize(damaged.size() - 30);
  const auto e = load(kData + "debugmode/eager");
  auto c = load(kData + "debugmode/eager_repeat");
  c[0].logs[0] = model::ops::parse_debugmode_text(damaged, "eager_repeat/rank0_step1.debug.txt", 0, 1);
  const auto r = compare(e, c);
  EXPECT_EQ(r.code, 1);
  const auto damage = r.of_kind("op_log_damaged");
  ASSERT_EQ(damage.size(), 1u);
  EXPECT_EQ(damage[0]->where.source, "eager_repeat/rank0_step1.debug.txt");
  EXPECT_EQ(damage[0]->where.line, 5);
  EXPECT_EQ(damage[0]->severity, Severity::Incomplete);
  const auto cut = r.of_kind("op_log_truncated");
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0]->where.line, 428);
  EXPECT_NE(r.report.verdict.exit_code, 0);
}

}  // namespace
}  // namespace gparity::diff::ops
