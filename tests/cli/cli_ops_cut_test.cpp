// Issue 36, through the real binary: `gparity compare` on runs whose rank-1 file was cut inside a
// step (a copy of the torch 2.11 DebugMode sample, tests/data/ops/debugmode/compile) or inside a
// graph (a copy of the replay run tests/data/replay/fsdp2_coor_joint), as a rank killed mid-step
// leaves it: exit 1 as INCOMPLETE, naming the rank, the step or graph and where the records stop,
// and never a divergence or an origin past the cut (nor parity).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/file_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {
namespace ops_cut {

namespace fs = std::filesystem;
using gparity::testing::run_command;
using gparity::testing::slurp;
using gparity::testing::TempDir;

const fs::path kSource = fs::path(GPARITY_SOURCE_DIR);

/// `file` keeps its first `lines` lines.
void keep_lines(const fs::path& file, std::size_t lines) {
  const std::string text = slurp(file.string());
  std::size_t at = 0;
  for (std::size_t i = 0; i < lines; ++i) at = text.find('\n', at) + 1;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text.substr(0, at);
}

TEST(CliOpsCut, ADebugModeRankCutMidStepIsIncompleteNotAnOrigin) {
  TempDir dir;
  const fs::path run = dir.path() / "compile";
  fs::copy(kSource / "tests/data/ops/debugmode/compile", run, fs::copy_options::recursive);
  keep_lines(run / "rank1_step1.debug.txt", 64);
  fs::remove(run / "rank1_step2.debug.txt");
  const auto eager = (kSource / "tests/data/ops/debugmode/eager").string();
  const auto r = run_command(GPARITY_EXE, {"compare", eager, run.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("divergence ["), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("origin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1: the compiled records of step 1 stop at rank1_step1.debug.txt:"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("incomplete: op-level evidence is missing"), std::string::npos) << r.out;
  const auto j = run_command(GPARITY_EXE, {"compare", "--json", eager, run.string()});
  ASSERT_EQ(j.exit_code, 1);
  int cuts = 0;
  const auto doc = nlohmann::json::parse(j.out);
  for (const auto& f : doc["findings"]) {
    EXPECT_NE(f["kind"], "op_divergence") << f.dump();
    if (f["kind"] != "op_step_cut") continue;
    ++cuts;
    EXPECT_EQ(f["severity"], "incomplete");
    EXPECT_EQ(f["where"]["rank"], 1);
    EXPECT_EQ(f["where"]["step"], 1);
    EXPECT_EQ(f["values"]["side"], "compiled");
  }
  EXPECT_EQ(cuts, 1);
}

TEST(CliOpsCut, AReplayRankCutInItsLastGraphIsIncompleteNotParity) {
  // Before issue 36: "PARITY: bitwise identical", exit 0.
  TempDir dir;
  const fs::path run = dir.path() / "cut";
  const fs::path whole = kSource / "tests/data/replay/fsdp2_coor_joint";
  fs::copy(whole, run, fs::copy_options::recursive);
  keep_lines(run / "rank-1.jsonl", 300);
  const auto r = run_command(GPARITY_EXE, {"compare", whole.string(), run.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("PARITY"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("divergence ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("graph coor: the candidate's records stop at node"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("INCOMPLETE"), std::string::npos) << r.out;
}

}  // namespace ops_cut
}  // namespace
