// torchtitan console logs (core/model/formats/import_titan): ranks from `[rankN]:` prefixes,
// ANSI colours stripped, a step printed again (a restart replaying its log) kept once with a
// note, and an unreadable step line reported without costing the others.

#include "core/model/formats/import_titan.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gparity::model {
namespace {

std::string step_line(int rank, int step, const std::string& loss) {
  return "[rank" + std::to_string(rank) +
         "]:[titan] 2025-01-01 12:00:00,000 - root - INFO - \x1b[31mstep: " + std::to_string(step) +
         "  \x1b[32mloss: " + loss + "\x1b[39m  grad_norm:  0.5355\n";
}

TEST(TitanLog, RanksStepsAndColoursAreRead) {
  const std::string text = step_line(1, 1, "6.25") + step_line(0, 1, "6.5") + "memory: 1.2GiB\n" +
                           step_line(1, 2, "6.125") + "step:  3  loss:  5.0\n";
  const auto ranks = import_titan_text(text, "train.log");
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0);
  ASSERT_EQ(ranks[0].steps.size(), 2u);  // rank 0's step 1, and the unprefixed step 3
  EXPECT_EQ(ranks[0].steps[1].step, 3);
  ASSERT_EQ(ranks[1].steps.size(), 2u);
  EXPECT_EQ(ranks[1].steps[1].loss->value, 6.125);
  EXPECT_EQ(ranks[1].steps[0].grad_norm->value, 0.5355);
  EXPECT_TRUE(ranks[1].issues.empty());
}

TEST(TitanLog, AStepPrintedAgainKeepsTheFirstLineAndSaysSo) {
  // Rank 0 prints steps 1..3, restarts and prints 2..3 again with other values; rank 1 prints
  // step 2 once. Only rank 0's repeats are notes, each naming its line.
  std::string text;
  for (int s = 1; s <= 3; ++s) text += step_line(0, s, std::to_string(s) + ".5");
  text += step_line(1, 2, "9.0");
  for (int s = 2; s <= 3; ++s) text += step_line(0, s, "7.0");
  const auto ranks = import_titan_text(text, "train.log");
  ASSERT_EQ(ranks.size(), 2u);
  ASSERT_EQ(ranks[0].steps.size(), 3u);
  EXPECT_EQ(ranks[0].steps[1].loss->value, 2.5);
  ASSERT_EQ(ranks[0].issues.size(), 2u);
  EXPECT_EQ(ranks[0].issues[0].kind, TraceIssue::Kind::Note);
  EXPECT_EQ(ranks[0].issues[0].line, 5);
  EXPECT_NE(ranks[0].issues[0].problem.find("step 2 printed again for rank 0"), std::string::npos);
  EXPECT_EQ(ranks[0].issues[1].line, 6);
  EXPECT_TRUE(ranks[1].issues.empty());
  EXPECT_EQ(ranks[1].steps.at(0).loss->value, 9.0);
}

TEST(TitanLog, AnUnreadableStepLineCostsOnlyItself) {
  const std::string text = step_line(0, 1, "1.5") + "[rank0]: step: 2 loss: nanx\n" + step_line(0, 3, "1.25");
  const auto ranks = import_titan_text(text, "train.log");
  ASSERT_EQ(ranks.size(), 1u);
  ASSERT_EQ(ranks[0].steps.size(), 2u);
  EXPECT_EQ(ranks[0].steps[1].step, 3);
  ASSERT_EQ(ranks[0].issues.size(), 1u);
  EXPECT_EQ(ranks[0].issues[0].kind, TraceIssue::Kind::CorruptLine);
  EXPECT_EQ(ranks[0].issues[0].line, 2);
}

}  // namespace
}  // namespace gparity::model
