// `gparity graph list|show|export` through the real binary.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;

const std::string kGraphData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph";

TEST(CliGraph, ListJsonNamesRanksCompileIdsAndGraphs) {
  const auto r = run_command(GPARITY_EXE, {"graph", "list", "--json", kGraphData + "/compile_rankbug"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["format"], "torch_trace");
  EXPECT_EQ(out["md5_mismatches"], 0);
  ASSERT_EQ(out["ranks"].size(), 2U);
  EXPECT_EQ(out["ranks"][1]["rank"], 1);
  EXPECT_EQ(out["ranks"][1]["compile_ids"], nlohmann::json::array({"0/0"}));
  ASSERT_EQ(out["graphs"].size(), 20U);
  // Dynamo's graph is the same text before and after the (empty) pre-grad passes.
  EXPECT_EQ(out["graphs"][0]["kind"], "dynamo_output_graph");
  EXPECT_EQ(out["graphs"][0]["fingerprint"], out["graphs"][1]["fingerprint"]);
  // The rank-dependent slice makes the ranks' forward graphs differ.
  EXPECT_EQ(out["graphs"][4]["kind"], "aot_forward_graph");
  EXPECT_EQ(out["graphs"][4]["nodes"], 60);
  EXPECT_NE(out["graphs"][4]["fingerprint"], out["graphs"][14]["fingerprint"]);
}

TEST(CliGraph, ShowTableAndJson) {
  const auto r = run_command(GPARITY_EXE, {"graph", "show", kGraphData + "/compile_tp", "--rank", "1",
                                           "--compile-id", "0/0", "--graph", "aot_forward_graph"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("_c10d_functional.all_reduce.default"), std::string::npos);
  EXPECT_NE(r.out.find("cuda:1"), std::string::npos);
  EXPECT_NE(r.out.find("/workspace/train_tiny.py:"), std::string::npos);
  const auto j = run_command(GPARITY_EXE, {"graph", "show", "--json", kGraphData + "/compile_tp", "--rank",
                                           "0", "--graph", "aot_forward_graph"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto g = nlohmann::json::parse(j.out);
  EXPECT_EQ(g["format"], "gparity.graph");
  EXPECT_EQ(g["nodes"].size(), 58U);
}

TEST(CliGraph, AmbiguousOrEmptySelectionExitsTwo) {
  const auto r = run_command(GPARITY_EXE, {"graph", "show", kGraphData + "/compile", "--rank", "0", "--graph",
                                           "inductor_post_grad_graph"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--index 1"), std::string::npos) << r.err;
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph", "show", kGraphData + "/compile", "--graph", "nope"}).exit_code,
            2);
  EXPECT_EQ(
      run_command(GPARITY_EXE, {"graph", "show", kGraphData + "/compile", "--compile-id", "x"}).exit_code, 2);
}

TEST(CliGraph, ExportJsonRoundTripsThroughTheCli) {
  gparity::testing::TempDir tmp;
  const auto out = (tmp.path() / "joint.json").string();
  const auto e = run_command(GPARITY_EXE, {"graph", "export", kGraphData + "/compile", "--rank", "1",
                                           "--graph", "aot_joint_graph", "--format", "json", "-o", out});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  // Reading the export back gives the same graph: same fingerprint, same JSON.
  const auto a = run_command(GPARITY_EXE, {"graph", "list", "--json", kGraphData + "/compile"});
  const auto b = run_command(GPARITY_EXE, {"graph", "list", "--json", out});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto la = nlohmann::json::parse(a.out), lb = nlohmann::json::parse(b.out);
  EXPECT_EQ(lb["format"], "gparity_json");
  EXPECT_EQ(lb["graphs"][0]["fingerprint"], la["graphs"][13]["fingerprint"]);
  EXPECT_EQ(lb["graphs"][0]["nodes"], 142);
  const auto again = run_command(GPARITY_EXE, {"graph", "export", out});
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(again.out, ss.str());
}

TEST(CliGraph, ExportDot) {
  const auto r = run_command(
      GPARITY_EXE, {"graph", "export", kGraphData + "/eager/tiny_export_graph.txt", "--format", "dot"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("digraph \"GraphModule\" {"));
  EXPECT_NE(r.out.find("aten.embedding.default"), std::string::npos);
  EXPECT_NE(r.out.find(" -> "), std::string::npos);
}

TEST(CliGraph, MalformedInputsExitTwoWithFileAndLine) {
  gparity::testing::TempDir tmp;
  const auto fx =
      tmp.write("bad.txt", "class G(torch.nn.Module):\n    def forward(self, x):\n        a = f(x\n");
  const auto r = run_command(GPARITY_EXE, {"graph", "list", fx});
  EXPECT_EQ(r.exit_code, 1);  // damage inside a readable input: listed as far as it goes, exit 1
  EXPECT_NE(r.out.find("1 opaque"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("bad.txt:3: unbalanced brackets"), std::string::npos) << r.err;
  // A damaged trace lists what it could read and exits 1 (2 is for input that cannot be read).
  const auto log =
      tmp.write("dedicated_log_torch_trace_rank_0_x.log",
                "V1121 04:50:33.123000 9 a.py:1] {\"str\": [\"/a.py\", 0]}\n\torphan?\nV1121 oops {\n");
  const auto t = run_command(GPARITY_EXE, {"graph", "list", log});
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_NE(t.err.find("x.log:3: not a TORCH_TRACE envelope"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("do not match their has_payload"), std::string::npos) << t.err;
  const auto junk = tmp.write("junk.pt2", "PK\x03\x04 not a zip");
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph", "list", junk}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph", "list", "/nonexistent"}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph"}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"graph", "list", "--help"}).exit_code, 0);
}

TEST(CliGraph, ListNamesUnparsableGraphPayloadsAndExitsOne) {
  gparity::testing::TempDir tmp;
  // A TORCH_TRACE log named *.txt (recognised by content) whose graph payload holds no module.
  const auto log = tmp.write("trace.txt",
                             "V0403 07:28:48.061000 1 a.py:1] {\"aot_forward_graph\": {}, \"frame_id\": 2, "
                             "\"frame_compile_id\": 1, \"has_payload\": \"x\"}\n\tnot a graph\n");
  const auto r = run_command(GPARITY_EXE, {"graph", "list", log});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("(torch_trace, 0 graphs)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unparsable  " + log + ":1: aot_forward_graph payload"), std::string::npos) << r.out;
}

}  // namespace
