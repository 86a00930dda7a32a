// `gparity graph ranks|diff|devices` through the real binary: exit codes (0 identical, 1 any
// difference, 2 bad input), the sample facts in text and JSON, the HTML page, remaps.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;

const std::string kDiffGraphs = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/";

const std::string kDiffFx = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 64][64, 1]cuda:0"):
        mm: "f32[8, 8][8, 1]cuda:0" = torch.ops.aten.mm.default(x, x)
        full: "f32[8, 8][8, 1]cuda:0" = torch.ops.aten.full.default([8, 8], 2, device = device(type='cuda', index=0))
        add: "f32[8, 8][8, 1]cuda:0" = torch.ops.aten.add.Tensor(mm, full)
        return (add,)
)";

TEST(CliGraphRanks, RankbugIsRankParametricWithTheSliceFunctions) {
  const auto r = run_command(GPARITY_EXE, {"graph", "ranks", kDiffGraphs + "compile_rankbug"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("verdict: rank-parametric"), std::string::npos);
  EXPECT_NE(r.out.find("= 32*rank+32"), std::string::npos);
  EXPECT_EQ(r.out.find("divergent "), std::string::npos);
}

TEST(CliGraphRanks, CompileJsonIsDeviceParametric) {
  const auto r = run_command(GPARITY_EXE, {"graph", "ranks", "--json", kDiffGraphs + "compile"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "device-parametric");
  EXPECT_EQ(j["ranks"], nlohmann::json::array({0, 1}));
  for (const auto& g : j["graphs"]) {
    for (const auto& f : g["findings"]) {
      EXPECT_EQ(f["class"], "device-parametric");
      EXPECT_EQ(f["target"], "aten.full.default");
    }
  }
}

TEST(CliGraphRanks, MissingDirectoryIsBadInput) {
  const auto r = run_command(GPARITY_EXE, {"graph", "ranks", kDiffGraphs + "no_such_dir"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(CliGraphDiff, IdenticalChangedAndHtml) {
  TempDir dir;
  const auto a = dir.write("a.py", kDiffFx);
  std::string changed = kDiffFx;
  changed.replace(changed.find("[8, 8], 2"), 9, "[8, 8], 3");
  const auto b = dir.write("b.py", changed);
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph", "diff", a, a}).exit_code, 0);
  const auto html = (dir.path() / "d.html").string();
  const auto r = run_command(GPARITY_EXE, {"graph", "diff", "--json", "--html", html, a, b});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["summary"]["changed"], 1);
  EXPECT_EQ(j["changes"][0]["fields"][0]["field"], "args[1]");
  EXPECT_EQ(j["changes"][0]["fields"][0]["b"], "3");
  std::ifstream f(html);
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_NE(s.str().find("<!DOCTYPE html>"), std::string::npos);
  EXPECT_NE(s.str().find("href='#a2'"), std::string::npos);  // the finding links to node 2 (full)
  EXPECT_NE(s.str().find("class='chg'"), std::string::npos);
}

TEST(CliGraphDiff, RankbugForwardRanksDifferInSliceBounds) {
  const auto r = run_command(
      GPARITY_EXE, {"graph", "diff", "--json", "--rank", "0", "--rank", "1", "--graph", "aot_forward_graph",
                    kDiffGraphs + "compile_rankbug", kDiffGraphs + "compile_rankbug"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["summary"]["changed"], 2);  // slice_1 and slice_scatter
  EXPECT_EQ(j["summary"]["added"], 0);
  EXPECT_EQ(j["summary"]["removed"], 0);
}

TEST(CliGraphDevices, LiteralsAndRemaps) {
  TempDir dir;
  const auto a = dir.write("a.py", kDiffFx);
  const auto r =
      run_command(GPARITY_EXE, {"graph", "devices", "--json", "--rank", "0", "--target-rank", "5", a});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["literals"], 1);
  EXPECT_EQ(j["findings"][0]["node"], "full");
  EXPECT_EQ(j["findings"][0]["field"], "kwargs.device");
  // The literal plus the four annotations (x, mm, full, add) move from cuda:0 to cuda:5.
  EXPECT_EQ(j["remaps"].size(), 5U);
  EXPECT_EQ(j["remaps"][0]["to"], 5);
  EXPECT_EQ(
      run_command(GPARITY_EXE, {"graph", "devices", dir.write("bad.py", "class X:\n  oops(\n")}).exit_code,
      2);
}

}  // namespace
