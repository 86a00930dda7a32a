// Which nodes of a run across nodes were lost whole (diff/runs/lost_nodes).

#include "diff/runs/lost_nodes.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace gparity::diff {
namespace {

std::vector<model::RankInfo> two_nodes_of_two(bool numbered, const char* host0 = "h",
                                              const char* host1 = "h") {
  std::vector<model::RankInfo> p;
  for (int r = 0; r < 4; ++r) {
    model::RankInfo info{r, r % 2, r < 2 ? host0 : host1, "cpu"};
    info.node = numbered ? r / 2 : -1;
    p.push_back(info);
  }
  return p;
}

RankOutcome complete() {
  return {true, false, false, 4};
}
RankOutcome saw_failure() {
  return {true, true, true, 2};
}
RankOutcome stopped(std::int64_t last) {
  return {true, true, false, last};
}

TEST(LostNodes, ANodeWhoseRanksAllStoppedSilentlyIsLostAndNamed) {
  const auto lost =
      lost_nodes(two_nodes_of_two(true), {saw_failure(), saw_failure(), stopped(2), stopped(1)});
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].node, 1);
  EXPECT_EQ(lost[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(lost[0].last_step, 2);
  EXPECT_EQ(
      lost_node_message("candidate", lost[0]),
      "candidate node 1 (host h, ranks 2-3) was lost: its ranks stopped by step 2 with no failure event "
      "of their own (the node was killed, crashed or cut off; or its folder is not the shared one)");
}

TEST(LostNodes, ANodeWithNoTraceRecordedNothing) {
  const RankOutcome absent{false, true, false, {}};  // no trace: incomplete, as the evidence check has it
  const auto lost = lost_nodes(two_nodes_of_two(true), {complete(), complete(), absent, absent});
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_TRUE(lost[0].recorded_nothing);
  EXPECT_NE(lost_node_message("baseline", lost[0]).find("none of its ranks left a trace"), std::string::npos);
}

TEST(LostNodes, ANodeWithOneLiveRankOrARankThatSawTheFailureIsNotLost) {
  EXPECT_TRUE(lost_nodes(two_nodes_of_two(true), {complete(), complete(), stopped(2), complete()}).empty());
  EXPECT_TRUE(
      lost_nodes(two_nodes_of_two(true), {complete(), complete(), stopped(2), saw_failure()}).empty());
  EXPECT_TRUE(lost_nodes(two_nodes_of_two(true), {complete(), complete(), complete(), complete()}).empty());
}

TEST(LostNodes, HostsTellNodesApartWhenNoNodeNumbersWereRecorded) {
  const auto lost = lost_nodes(two_nodes_of_two(false, "gpu1", "gpu2"),
                               {stopped(3), stopped(3), complete(), saw_failure()});
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(node_label(lost[0]), "node (host gpu1, ranks 0-1)");
}

TEST(LostNodes, ARunOnOneNodeHasNoNodesToName) {
  // One host, no node numbers: every rank stopping is the ranks' business, reported per rank.
  EXPECT_TRUE(lost_nodes(two_nodes_of_two(false), {stopped(1), stopped(1), stopped(1), stopped(1)}).empty());
  EXPECT_TRUE(lost_nodes({}, {stopped(1)}).empty());
}

}  // namespace
}  // namespace gparity::diff
