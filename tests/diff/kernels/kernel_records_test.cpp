// Kernel-level parity on gparity's own op records (tests/data/ops/record_kernels: gparity.record_ops
// on PyTorch 2.11, 2 x H200 over NCCL, the C++ backend with Inductor's launcher hooked, TORCH_TRACE
// provenance beside two of the runs; facts in its README.md): the same engine as for DebugMode's
// [triton] logs (kernel_compare_test.cpp), on records of kind "kernel" with the source hash and
// the launch config the recorder took from each launcher.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

#include "core/model/ops/kernel_launch.hpp"
#include "core/model/ops/op_records.hpp"
#include "diff/kernels/fused_kernels.hpp"
#include "tests/diff/kernels/compared_runs.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::diff::kernels {
namespace {

using json = nlohmann::json;
const std::string kRecords = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/record_kernels/";

std::size_t steps_compared(const Compared& r, int kernels) {
  std::size_t steps = 0;
  for (const auto& f : r.report.findings) {
    if (f.kind != "kernel_step_compared") continue;
    ++steps;
    EXPECT_EQ(f.values["kernels"], kernels) << f.message;
    EXPECT_EQ(f.values["unpaired_baseline"], 0) << f.message;
    EXPECT_EQ(f.values["unpaired_candidate"], 0) << f.message;
    EXPECT_GT(f.values["values_compared"].get<int>(), 200) << f.message;
  }
  return steps;
}

TEST(KernelRecords, ALaunchIsATritonRecordWithItsArgumentsSiteSourceHashAndConfig) {
  const auto log = model::ops::read_op_records(kRecords + "inductor/rank-1.jsonl", 1);
  EXPECT_TRUE(log.issues.empty()) << log.issues.front().problem;
  std::size_t kernels = 0;
  for (const auto& r : log.records) {
    if (!model::ops::is_kernel(r) || r.step != 1) continue;
    ++kernels;
    const auto* facts = log.recorded_kernel(r);
    ASSERT_NE(facts, nullptr);
    EXPECT_EQ(log.str(facts->source_hash).size(), 16u);
    EXPECT_NE(log.str(facts->config).find("num_warps="), std::string::npos);
    // The output-code line that launched it, as DebugMode's `# File:` line names it.
    EXPECT_GT(model::ops::launch_line(log, r), 0);
    EXPECT_TRUE(log.str(facts->handle).starts_with(log.op_name(r))) << log.str(facts->handle);
    for (std::uint32_t i = 0; i < r.arg_count; ++i) EXPECT_FALSE(log.str(log.arg(r, i).name).empty());
    for (std::uint32_t i = 0; i < r.out_count; ++i)
      EXPECT_NE(model::ops::kernel_arg_role(log.str(log.out(r, i).name)), model::ops::ArgRole::In);
  }
  EXPECT_EQ(kernels, 33u);  // DebugMode logged 33 [triton] launches a step of this program
}

TEST(KernelRecords, ARecordOfAnUnknownKindIsReportedAndPassedOverNeverReadAsAnOp) {
  const std::string text =
      R"({"type":"op","step":1,"index":0,"op":"aten::add.Tensor","phase":"forward","args":[],"outs":[]})"
      "\n"
      R"({"type":"op","step":1,"index":1,"op":"fused_thing","kind":"graph_replay","phase":"forward","args":[],"outs":[]})"
      "\n"
      R"J({"type":"op","step":1,"index":2,"op":"k_0","kind":"kernel","phase":"forward","args":[],"outs":[],"kernel":{"site":{"file":"/tmp/c.py","line":7,"code":"k_0.run(buf0, stream=stream0)","handle":"k_0:3"},"config":"XBLOCK=8"}})J"
      "\n";
  const auto log = model::ops::parse_op_records(text, "rank-0.jsonl", 0);
  ASSERT_EQ(log.records.size(), 2u);
  ASSERT_EQ(log.issues.size(), 1u);
  EXPECT_EQ(log.issues.front().line, 2);
  EXPECT_NE(log.issues.front().problem.find("unknown record kind \"graph_replay\""), std::string::npos);
  const auto& k = log.records[1];
  EXPECT_TRUE(model::ops::is_kernel(k));
  EXPECT_EQ(model::ops::launch_line(log, k), 7);
  EXPECT_EQ(log.str(log.recorded_kernel(k)->handle), "k_0:3");
  EXPECT_EQ(log.str(log.recorded_kernel(k)->config), "XBLOCK=8");
  EXPECT_EQ(log.recorded_kernel(k)->source_hash, 0u);
}

TEST(KernelRecords, TheDeterministicRepeatIsKernelLevelParity) {
  const Compared r = compare_runs(kRecords + "inductor", kRecords + "inductor_repeat");
  EXPECT_EQ(r.code, 0) << r.report.verdict.headline;
  EXPECT_EQ(r.report.verdict.data["level"], "kernels");
  EXPECT_EQ(steps_compared(r, 33), 4u);
  // The report says what it compared: gparity's records, not DebugMode logs with hashing ops.
  EXPECT_NE(r.report.header.mode.find("(gparity op records of compiled runs"), std::string::npos)
      << r.report.header.mode;
  for (const auto& n : r.report.header.notes) EXPECT_EQ(n.find("DebugMode"), std::string::npos) << n;
}

TEST(KernelRecords, TheTwoRecorderBackendsAgree) {
  // inductor_python: the same program recorded by the Python backend (TorchDispatchMode).
  const Compared r = compare_runs(kRecords + "inductor", kRecords + "inductor_python");
  EXPECT_EQ(r.code, 0) << r.report.verdict.headline;
  EXPECT_EQ(steps_compared(r, 33), 4u);
}

TEST(KernelRecords, ARankOnePassIsRankOneOriginAtTheGeluKernelAndReceivedOnRankZero) {
  const Compared r = compare_runs(kRecords + "inductor", kRecords + "inductor_pass1");
  EXPECT_EQ(r.code, 1);
  const Finding* r1 = r.divergence(1, 1);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->where.node, "triton_poi_fused_gelu_view_2");
  const json& v = r1->values;
  EXPECT_EQ(v["cause"], "origin, different code");
  EXPECT_NE(v["code"]["baseline_line"].get<std::string>().find("libdevice.erf("), std::string::npos);
  EXPECT_NE(v["code"]["candidate_line"].get<std::string>().find("libdevice.tanh("), std::string::npos);
  const json& p = v["provenance"];
  EXPECT_EQ(p["line"], 856);
  const auto post = p["post_grad_nodes"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(post.begin(), post.end(), "erf"), post.end());
  ASSERT_FALSE(p["frames"].empty());
  EXPECT_EQ(p["frames"].back()["line"], 51);  // F.gelu in gen_record_kernels.py
  EXPECT_NE(r1->message.find("gen_record_kernels.py:51"), std::string::npos) << r1->message;
  // What it read, written earlier in the step (the addmm before it), equal on both sides: shown
  // as that output's value, never as "-".
  const json& in = v["args"].at(0);
  EXPECT_EQ(in["name"], "in_ptr0");
  EXPECT_EQ(in["before_written_in_step"], true);
  EXPECT_NE(in["baseline_before"], "-");
  EXPECT_EQ(in["baseline_before"], in["candidate_before"]);

