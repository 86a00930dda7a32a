// Kernel-level parity of compiled runs (diff/kernels) on the DebugMode logs of Inductor-compiled
// training in tests/data/ops/debugmode_inductor (PyTorch 2.11, 2 x H100 over NCCL, with
// TORCH_TRACE provenance; facts in its README.md), on copies of them edited here, and eager
// against Inductor (diff/ops with the fused kernels named) on those logs and on small ones written
// the way DebugMode writes them.

#include "diff/kernels/kernel_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/model/ops/debugmode.hpp"
#include "core/model/ops/kernel_launch.hpp"
#include "core/model/ops/op_run.hpp"
#include "diff/kernels/fused_kernels.hpp"
#include "tests/diff/kernels/compared_runs.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::diff::kernels {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ops::RankLogs;

const std::string kRuns = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode_inductor/";

TEST(KernelCompare, TheDeterministicRepeatIsParity) {
  const Compared r = compare_runs(kRuns + "inductor", kRuns + "inductor_repeat");
  EXPECT_EQ(r.code, 0) << r.report.verdict.headline;
  ASSERT_EQ(r.report.checks.size(), 2u);
  for (const auto& c : r.report.checks) EXPECT_EQ(c.outcome, Check::Outcome::Pass) << c.message;
  EXPECT_EQ(r.report.verdict.data["level"], "kernels");
  // Evidence on every rank and step: launches paired and values compared, none differing.
  std::size_t steps = 0;
  for (const auto& step : r.report.findings) {
    if (step.kind != "kernel_step_compared") continue;
    ++steps;
    const Finding* f = &step;
    EXPECT_EQ(f->values["kernels"], 33) << f->message;
    EXPECT_EQ(f->values["differing"], 0);
    EXPECT_GT(f->values["values_compared"].get<int>(), 300);
    EXPECT_EQ(f->values["unpaired_baseline"], 0);
    EXPECT_EQ(f->values["unpaired_candidate"], 0);
  }
  EXPECT_EQ(steps, 4u);
  // DebugMode's hashing ops are not the program's: none is named anywhere.
  for (const auto& f : r.report.findings)
    EXPECT_EQ(f.message.find("_to_copy"), std::string::npos) << f.message;
}

TEST(KernelCompare, ARankOnePassIsRankOneOriginAtTheGeluKernelAndReceivedOnRankZero) {
  const Compared r = compare_runs(kRuns + "inductor", kRuns + "inductor_pass1");
  EXPECT_EQ(r.code, 1);
  const Finding* r1 = r.divergence(1, 1);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->where.node, "triton_poi_fused_gelu_view_2");
  const json& v = r1->values;
  EXPECT_EQ(v["cause"], "origin, different code");
  EXPECT_EQ(v["code"]["source_differs"], true);
  EXPECT_NE(v["code"]["baseline_line"].get<std::string>().find("libdevice.erf("), std::string::npos);
  EXPECT_NE(v["code"]["candidate_line"].get<std::string>().find("libdevice.tanh("), std::string::npos);
  // Its nodes and source line, from the baseline's TORCH_TRACE.
  const json& p = v["provenance"];
  EXPECT_EQ(p["line"], 856);
  EXPECT_EQ(p["aten"], json({"aten.view", "aten.gelu"}));
  const auto post = p["post_grad_nodes"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(post.begin(), post.end(), "erf"), post.end());
  const auto pre = p["pre_grad_nodes"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(pre.begin(), pre.end(), "gelu"), pre.end());
  ASSERT_FALSE(p["frames"].empty());
  EXPECT_EQ(p["frames"].back()["line"], 36);
  EXPECT_NE(r1->message.find("gen_inductor.py:36"), std::string::npos) << r1->message;
  // Every input it read was equal; the third launch of the step.
  for (const auto& a : v["args"]) {
    if (a["role"] == "in") {
      EXPECT_EQ(a["baseline_before"], a["candidate_before"]);
    }
  }

  const Finding* r0 = r.divergence(0, 1);
  ASSERT_NE(r0, nullptr);
  EXPECT_EQ(r0->where.node, "c10d::allreduce_");
  EXPECT_EQ(r0->values["cause"], "received");
  EXPECT_EQ(r0->values["from_ranks"], json({1}));
  EXPECT_EQ(r0->values["causality"]["origin"]["rank"], 1);
  EXPECT_EQ(r0->values["causality"]["origin"]["op"], "triton_poi_fused_gelu_view_2");
  // Step 2 follows from step 1 on both ranks (the weights changed); the headline leads with the origin.
  EXPECT_EQ(r.divergence(0, 2)->values["cause"], "follows step");
  EXPECT_EQ(r.divergence(1, 2)->values["cause"], "follows step");
  EXPECT_NE(r.report.verdict.headline.find("rank 1 step 1, triton_poi_fused_gelu_view_2"), std::string::npos)
      << r.report.verdict.headline;
}

