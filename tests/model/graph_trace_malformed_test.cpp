// Damaged TORCH_TRACE logs: each kind of damage is reported with file and line, the records
// before it stay usable, and nothing crashes or hangs.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/torch_trace.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::model;

std::string sample() {
  std::ifstream f(std::string(GPARITY_SOURCE_DIR) +
                  "/tests/data/graph/compile/dedicated_log_torch_trace_rank_0_vp85oaze.log");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::int64_t line_of(const std::string& text, std::size_t offset) {
  return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
}

TEST(GraphTraceMalformed, TruncatedFileKeepsEverythingBeforeTheCut) {
  const std::string full = sample();
  const std::size_t joint = full.find("{\"aot_joint_graph\"");
  const std::size_t cut = full.find('\n', joint + 2000) + 10;  // inside the joint graph's payload
  const TorchTraceRank t = parse_torch_trace(full.substr(0, cut), "cut.log");
  // The cut is reported, and so is the joint graph whose payload it cut short.
  ASSERT_EQ(t.problems.size(), 2U);
  EXPECT_NE(t.problems[0].problem.find("aot_joint_graph payload"), std::string::npos) << t.problems[0].text();
  EXPECT_EQ(t.problems[1].source, "cut.log");
  EXPECT_EQ(t.problems[1].line, line_of(full, cut));
  EXPECT_NE(t.problems[1].problem.find("truncated"), std::string::npos);
  // Graphs before the joint graph parse; the joint graph's payload is cut, so its MD5 fails.
  ASSERT_GE(t.graphs.size(), 3U);
  EXPECT_EQ(t.graphs[0].kind, "dynamo_output_graph");
  EXPECT_EQ(t.md5_mismatches, 1U);
}

TEST(GraphTraceMalformed, PayloadLineWithoutEnvelope) {
  const TorchTraceRank t = parse_torch_trace("\tclass G(torch.nn.Module):\n", "orphan.log");
  ASSERT_EQ(t.problems.size(), 1U);
  EXPECT_EQ(t.problems[0].line, 1);
  EXPECT_NE(t.problems[0].problem.find("no envelope"), std::string::npos);
}

TEST(GraphTraceMalformed, InvalidEnvelopeJsonNamesTheLine) {
  std::string text = sample();
  const std::size_t at = text.find("{\"aot_joint_graph\"");
  text.replace(at, 1, "[");
  const TorchTraceRank t = parse_torch_trace(text, "bad.log");
  ASSERT_EQ(t.problems.size(), 1U);
  EXPECT_EQ(t.problems[0].line, line_of(text, at));
  EXPECT_NE(t.problems[0].problem.find("invalid JSON"), std::string::npos) << t.problems[0].text();
  // One bad record costs only itself: the three graphs before it and the six after it are read.
  EXPECT_EQ(t.graphs.size(), 9U);
}

TEST(GraphTraceMalformed, NotAnEnvelope) {
  const TorchTraceRank t = parse_torch_trace("hello world\n", "x.log");
  ASSERT_EQ(t.problems.size(), 1U);
  EXPECT_NE(t.problems[0].problem.find("not a TORCH_TRACE envelope"), std::string::npos);
}

TEST(GraphTraceMalformed, DeeplyNestedEnvelopeIsCappedNotRecursed) {
  const std::string text = "V1121 04:50:33.123000 9 a.py:1] {\"x\": " + std::string(100000, '[') + "\n";
  const TorchTraceRank t = parse_torch_trace(text, "deep.log");
  ASSERT_EQ(t.problems.size(), 1U);
  EXPECT_NE(t.problems[0].problem.find("nested deeper"), std::string::npos);
}

TEST(GraphTraceMalformed, BadGraphPayloadIsReportedWithItsLineAndOthersStillParse) {
  std::string text = sample();
  // Unbalanced bracket in one node line of the forward graph, and an unknown dtype in the backward.
  const std::size_t fwd = text.find("{\"aot_forward_graph\"");
  const std::size_t node = text.find("torch.ops.aten.pow.Tensor_Scalar(primals_1, 2)", fwd);
  text.replace(node + std::string("torch.ops.aten.pow.Tensor_Scalar(primals_1, 2").size(), 1, "");
  const std::size_t bwd = text.find("{\"aot_backward_graph\"");
  const std::size_t ann = text.find("\"f32[", text.find('\n', text.find("def forward", bwd)));
  text.replace(ann + 1, 3, "x99");
  const TorchTraceRank t = parse_torch_trace(text, "graphs.log");
  // The unclosed bracket swallows the rest of the forward graph, return included: both reported
  // (the def's line first), the graph kept as far as it goes.
  ASSERT_EQ(t.problems.size(), 3U);
  EXPECT_NE(t.problems[0].problem.find("aot_forward_graph payload: forward() of GraphModule has no return"),
            std::string::npos)
      << t.problems[0].text();
  EXPECT_EQ(t.problems[1].line, line_of(text, node));
  EXPECT_NE(t.problems[1].problem.find("aot_forward_graph payload: unbalanced brackets"), std::string::npos)
      << t.problems[1].text();
  EXPECT_EQ(t.problems[2].line, line_of(text, ann));
  EXPECT_NE(t.problems[2].problem.find("unknown dtype 'x99'"), std::string::npos) << t.problems[2].text();
  EXPECT_EQ(t.graphs.size(), 10U);  // the two damaged graphs too, used as far as they go
  EXPECT_EQ(t.graphs[0].problems + t.graphs[1].problems + t.graphs[2].problems, 0U);
  EXPECT_EQ(t.md5_mismatches, 2U);  // edited payloads no longer match has_payload; still used
}

TEST(GraphTraceMalformed, CompileIdText) {
  CompileId id;
  id.frame_id = 3;
  id.frame_compile_id = 1;
  EXPECT_EQ(id.text(), "3/1");
  id.attempt = 2;
  EXPECT_EQ(id.text(), "3/1_2");
  id.compiled_autograd_id = 0;
  EXPECT_EQ(id.text(), "!0/3/1_2");
  EXPECT_EQ(CompileId::parse("!0/3/1_2"), id);
  EXPECT_EQ(CompileId::parse("[3/1]")->frame_id, 3);
  EXPECT_FALSE(CompileId::parse("3/"));
  EXPECT_FALSE(CompileId::parse("a/b"));
}

}  // namespace