  const Finding* r0 = r.divergence(0, 1);
  ASSERT_NE(r0, nullptr);
  EXPECT_EQ(r0->where.node, "c10d::allreduce_");
  EXPECT_EQ(r0->values["cause"], "received");
  EXPECT_EQ(r0->values["from_ranks"], json({1}));
  EXPECT_EQ(r0->values["causality"]["origin"]["op"], "triton_poi_fused_gelu_view_2");
  EXPECT_EQ(r.divergence(0, 2)->values["cause"], "follows step");
}

TEST(KernelRecords, TheSameProgramRunTwiceWithoutDeterminismIsNeverParity) {
  const Compared r = compare_runs(kRecords + "inductor_nondet", kRecords + "inductor_nondet_repeat");
  EXPECT_EQ(r.code, 1);
  for (const int rank : {0, 1}) {
    const Finding* f = r.divergence(rank, 1);
    ASSERT_NE(f, nullptr);
    const json& v = f->values;
    // The same code read equal values (those the records tell: hashed before the launch, or
    // written by the step's earlier records) and wrote others. In this run the autotuner chose
    // another config in the repeat on both ranks (XBLOCK=1 against XBLOCK=32: from the records,
    // Inductor's trace logs no choice); with one config it would be non-deterministic.
    EXPECT_EQ(v["code"]["source_differs"], false) << f->message;
    for (const auto& a : v["args"]) {
      if (a["role"] != "out") {
        EXPECT_EQ(a["baseline_before"], a["candidate_before"]) << a;
      }
    }
    if (v["cause"] == "origin, same code, different config") {
      EXPECT_NE(v["code"]["baseline_config"], v["code"]["candidate_config"]);
    } else {
      EXPECT_EQ(v["cause"], "non-deterministic") << f->message;
      EXPECT_EQ(v["code"]["baseline_config"], v["code"]["candidate_config"]);
    }
    // A launch downstream of it whose input differs is carried, never another origin.
    for (const auto& o : v["other_origins"])
      EXPECT_EQ(o["op"].get<std::string>().find("gelu"), std::string::npos) << o;
  }
}