TEST(KernelCompare, TheSameProgramRunTwiceWithoutDeterminismIsNonDeterministicNeverParity) {
  const Compared r = compare_runs(kRuns + "inductor_nondet", kRuns + "inductor_nondet_repeat");
  EXPECT_EQ(r.code, 1);
  for (const int rank : {0, 1}) {
    const Finding* f = r.divergence(rank, 1);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->where.node,
              "triton_per_fused_add_addmm_native_layer_norm_native_layer_norm_backward_view_4");
    EXPECT_EQ(f->values["cause"], "non-deterministic");
    // The repeat kept no trace: its code is known on the baseline side only, and that is said.
    EXPECT_EQ(f->values["code"]["baseline_known"], true);
    EXPECT_EQ(f->values["code"]["candidate_known"], false);
    EXPECT_EQ(f->values["code"]["deterministic_off"], true);
    EXPECT_NE(f->message.find("one side only"), std::string::npos);
    // Equal inputs; what differs is out_ptr2..4 (its out_ptr pre-kernel hashes are not inputs).
    for (const auto& a : f->values["args"]) {
      if (a["role"] != "out") {
        EXPECT_EQ(a["baseline_before"], a["candidate_before"]) << a;
      }
    }
    EXPECT_NE(f->message.find("out_ptr2, out_ptr3, out_ptr4"), std::string::npos) << f->message;
  }
}

TEST(KernelCompare, RenumberedKernelsPairByFamily) {
  const auto a = ops::read_rank_logs(model::ops::open_op_run(kRuns + "inductor"));
  const auto b = ops::read_rank_logs(model::ops::open_op_run(kRuns + "inductor_pass1"));
  const auto sa = ops::slices_of(a[1].logs.front()), sb = ops::slices_of(b[1].logs.front());
  const LaunchAlignment al = align_launches(sa.front(), sb.front());
  EXPECT_EQ(al.unpaired_base, 0u);
  EXPECT_EQ(al.unpaired_cand, 0u);
  // Rank 1's second gelu is a kernel of its own in the candidate (`..._view_5`), renumbered.
  std::size_t family = 0;
  for (std::size_t i = 0; i < al.base.size(); ++i) {
    if (al.paired_by[i] != PairedBy::Family) continue;
    ++family;
    const auto& cand = sb.front().at(al.cand[static_cast<std::size_t>(al.base_partner[i])]);
    EXPECT_EQ(model::ops::kernel_family(sb.front().log->op_name(cand)),
              model::ops::kernel_family(sa.front().log->op_name(sa.front().at(al.base[i]))));
  }
  EXPECT_GT(family, 0u);
}

/// A copy of a run whose rank-1 step-1 log lost its `n`-th [triton] launch (the line and its hash lines).
void drop_launch(const std::string& from, const fs::path& to, int n) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    if (!e.is_regular_file()) continue;
    std::string text = testing::slurp(e.path());
    if (e.path().filename() == "rank1_step1.debug.txt") {
      std::size_t at = 0;
      for (int i = 0; i <= n; ++i) at = text.find("[triton] ", at + 1);
      const std::size_t begin = text.rfind('\n', at) + 1;
      std::size_t end = begin;
      for (int line = 0; line < 3; ++line) end = text.find('\n', end) + 1;
      text.erase(begin, end - begin);
    }
    std::ofstream(to / e.path().filename(), std::ios::binary) << text;
  }
}

TEST(KernelCompare, ALaunchOnlyOneSideMadeIsADivergenceNeverParity) {
  testing::TempDir tmp;
  drop_launch(kRuns + "inductor_repeat", tmp.path() / "repeat", 5);
  const Compared r = compare_runs(kRuns + "inductor", (tmp.path() / "repeat").string());
  EXPECT_EQ(r.code, 1);
  const Finding* f = r.divergence(1, 1);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->values["cause"], "no counterpart");
  EXPECT_EQ(f->values["side"], "baseline");
  const Finding* ok = r.divergence(0, 1);
  EXPECT_EQ(ok, nullptr);  // rank 0 untouched
}

