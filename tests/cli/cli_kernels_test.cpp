// Kernel-level comparison of compiled runs and `gparity ops show --kernels`, through the real
// binary, on the DebugMode logs of Inductor-compiled training in tests/data/ops/debugmode_inductor
// (PyTorch 2.11, 2 x H100 over NCCL, with TORCH_TRACE provenance beside the logs; facts in its
// README.md): exit codes, text, --json, and a trace that cannot be read.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;
namespace fs = std::filesystem;

const std::string kRuns = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode_inductor/";

TEST(CliKernels, TheRepeatIsKernelLevelParity) {
  const auto r = run_command(GPARITY_EXE, {"compare", kRuns + "inductor", kRuns + "inductor_repeat"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("kernel-level parity on 2 rank(s), 4 rank-step(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("candidate: no TORCH_TRACE provenance"), std::string::npos) << r.out;
}

TEST(CliKernels, ThePassOnRankOneIsNamedWithItsKernelNodesAndLine) {
  const auto r =
      run_command(GPARITY_EXE, {"compare", "--json", kRuns + "inductor", kRuns + "inductor_pass1"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& ranks = j["result"]["ranks"];
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[1]["first_divergence"]["op"], "triton_poi_fused_gelu_view_2");
  EXPECT_EQ(ranks[1]["first_divergence"]["cause"], "origin, different code");
  EXPECT_EQ(ranks[1]["first_divergence"]["provenance"]["line"], 856);
  EXPECT_EQ(ranks[0]["first_divergence"]["cause"], "received");
  EXPECT_EQ(ranks[0]["first_divergence"]["from_ranks"], nlohmann::json({1}));
  EXPECT_EQ(ranks[0]["first_divergence"]["origin"]["op"], "triton_poi_fused_gelu_view_2");
  // Text: the verdict leads with the origin, its kernel, its nodes and user line.
  const auto t = run_command(GPARITY_EXE, {"compare", kRuns + "inductor", kRuns + "inductor_pass1"});
  EXPECT_NE(t.out.find("first at rank 1 step 1, triton_poi_fused_gelu_view_2 (output code line 856, "
                       "gen_inductor.py:36), origin, different code"),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("pre-grad nodes gelu, linear_2"), std::string::npos) << t.out;
}

TEST(CliKernels, NonDeterminismIsNeverParity) {
  const auto r =
      run_command(GPARITY_EXE, {"compare", kRuns + "inductor_nondet", kRuns + "inductor_nondet_repeat"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("non-deterministic"), std::string::npos) << r.out;
}

TEST(CliKernels, ATraceThatCannotBeReadIsAWarningNotTheEnd) {
  TempDir dir;
  const fs::path run = dir.path() / "inductor";
  fs::create_directories(run / "trace");
  for (const auto& e : fs::directory_iterator(kRuns + "inductor"))
    if (e.is_regular_file()) fs::copy_file(e.path(), run / e.path().filename());
  std::ofstream(run / "trace" / "notes.txt") << "not a TORCH_TRACE log\n";
  const auto r = run_command(GPARITY_EXE, {"compare", run.string(), kRuns + "inductor_repeat"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // the warning does not fail the comparison
  EXPECT_NE(r.out.find("kernel-level parity"), std::string::npos) << r.out;
}

TEST(CliKernels, OpsShowListsKernelsWithRolesValuesAndProvenance) {
  const auto r =
      run_command(GPARITY_EXE, {"ops", "show", "--kernels", kRuns + "inductor/rank1_step1.debug.txt"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("33 kernel launches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("triton_poi_fused_gelu_view_2  (output code line 856)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in_out  in_out_ptr0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pre-grad nodes gelu, linear_2"), std::string::npos) << r.out;
  const auto j = run_command(
      GPARITY_EXE, {"ops", "show", "--kernels", "--json", kRuns + "inductor/rank1_step1.debug.txt"});
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["kernels"].size(), 33u);
  std::size_t with_nodes = 0;
  for (const auto& k : doc["kernels"]) {
    with_nodes += !k["provenance"].is_null() ? 1 : 0;
    for (const auto& a : k["args"]) {
      // An out_ptr's value before the launch is a stale buffer: never shown as read.
      if (a["role"] == "out") {
        EXPECT_FALSE(a.contains("before")) << a;
      }
    }
  }
  EXPECT_EQ(with_nodes, 33u);  // the backward's launches too, which have no `# File:` line of their own
}

// The gate can require kernel-level parity: "ops": {..., "kernels": true}.
TEST(CliKernels, GateRequiresKernelLevelParity) {
  TempDir tmp;
  const auto gate = [&](const std::string& base, const std::string& cand, const nlohmann::json& kernels) {
    nlohmann::json p = {{"baseline", kRuns + base}, {"candidate", kRuns + base}};
    p["ops"] = {{"baseline", kRuns + base}, {"candidate", kRuns + cand}, {"kernels", kernels}};
    const auto path = tmp.write("policy.json", p.dump());
    return run_command(GPARITY_EXE, {"gate", "--policy", path, "--out", (tmp.path() / "out").string()});
  };
  auto r = gate("inductor", "inductor_repeat", true);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = gate("inductor", "inductor_pass1", true);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  r = gate("inductor_nondet", "inductor_nondet_repeat", true);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // non-deterministic is never parity
  // No kernel evidence on a side while kernels are required: exit 2, naming the run.
  r = gate("eager", "inductor", true);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("shows no kernel launches"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("eager"), std::string::npos) << r.err;
  r = gate("eager", "inductor", "yes");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("\"kernels\" must be true or false"), std::string::npos) << r.err;
}

}  // namespace