TEST(KernelRecords, EagerAgainstInductorNamesNoValueInductorNeverWroteAsOrigin) {
  const Compared r = compare_runs(kRecords + "eager", kRecords + "inductor");
  EXPECT_EQ(r.code, 1);
  const std::size_t never_written =
      never_written_ops_named_origin_none(kRecords + "eager", kRecords + "inductor");
  EXPECT_GT(never_written, 0u);
  for (const int rank : {0, 1}) {
    const Finding* f = r.divergence(rank, 1);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->values["eager"]["op"], "aten::native_layer_norm");
    EXPECT_EQ(f->values["fused_kernel"]["launch"]["op"], "triton_per_fused_embedding_native_layer_norm_0");
  }
}

/// A copy of a run whose rank-1 file stops `lines` lines in, inside its next line (a rank killed
/// mid-step, a log cut mid-write).
std::string cut_copy(const std::string& run, const std::filesystem::path& to, int lines) {
  std::filesystem::create_directories(to);
  for (const auto& e : std::filesystem::directory_iterator(run)) {
    if (!e.is_regular_file()) continue;
    std::string text = testing::slurp(e.path());
    if (e.path().filename() == "rank-1.jsonl") {
      std::size_t at = 0;
      for (int n = 0; n < lines; ++n) at = text.find('\n', at) + 1;
      text.resize(at + 40);
    }
    std::ofstream(to / e.path().filename(), std::ios::binary) << text;
  }
  return to.string();
}

TEST(KernelRecords, ARunCutMidStepIsIncompleteThereNeverADivergence) {
  testing::TempDir tmp;
  // The repeat's rank 1 stops 80 records into step 1: the baseline's launches past the last
  // pair were not recorded there, never "no counterpart".
  const Compared r =
      compare_runs(kRecords + "inductor", cut_copy(kRecords + "inductor_repeat", tmp.path() / "rep", 80));
  EXPECT_EQ(r.code, 1) << r.report.verdict.headline;
  EXPECT_EQ(r.divergence(1, 1), nullptr) << r.divergence(1, 1)->message;
  EXPECT_EQ(r.divergence(0, 1), nullptr);
  const Finding* cut = nullptr;
  for (const auto& f : r.report.findings)
    if (f.kind == "kernel_step_cut") cut = &f;
  ASSERT_NE(cut, nullptr);
  EXPECT_EQ(cut->severity, Severity::Incomplete);
  EXPECT_EQ(cut->where.rank, 1);
  EXPECT_EQ(cut->values["side"], "candidate");
  EXPECT_GT(cut->values["not_compared"].get<int>(), 0);
  EXPECT_NE(r.report.verdict.headline.find("incomplete"), std::string::npos) << r.report.verdict.headline;
  // Cut after the planted divergence: what was recorded before the cut is still judged.
  const Compared p =
      compare_runs(kRecords + "inductor", cut_copy(kRecords + "inductor_pass1", tmp.path() / "p1", 80));
  EXPECT_EQ(p.code, 1);
  ASSERT_NE(p.divergence(1, 1), nullptr);
  EXPECT_EQ(p.divergence(1, 1)->where.node, "triton_poi_fused_gelu_view_2");
}

/// A copy of a run whose rank-0 step-1 launch of `kernel` is edited by `edit` (its record).
std::string edited_copy(const std::string& run, const std::filesystem::path& to, const std::string& kernel,
                        const std::function<void(json&)>& edit) {
  std::filesystem::create_directories(to);
  for (const auto& e : std::filesystem::directory_iterator(run)) {
    if (!e.is_regular_file()) continue;
    std::string text = testing::slurp(e.path());
    if (e.path().filename() == "rank-0.jsonl") {
      std::string out;
      std::size_t at = 0;
      while (at < text.size()) {
        const auto nl = text.find('\n', at);
        json j = json::parse(text.substr(at, nl - at));
        if (j["step"] == 1 && j["op"] == kernel) edit(j);
        out += j.dump() + "\n";
        at = nl + 1;
      }
      text = out;
    }
    std::ofstream(to / e.path().filename(), std::ios::binary) << text;
  }
  return to.string();
}