// ---- eager against Inductor ---------------------------------------------------------------------

TEST(FusedKernels, EagerAgainstInductorNamesNoValueInductorNeverWroteAsOrigin) {
  const Compared r = compare_runs(kRuns + "eager", kRuns + "inductor");
  EXPECT_EQ(r.code, 1);
  const std::size_t never_written = never_written_ops_named_origin_none(kRuns + "eager", kRuns + "inductor");
  EXPECT_GT(never_written, 0u);  // Inductor keeps values in registers: those are unobserved
  // Each divergence names the fused kernel that wrote the value that differs, with its nodes.
  for (const int rank : {0, 1}) {
    const Finding* f = r.divergence(rank, 1);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->values["eager"]["op"], "aten::native_layer_norm");
    EXPECT_EQ(f->values["cause"], "origin");
    const json& k = f->values["fused_kernel"];
    EXPECT_EQ(k["launch"]["op"], "triton_per_fused_embedding_native_layer_norm_0");
    const auto pre = k["provenance"]["pre_grad_nodes"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(pre.begin(), pre.end(), "layer_norm"), pre.end());
    // out_ptr0 holds the embedding, the layer norm's own input: not its value.
    const std::string wrote = k["wrote"].get<std::string>();
    EXPECT_FALSE(wrote.starts_with("out_ptr0 ") || wrote.find(", out_ptr0 ") != std::string::npos) << wrote;
    EXPECT_NE(wrote.find("out_ptr2 f32[2, 32, 64]"), std::string::npos) << wrote;  // the layer norm's output
  }
}

TEST(FusedKernels, AnIntermediateTheKernelKeptIsUnobservedAndTheValueItWroteIsTheOrigin) {
  // Eager: add then mul; Inductor: one kernel computing both, writing only mul's value (other bits).
  const std::string eager =
      "    # File: /w/m.py:5 in f, code: y = (a + b) * c\n"
      "    aten::add.Tensor(t$0: f32[4], t$1: f32[4])  ->  t$2: f32[4]  # {'input_hash': (((11,), (12,)), "
      "{}), "
      "'hash': (13,)}\n"
      "    aten::mul.Tensor(t$2: f32[4], t$3: f32[4])  ->  t$4: f32[4]  # {'input_hash': (((13,), (14,)), "
      "{}), "
      "'hash': (15,)}\n";
  const std::string compiled =
      "    # File: /tmp/c.py:10 in call, code: triton_poi_fused_add_mul_0.run(arg0_1, arg1_1, arg2_1, buf0, "
      "4, "
      "stream=stream0)\n"
      "    [triton] triton_poi_fused_add_mul_0(in_ptr0=t: f32[4], in_ptr1=t: f32[4], in_ptr2=t: f32[4], "
      "out_ptr0=t: f32[4], xnumel=4)\n"
      "    # pre-kernel hashes: {in_ptr0: (11,), in_ptr1: (12,), in_ptr2: (14,), out_ptr0: (0,)}\n"
      "    # post-kernel hashes: {in_ptr0: (11,), in_ptr1: (12,), in_ptr2: (14,), out_ptr0: (99,)}\n";
  std::vector<RankLogs> e(1), c(1);
  e[0].logs.push_back(model::ops::parse_debugmode_text(eager, "eager.txt", 0, 1));
  c[0].logs.push_back(model::ops::parse_debugmode_text(compiled, "compiled.txt", 0, 1));
  const ops::HashChoice choice = ops::choose_hashes(e[0].logs[0], c[0].logs[0]);
  const auto v = ops::judge_op_logs(e, c, choice);
  ASSERT_EQ(v.size(), 1u);
  const auto& sv = v[0].steps.at(0);
  EXPECT_TRUE(sv.alignment.eager[0].never_written);  // add: kept in the kernel
  EXPECT_EQ(sv.alignment.eager[0].status, ops::ValueStatus::Unobserved);
  ASSERT_TRUE(sv.first.has_value());
  EXPECT_EQ(sv.first->record, 1u);  // mul, whose value the kernel wrote
  EXPECT_EQ(sv.first->cause, ops::OpCause::Origin);
  EXPECT_EQ(sv.first->other_origin_total, 0u);
  // Its input from add is no evidence either way: never taken as differing.
  EXPECT_EQ(sv.first->inputs.at(0).state, ops::InputState::Unknown);

  Compared r;
  FusedKernelNamer namer(r.report, e, c, nullptr);
  r.code = ops::compare_op_logs(e, c, {}, namer);
  EXPECT_EQ(r.code, 1);
  const Finding* f = r.divergence(0, 1);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->where.node, "aten::mul.Tensor");
  EXPECT_EQ(f->values["fused_kernel"]["launch"]["op"], "triton_poi_fused_add_mul_0");
}