namespace {

namespace fs = std::filesystem;
using gparity::testing::TempDir;

std::string what_of_dir(const std::string& dir) {
  try {
    read_torch_trace_dir(dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A restarted job leaves a second log of the same rank: every per-rank answer would take one of
// them, or count the rank twice.
TEST(GraphTraceMalformed, TwoLogsOfOneRankAreRefusedNamingBoth) {
  TempDir dir;
  dir.write("dedicated_log_torch_trace_rank_0_a.log", sample());
  dir.write("dedicated_log_torch_trace_rank_0_b.log", sample());
  const auto what = what_of_dir(dir.path().string());
  EXPECT_NE(what.find("rank 0 is in two logs"), std::string::npos) << what;
  EXPECT_NE(what.find("rank_0_a.log"), std::string::npos) << what;
  EXPECT_NE(what.find("rank_0_b.log"), std::string::npos) << what;
}

TEST(GraphTraceMalformed, SymbolicLinkLoopInTheFolderIsNamed) {
  TempDir dir;
  dir.write("dedicated_log_torch_trace_rank_0_a.log", sample());
  fs::create_symlink(dir.path() / "self", dir.path() / "self");
  const auto what = what_of_dir(dir.path().string());
  EXPECT_NE(what.find((dir.path() / "self").string() + ": symbolic link loop"), std::string::npos) << what;
}

}  // namespace
