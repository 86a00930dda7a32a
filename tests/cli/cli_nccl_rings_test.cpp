// `gparity nccl-rings` through the real binary: rewriting the 4xH200 dump (--from), printing the
// rings, --json, and exit 2 with file and line on malformed dumps, a wrong --ranks or no dump.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/model/formats/nccl_graph.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;
namespace model = gparity::model;

const std::string kDump = std::string(GPARITY_SOURCE_DIR) + "/tests/data/nccl/graph-dump-4xh200-ring.xml";

TEST(CliNcclRings, RewritesADumpAndPrintsTheRings) {
  const TempDir dir;
  const auto out = (dir.path() / "rings.xml").string();
  const auto r = run_command(GPARITY_EXE, {"nccl-rings", "--ranks", "4", "--out", out, "--from", kDump});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("12 channels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("channel  1: 0 3 2 1   (was 0 1 2 3)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("channel  2: 0 1 2 3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 distinct rings"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NCCL_GRAPH_FILE="), std::string::npos) << r.out;
  // The file written is what the library reads back, with the odd channels reversed.
  const auto graphs = model::read_nccl_graph_file(out).graphs();
  EXPECT_EQ(graphs[0].channels[3].gpus, (std::vector<std::int64_t>{0, 3, 2, 1}));
  EXPECT_EQ(graphs[0].channels[4].gpus, (std::vector<std::int64_t>{0, 1, 2, 3}));
}

TEST(CliNcclRings, JsonAndRandomSeed) {
  const TempDir dir;
  const auto out = (dir.path() / "r.xml").string();
  const auto a = run_command(GPARITY_EXE, {"nccl-rings", "--ranks", "4", "--out", out, "--from", kDump,
                                           "--pattern", "random", "--seed", "3", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["pattern"], "random");
  EXPECT_EQ(j["rings"].size(), 12U);
  EXPECT_EQ(j["rings"][0][0], 0);
  const auto b = run_command(GPARITY_EXE, {"nccl-rings", "--ranks", "4", "--out", out, "--from", kDump,
                                           "--pattern", "random", "--seed", "3", "--json"});
  EXPECT_EQ(nlohmann::json::parse(b.out)["rings"], j["rings"]);
}

TEST(CliNcclRings, BadInputExitsTwoNamingFileAndLine) {
  const TempDir dir;
  const auto bad = (dir.path() / "bad.xml").string();
  {
    std::ofstream f(bad);
    f << "<graphs version=\"1\">\n  <graph id=\"0\" pattern=\"4\">\n    <channel>\n";
  }
  const auto out = (dir.path() / "o.xml").string();
  auto r = run_command(GPARITY_EXE, {"nccl-rings", "--ranks", "4", "--out", out, "--from", bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad + ":4: the file ends inside <channel> (opened at line 3): truncated?"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  r = run_command(GPARITY_EXE, {"nccl-rings", "--ranks", "8", "--out", out, "--from", kDump});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("4 GPUs but --ranks is 8"), std::string::npos) << r.err;

  r = run_command(GPARITY_EXE,
                  {"nccl-rings", "--ranks", "4", "--out", out, "--from", kDump, "--pattern", "zigzag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("reverse-odd, rotate, random"), std::string::npos) << r.err;

  r = run_command(GPARITY_EXE,
                  {"nccl-rings", "--ranks", "4", "--out", out, "--from", (dir.path() / "nope").string()});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(CliNcclRings, TwoRanksSayNoPatternCanMatter) {
  const TempDir dir;
  const std::string two =
      "<graphs version=\"1\">\n"
      "  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"2\" speedintra=\"40\" speedinter=\"40\" "
      "latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"1\">\n"
      "    <channel>\n      <gpu dev=\"0\"/>\n      <gpu dev=\"0x1\"/>\n    </channel>\n"
      "    <channel>\n      <gpu dev=\"0\"/>\n      <gpu dev=\"0x1\"/>\n    </channel>\n"
      "  </graph>\n</graphs>\n";
  const auto in = (dir.path() / "two.xml").string();
  {
    std::ofstream f(in);
    f << two;
  }
  const auto r = run_command(
      GPARITY_EXE, {"nccl-rings", "--ranks", "2", "--out", (dir.path() / "o.xml").string(), "--from", in});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 distinct ring\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no pattern can change the numbers"), std::string::npos) << r.out;
}

TEST(CliNcclRings, WithoutFromNeedsGparityRun) {
  // The minimal build has no gparity-run: a clear error, not a crash. (With LibTorch the dump is
  // made on GPUs, which this machine has none of: that fails clearly too.)
  const TempDir dir;
  const auto r =
      run_command(GPARITY_EXE, {"nccl-rings", "--ranks", "4", "--out", (dir.path() / "o.xml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--from"), std::string::npos) << r.err;
}

}  // namespace