TEST(KernelRecords, AnInOutArgumentRecordedAsOutIsNoInputOfTheLaunch) {
  // Inductor's persistent layer norm only stores to its in_out_ptr0 (a buffer allocated outside
  // the dispatcher, holding an autotuner's leftovers): the recorder reads the kernel's source and
  // records it with role "out". Here the candidate's launch wrote other values and its in_out_ptr0
  // held other bytes before: read by its name (in_out: read), those bytes are an input that
  // differs and the launch's cause is "input"; recorded as out they are no input, and the launch
  // is what differs (equal inputs, same code and config: non-deterministic).
  testing::TempDir tmp;
  const std::string k = "triton_per_fused_embedding_native_layer_norm_0";
  const auto arg = [](json& r, const char* name) -> json& {
    for (auto& t : r["args"])
      if (t["name"] == name) return t;
    throw std::runtime_error("no argument");
  };
  const auto other_run = [&](json& r) {
    arg(r, "in_out_ptr0")["shard"] = "00000000000000ff";
    r["outs"][1]["shard"] = "00000000000000ee";
  };
  const auto as_out = [&](json& r) { arg(r, "in_out_ptr0")["role"] = "out"; };
  // The copies keep no trace/: no provenance, so no kernel source to read.
  const std::string candidate = edited_copy(kRecords + "inductor_repeat", tmp.path() / "a", k, other_run);
  const Compared by_name =
      compare_runs(edited_copy(kRecords + "inductor", tmp.path() / "n", k, [](json&) {}), candidate);
  EXPECT_EQ(by_name.code, 1);
  ASSERT_NE(by_name.divergence(0, 1), nullptr);
  EXPECT_EQ(by_name.divergence(0, 1)->where.node, k);
  EXPECT_EQ(by_name.divergence(0, 1)->values["cause"], "input") << by_name.divergence(0, 1)->message;
  // With the baseline's provenance (its trace/): the kernel's source says it only stores to
  // in_out_ptr0, which is then no input either (the rule DebugMode logs, which carry no roles, get).
  const Compared by_source = compare_runs(kRecords + "inductor", candidate);
  ASSERT_NE(by_source.divergence(0, 1), nullptr);
  EXPECT_EQ(by_source.divergence(0, 1)->values["cause"], "non-deterministic")
      << by_source.divergence(0, 1)->message;
  const Compared recorded =
      compare_runs(edited_copy(kRecords + "inductor", tmp.path() / "b", k, as_out),
                   edited_copy(kRecords + "inductor_repeat", tmp.path() / "c", k, [&](json& r) {
                     other_run(r);
                     as_out(r);
                   }));
  EXPECT_EQ(recorded.code, 1);
  ASSERT_NE(recorded.divergence(0, 1), nullptr);
  EXPECT_EQ(recorded.divergence(0, 1)->where.node, k);
  EXPECT_EQ(recorded.divergence(0, 1)->values["cause"], "non-deterministic")
      << recorded.divergence(0, 1)->message;
  const auto log = model::ops::read_op_records((tmp.path() / "c" / "rank-0.jsonl").string(), 0);
  for (const auto& r : log.records) {
    if (r.step == 1 && log.op_name(r) == k) {
      EXPECT_EQ(model::ops::launch_arg_role(log, log.arg(r, 0)), model::ops::ArgRole::Out);
    }
  }
}

TEST(KernelRecords, RecordedWithBatchesOfHashesTheVerdictsAreTheSame) {
  // batches/: inductor, its repeat and the rank-1 pass recorded again with the hashes sent in
  // batches (GPARITY_OPREC_BATCH=1; records only, no trace): parity where the program is
  // deterministic, and the pass still found where it is, with nothing else named an origin.
  const std::string batches = kRecords + "batches/";
  const Compared same = compare_runs(batches + "inductor", batches + "inductor_repeat");
  EXPECT_EQ(same.code, 0) << same.report.verdict.headline;
  EXPECT_EQ(steps_compared(same, 33), 4u);
  EXPECT_EQ(same.report.verdict.data["decided_by"], "shard_v2");

  const Compared pass = compare_runs(batches + "inductor", batches + "inductor_pass1");
  EXPECT_EQ(pass.code, 1);
  const Finding* r1 = pass.divergence(1, 1);
  const Finding* r0 = pass.divergence(0, 1);
  ASSERT_NE(r1, nullptr);
  ASSERT_NE(r0, nullptr);
  EXPECT_EQ(r1->where.node, "triton_poi_fused_gelu_view_2");
  EXPECT_EQ(r1->values["cause"], "origin, different code") << r1->message;
  EXPECT_EQ(r0->where.node, "c10d::allreduce_");
  EXPECT_EQ(r0->values["cause"], "received");
  EXPECT_EQ(r0->values["from_ranks"], json({1}));
  const Finding* r1_next = pass.divergence(1, 2);
  ASSERT_NE(r1_next, nullptr);
  EXPECT_EQ(r1_next->values["cause"], "follows step");
}

