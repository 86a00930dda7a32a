// `gparity collectives` through the real binary: the eager / compile Flight Recorder comparison,
// a planted reordering shown as a permutation, the compile_tp graphs, the reporters (--json,
// --junit, --markdown) and exit codes (0 same, 1 different, 2 bad input).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/file_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;

const std::string kCollectiveGraphs = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/";

using gparity::testing::slurp;

TEST(CliCollectives, CompileMatchesEagerWithJunitAndMarkdown) {
  TempDir dir;
  const auto junit = (dir.path() / "c.xml").string();
  const auto md = (dir.path() / "c.md").string();
  const auto r =
      run_command(GPARITY_EXE, {"collectives", kCollectiveGraphs + "compile/rank0_flight_recorder.json",
                                kCollectiveGraphs + "compile/rank1_flight_recorder.json", "--baseline",
                                kCollectiveGraphs + "eager/rank0_flight_recorder.json", "--baseline",
                                kCollectiveGraphs + "eager/rank1_flight_recorder.json", "--junit", junit,
                                "--markdown", md});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("every rank agrees and matches the baseline"), std::string::npos) << r.out;
  const auto xml = slurp(junit);
  EXPECT_NE(xml.find("baseline: pg 0 (default_pg)"), std::string::npos) << xml;
  EXPECT_EQ(xml.find("<failure"), std::string::npos);
  EXPECT_NE(slurp(md).find("gparity collectives"), std::string::npos);
}