// ---- the drift table ----------------------------------------------------------------------------

/// Eager mul against a fused add+mul kernel, hashed with DebugMode's "norm" (L1 norms as floats).
Compared fused_with_norms(const std::string& eager_norm, const std::string& compiled_norm) {
  const std::string eager =
      "    # File: /w/m.py:5 in f, code: y = (a + b) * c\n"
      "    aten::add.Tensor(t$0: f32[4], t$1: f32[4])  ->  t$2: f32[4]  # {'input_hash': (((1.5,), (2.5,)), "
      "{}), 'hash': (3.5,)}\n"
      "    aten::mul.Tensor(t$2: f32[4], t$3: f32[4])  ->  t$4: f32[4]  # {'input_hash': (((3.5,), (4.5,)), "
      "{}), 'hash': (" +
      eager_norm + ",)}\n";
  const std::string compiled =
      "    # File: /tmp/c.py:10 in call, code: triton_poi_fused_add_mul_0.run(arg0_1, arg1_1, arg2_1, buf0, "
      "4, stream=stream0)\n"
      "    [triton] triton_poi_fused_add_mul_0(in_ptr0=t: f32[4], in_ptr1=t: f32[4], in_ptr2=t: f32[4], "
      "out_ptr0=t: f32[4], xnumel=4)\n"
      "    # pre-kernel hashes: {in_ptr0: (1.5,), in_ptr1: (2.5,), in_ptr2: (4.5,), out_ptr0: (0.0,)}\n"
      "    # post-kernel hashes: {in_ptr0: (1.5,), in_ptr1: (2.5,), in_ptr2: (4.5,), out_ptr0: (" +
      compiled_norm + ",)}\n";
  std::vector<RankLogs> e(1), c(1);
  e[0].logs.push_back(model::ops::parse_debugmode_text(eager, "eager.txt", 0, 1));
  c[0].logs.push_back(model::ops::parse_debugmode_text(compiled, "compiled.txt", 0, 1));
  Compared r;
  FusedKernelNamer namer(r.report, e, c, nullptr);
  r.code = ops::compare_op_logs(e, c, {}, namer);
  return r;
}

TEST(DriftTable, NormsGiveTheRelativeDifferenceAndUlpOfTheNorms) {
  const Compared r = fused_with_norms("15.75", "15.5");
  EXPECT_EQ(r.code, 1);
  const Finding* f = r.divergence(0, 1);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->values["drift"].size(), 1u);
  const json& row = f->values["drift"][0];
  EXPECT_EQ(row["evidence"], "norm");
  EXPECT_EQ(row["compiled"], "out_ptr0");
  EXPECT_DOUBLE_EQ(row["norm_rel"].get<double>(), 0.25 / 15.75);
  // 15.5 and 15.75 share an exponent (8 <= x < 16): 0.25 apart is 0.25 / 2^-49 ULP.
  EXPECT_EQ(row["norm_ulp_f64"].get<std::uint64_t>(), std::uint64_t{1} << 47);
  EXPECT_NE(f->message.find("drift of the L1 norms"), std::string::npos) << f->message;
  // Norms one ULP apart are a drift of one ULP.
  const Compared near = fused_with_norms("1.0", "1.0000000000000002");
  const Finding* g = near.divergence(0, 1);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->values["drift"][0]["norm_ulp_f64"].get<std::uint64_t>(), 1u);
}

TEST(DriftTable, HashTensorLogsHoldNoNumbersAndTheTableSaysSo) {
  // debugmode_inductor is hashed with hash_tensor: no drift is invented.
  const Compared r = compare_runs(kRuns + "eager", kRuns + "inductor");
  std::size_t rows = 0;
  for (const auto& f : r.report.findings) {
    if (!f.values.contains("drift")) continue;
    for (const auto& row : f.values["drift"]) {
      ++rows;
      EXPECT_EQ(row["evidence"], "hashes only");
      EXPECT_FALSE(row.contains("norm_rel"));
    }
    EXPECT_NE(f.message.find("drift: not measurable"), std::string::npos) << f.message;
  }
  EXPECT_GT(rows, 0u);
}

}  // namespace
}  // namespace gparity::diff::kernels