TEST(KernelRecords, ReRecordedWithRolesAndSpecV2TheNondetRunsNameTheConfigAndTheNonDeterministicKernel) {
  // inductor_nondet_v2 / _repeat: the same program recorded again with the recorder of shard spec
  // v2 and source-read roles (2 ranks over Gloo on one H200). The persistent layer norms' in_out_ptr0
  // (only stored to, holding the autotuners' leftovers) is recorded as "out", never hashed before:
  // rank 0's first divergence is the kernel whose autotuner chose another config, rank 1's the
  // embedding backward's (same code and config, equal inputs), never "an input made before".
  const auto log = model::ops::read_op_records(kRecords + "inductor_nondet_v2/rank-0.jsonl", 0);
  EXPECT_TRUE(log.issues.empty()) << log.issues.front().problem;
  EXPECT_EQ(log.hash_spec.functions, (std::vector<std::string>{"shard_v2"}));
  std::size_t stored_only = 0;
  for (const auto& r : log.records) {
    if (!model::ops::is_kernel(r)) continue;
    for (std::uint32_t i = 0; i < r.arg_count; ++i) {
      const auto& t = log.arg(r, i);
      if (!log.str(t.name).starts_with("in_out_ptr") ||
          model::ops::launch_arg_role(log, t) != model::ops::ArgRole::Out)
        continue;
      ++stored_only;
      EXPECT_FALSE(t.hashed()) << log.op_name(r);
    }
  }
  EXPECT_GT(stored_only, 0u);
  const Compared r = compare_runs(kRecords + "inductor_nondet_v2", kRecords + "inductor_nondet_v2_repeat");
  EXPECT_EQ(r.code, 1);
  const Finding* r0 = r.divergence(0, 1);
  const Finding* r1 = r.divergence(1, 1);
  ASSERT_NE(r0, nullptr);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r0->values["cause"], "origin, same code, different config") << r0->message;
  EXPECT_TRUE(r0->where.node.starts_with("triton_per_fused_add_addmm_native_layer_norm")) << r0->where.node;
  EXPECT_EQ(r1->values["cause"], "non-deterministic") << r1->message;
  EXPECT_NE(r1->where.node.find("embedding_dense_backward"), std::string::npos) << r1->where.node;
  EXPECT_EQ(r.report.verdict.data["decided_by"], "shard_v2");
}

TEST(KernelRecords, AReduceOverheadStepRecordsItsCaptureUnhashedAndItsReplayAroundTheGraph) {
  const auto log = model::ops::read_op_records(kRecords + "inductor_ro/rank-0.jsonl", 0);
  EXPECT_TRUE(log.issues.empty()) << log.issues.front().problem;
  std::size_t captured_kernels = 0, step2_kernels = 0, step2_hashed = 0, captured = 0;
  for (const auto& r : log.records) {
    if (model::ops::is_kernel(r)) (r.step == 1 ? captured_kernels : step2_kernels) += 1;
    for (std::uint32_t i = 0; i < r.arg_count + r.out_count; ++i) {
      const auto& t = log.tensors[r.first_arg + i];
      // Step 1 captured the CUDA graphs: what was launched then had no value yet, and no hash.
      if (t.unhashed == model::ops::Unhashed::Captured) {
        EXPECT_EQ(r.step, 1);
        EXPECT_FALSE(t.hashed());
        ++captured;
      }
      if (r.step == 2 && t.hashed()) ++step2_hashed;
    }
  }
  EXPECT_EQ(captured_kernels, 33u);
  EXPECT_GT(captured, 100u);
  EXPECT_EQ(step2_kernels, 0u);  // replayed: one graph launch, no kernel of its own is seen
  // The ops around the graph are (the copies into its static inputs, the gradient all-reduce and
  // the optimizer reading what the graph wrote): 126 values on rank 0.
  EXPECT_GT(step2_hashed, 100u);
  const Compared self = compare_runs(kRecords + "inductor_ro", kRecords + "inductor_ro");
  EXPECT_EQ(self.code, 0) << self.report.verdict.headline;
}

}  // namespace
}  // namespace gparity::diff::kernels