TEST(CliCollectives, PlantedReorderingIsAPermutationInJson) {
  TempDir dir;
  auto dump = nlohmann::json::parse(slurp(kCollectiveGraphs + "eager/rank0_flight_recorder.json"));
  for (auto& e : dump["entries"]) {
    if (e["collective_seq_id"] == 7) {
      e["collective_seq_id"] = 8;
    } else if (e["collective_seq_id"] == 8) {
      e["collective_seq_id"] = 7;
    }
  }
  const auto cand = dir.write("run/rank0_flight_recorder.json", dump.dump());
  const auto r =
      run_command(GPARITY_EXE, {"collectives", "--json", (dir.path() / "run").string(), "--baseline",
                                kCollectiveGraphs + "eager/rank0_flight_recorder.json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  int reordered = 0;
  for (const auto& f : j["findings"]) {
    EXPECT_NE(f["kind"], "collective_added");
    EXPECT_NE(f["kind"], "collective_removed");
    if (f["kind"] == "collective_reordered") {
      ++reordered;
      EXPECT_EQ(f["values"]["permutation"], "2 1");
      EXPECT_EQ(f["values"]["baseline_positions"], nlohmann::json::array({7, 8}));
    }
  }
  EXPECT_EQ(reordered, 1);
  // The text form says it too.
  const auto t = run_command(GPARITY_EXE, {"collectives", cand, "--baseline",
                                           kCollectiveGraphs + "eager/rank0_flight_recorder.json"});
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_NE(t.out.find("come in the order (2 1)"), std::string::npos) << t.out;
}

TEST(CliCollectives, CompileTpGraphsAgreeAcrossRanks) {
  const auto r = run_command(GPARITY_EXE, {"collectives", "--json", kCollectiveGraphs + "compile_tp"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["result"]["streams"].get<int>(), 0) << r.out.substr(0, 2000);
  EXPECT_EQ(j["result"]["ranks"], 2);
}

TEST(CliCollectives, RunFoldersCompileAgainstEager) {
  // compile's folder also holds its TORCH_TRACE; eager has no graphs, so only the dumps compare.
  const auto r = run_command(GPARITY_EXE, {"collectives", "--json", kCollectiveGraphs + "compile",
                                           "--baseline", kCollectiveGraphs + "eager"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out.substr(0, 3000);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"]["reorderings"], 0);
  EXPECT_EQ(j["result"]["changed"], 0);
  EXPECT_EQ(j["result"]["ranks"], 2);
}

// ---- across process groups on the real NCCL dumps of tests/data/collectives/fr_device -----------

const std::string kFrDevice = std::string(GPARITY_SOURCE_DIR) + "/tests/data/collectives/fr_device/";

TEST(CliCollectives, RealHangsAreDeadlocksWithCauseAndFixInJson) {
  const auto healthy = run_command(GPARITY_EXE, {"collectives", kFrDevice + "healthy_4r"});
  EXPECT_EQ(healthy.exit_code, 0) << healthy.out << healthy.err;
  EXPECT_EQ(healthy.out.find("no rank in the file name"), std::string::npos) << healthy.out;

  const auto inv = run_command(GPARITY_EXE, {"collectives", "--json", kFrDevice + "inversion_2r"});
  EXPECT_EQ(inv.exit_code, 1) << inv.err;
  const auto j = nlohmann::json::parse(inv.out);
  EXPECT_EQ(j["headline"].get<std::string>().rfind("collectives deadlock", 0), 0U) << j["headline"];
  ASSERT_EQ(j["result"]["deadlocks"].size(), 1U);
  EXPECT_EQ(j["result"]["deadlocks"][0]["cause"], "order_inversion");
  EXPECT_EQ(j["result"]["deadlocks"][0]["cycle"][0]["from"], 0);
  EXPECT_EQ(j["result"]["deadlocks"][0]["cycle"][0]["to"], 1);
  EXPECT_FALSE(j["result"]["inversions"].empty());
  EXPECT_EQ(j["result"]["inversions"][0]["first"][0]["stream"], "pg 0 (default_pg)");

  const auto skip = run_command(GPARITY_EXE, {"collectives", kFrDevice + "skip_4r"});
  EXPECT_EQ(skip.exit_code, 1);
  EXPECT_NE(skip.out.find("Cause: a skipped collective: rank 3 never issued"), std::string::npos) << skip.out;
  EXPECT_NE(skip.out.find("Fix: make rank 3 issue"), std::string::npos) << skip.out;

  // --no-schedules: the per-group checks only (what the bench measures against).
  const auto plain =
      run_command(GPARITY_EXE, {"collectives", "--json", "--no-schedules", kFrDevice + "inversion_2r"});
  const auto p = nlohmann::json::parse(plain.out);
  EXPECT_FALSE(p["result"].contains("deadlocks"));
  EXPECT_EQ(plain.out.find("collective_order_inversion"), std::string::npos);
}

// A compiled run folder (dumps beside trace/) against the eager run's dumps
// (tests/data/collectives/trace_device): the pass's move named with its graph node in --json.
TEST(CliCollectives, CompiledRunFolderNamesTheMovedCollectivesNode) {
  const std::string d = std::string(GPARITY_SOURCE_DIR) + "/tests/data/collectives/trace_device/";
  const auto same = run_command(GPARITY_EXE, {"collectives", d + "compiled", "--baseline", d + "eager"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  const auto moved =
      run_command(GPARITY_EXE, {"collectives", "--json", d + "moved", "--baseline", d + "eager"});
  EXPECT_EQ(moved.exit_code, 1) << moved.err;
  const auto j = nlohmann::json::parse(moved.out);
  EXPECT_EQ(j["result"]["moved"], 2);
  ASSERT_EQ(j["result"]["moved_across_groups"].size(), 2U);
  const auto& first = j["result"]["moved_across_groups"][0]["candidate"][0];
  EXPECT_EQ(first["node"], "tensor_1");
  EXPECT_EQ(first["stream"], "pg 2 (dp)");
}

TEST(CliCollectives, BadInputExitsTwo) {
  TempDir dir;
  const auto bad = dir.write("rank0_flight_recorder.json", "{\"entries\": [");
  EXPECT_EQ(run_command(GPARITY_EXE, {"collectives", bad}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"collectives", (dir.path() / "missing").string()}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"collectives"}).exit_code, 2);
}

}  // namespace
