// Eager against compiled collective schedules on real runs (tests/data/collectives/trace_device/,
// README there: PyTorch 2.11, 2 GPUs, NCCL; a tp all-reduce and a dp all-gather per step; Flight
// Recorder dumps beside each compiled run's TORCH_TRACE). A post-grad pass that moves the dp
// all-gather before the tp all-reduce is caught against the eager run's dumps and named with the
// graph node Inductor's output code gives for the call site; the same pass on rank 1 alone is an
// order inversion between the ranks' graphs (the real run hung).

#include <gtest/gtest.h>

#include <algorithm>

#include "diff/collectives/collectives.hpp"
#include "diff/collectives/output_code_sites.hpp"
#include "diff/collectives/schedule.hpp"

namespace {

using namespace gparity::diff;

const std::string kTraceDevice = std::string(GPARITY_SOURCE_DIR) + "/tests/data/collectives/trace_device/";

CollectiveRun traced_run(std::initializer_list<std::string> names) {
  std::vector<std::string> paths;
  for (const auto& n : names) paths.push_back(kTraceDevice + n);
  return load_collectives(paths);
}

std::vector<const Finding*> findings_of_kind(const CollectingConsumer& c, std::string_view kind) {
  std::vector<const Finding*> out;
  for (const auto& f : c.findings)
    if (f.kind == kind) out.push_back(&f);
  return out;
}

TEST(ScheduleTraceDevice, CompiledRunWithoutThePassMatchesEager) {
  const auto eager = traced_run({"eager"});
  const auto compiled = traced_run({"compiled"});
  EXPECT_TRUE(order_moves(eager, compiled).empty());
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(compiled, &eager, c), 0);
  EXPECT_TRUE(findings_of_kind(c, "collective_moved_across_group").empty());
}

TEST(ScheduleTraceDevice, PassMovingTheDpAllGatherIsNamedWithItsGraphNode) {
  const auto eager = traced_run({"eager"});
  const auto moved = traced_run({"moved"});
  const auto moves = order_moves(eager, moved);
  ASSERT_EQ(moves.size(), 2U);  // rank 0 and rank 1, each moved alike
  for (const auto& m : moves) {
    EXPECT_EQ(m.source, "Flight Recorder");
    const auto& first = m.candidate_first ? m.a_first : m.b_second;  // the candidate's first
    const auto& second = m.candidate_first ? m.b_first : m.a_second;
    EXPECT_EQ(first.op.kind.rfind("all_gather", 0), 0U) << first.op.kind;
    EXPECT_EQ(second.op.kind, "all_reduce");
    // Inductor's module issued both; its comment above each call names the node.
    EXPECT_EQ(first.op.node, "tensor_1");
    EXPECT_EQ(second.op.node, "tensor");
    EXPECT_NE(first.op.site.find(".py:120), node tensor_1 (_c10d_functional.all_gather_into_tensor)"),
              std::string::npos)
        << first.op.site;
    // The eager side is the user's own code, no node.
    const auto& eager_first = m.candidate_first ? m.b_second : m.a_first;
    EXPECT_TRUE(eager_first.op.node.empty());
    EXPECT_NE(eager_first.op.site.find("gen_moved.py:"), std::string::npos) << eager_first.op.site;
  }
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(moved, &eager, c), 1);
  const auto found = findings_of_kind(c, "collective_moved_across_group");
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(found[0]->values["candidate"][0]["node"], "tensor_1");
  EXPECT_NE(found[0]->message.find("node tensor_1"), std::string::npos) << found[0]->message;
}

TEST(ScheduleTraceDevice, DumpsWithoutTheirTraceKeepTheCallSiteAlone) {
  // The same dumps given as files: no trace folder read, so no node is named (never guessed).
  const auto moved = traced_run({"moved/nccl_trace_api_rank_0", "moved/nccl_trace_api_rank_1"});
  const auto eager = traced_run({"eager"});
  const auto moves = order_moves(eager, moved);
  ASSERT_EQ(moves.size(), 2U);
  for (const auto& m : moves) {
    const auto& first = m.candidate_first ? m.a_first : m.b_second;
    EXPECT_TRUE(first.op.node.empty());
    EXPECT_NE(first.op.site.find(".py:120"), std::string::npos) << first.op.site;
  }
}

TEST(ScheduleTraceDevice, ATraceOfAnotherRunNamesNoNode) {
  // moved's dumps against compiled's trace: the modules' names (content hashes) differ, nothing
  // is named. Then the same dumps with their lines moved off every launch: nothing either.
  auto run = traced_run({"moved/nccl_trace_api_rank_0", "moved/nccl_trace_api_rank_1"});
  const std::vector<std::string> other{kTraceDevice + "compiled/trace"};
  EXPECT_EQ(name_output_code_nodes(run, other), 0U);
  const std::vector<std::string> own{kTraceDevice + "moved/trace"};
  for (auto& r : run.ranks)
    for (auto& s : r.streams)
      for (auto& op : s.ops) op.site_line += 1;  // the assert line after each call
  EXPECT_EQ(name_output_code_nodes(run, own), 0U);
  for (auto& r : run.ranks)
    for (auto& s : r.streams)
      for (auto& op : s.ops) op.site_line -= 1;
  EXPECT_EQ(name_output_code_nodes(run, own), 8U);  // 2 steps x 2 collectives x 2 ranks
}

TEST(ScheduleTraceDevice, JsonDumpsCatchTheMoveWithoutCallSites) {
  const auto eager = traced_run({"eager/fr_json"});
  const auto moved = traced_run({"moved/fr_json"});
  const auto moves = order_moves(eager, moved);
  ASSERT_EQ(moves.size(), 2U);
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(moved, &eager, c), 1);
}

TEST(ScheduleTraceDevice, GraphsAgainstGraphsNameTheMovedNode) {
  const auto compiled = traced_run({"compiled/trace"});
  const auto moved = traced_run({"moved/trace"});
  const auto moves = order_moves(compiled, moved);
  ASSERT_FALSE(moves.empty());
  bool post_grad = false;
  for (const auto& m : moves) {
    if (m.source.find("inductor_post_grad_graph") == std::string::npos) continue;
    post_grad = true;
    const auto& first = m.candidate_first ? m.a_first : m.b_second;
    EXPECT_EQ(first.op.where, "all_gather_into_tensor");
  }
  EXPECT_TRUE(post_grad);
}

TEST(ScheduleTraceDevice, RankOnePassIsAnInversionBetweenTheRanksGraphs) {
  const auto run = traced_run({"moved_rank1"});
  const auto inv = order_inversions(run);
  ASSERT_FALSE(inv.empty());
  bool named = false;
  for (const auto& i : inv) {
    if (i.source.find("inductor_post_grad_graph") == std::string::npos) continue;
    EXPECT_EQ(i.first_rank, 0);
    EXPECT_EQ(i.second_rank, 1);
    EXPECT_TRUE(i.a_first.op.where == "all_reduce" || i.b_first.op.where == "all_reduce");
    named = true;
  }
  EXPECT_TRUE(named);
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  const auto found = findings_of_kind(c, "collective_order_inversion");
  ASSERT_FALSE(found.empty());
  EXPECT_NE(found[0]->message.find("deadlock"), std::string::npos) << found[0]->message;
}

}  // namespace
