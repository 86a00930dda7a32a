// Schedules across process groups on real NCCL Flight Recorder dumps (tests/data/collectives/
// fr_device/, README there: PyTorch 2.11 on 4 x H100, pickled dumps named as PyTorch names them,
// no rank field, no start times): the healthy runs are parity, the cross-group inversion is a
// deadlock told as an order inversion, the skipped collective as a skipped collective naming the
// rank that skipped it; each verdict names what to fix.

#include <gtest/gtest.h>

#include <algorithm>

#include "diff/collectives/collectives.hpp"
#include "diff/collectives/schedule.hpp"

namespace {

using namespace gparity::diff;

const std::string kDevice = std::string(GPARITY_SOURCE_DIR) + "/tests/data/collectives/fr_device/";

CollectiveRun device_run(const std::string& name) {
  const std::vector<std::string> paths{kDevice + name};
  return load_collectives(paths);
}

std::vector<std::int32_t> ranks_of_cycle(const Deadlock& d) {
  std::vector<std::int32_t> r;
  for (const auto& e : d.cycle) r.push_back(e.from);
  return r;
}

std::size_t findings_of(const CollectingConsumer& c, std::string_view kind) {
  return static_cast<std::size_t>(
      std::count_if(c.findings.begin(), c.findings.end(), [&](const Finding& f) { return f.kind == kind; }));
}

const Finding* first_finding(const CollectingConsumer& c, std::string_view kind) {
  for (const auto& f : c.findings)
    if (f.kind == kind) return &f;
  return nullptr;
}

TEST(ScheduleDevice, HealthyRunsAreParityWithRanksFromPyTorchsNames) {
  for (const auto& [name, ranks] : {std::pair{"healthy_2r", 2U}, std::pair{"healthy_4r", 4U}}) {
    const auto run = device_run(name);
    EXPECT_TRUE(run.problems.empty()) << name << ": " << run.problems.front();  // no "no rank" warning
    ASSERT_EQ(run.ranks.size(), ranks) << name;
    for (std::size_t r = 0; r < ranks; ++r)
      EXPECT_EQ(run.ranks[r].rank, static_cast<std::int32_t>(r)) << name;
    EXPECT_TRUE(order_inversions(run).empty()) << name;
    const auto h = analyze_hang(run);
    EXPECT_FALSE(h.hung()) << name;
    EXPECT_TRUE(h.missing_dumps.empty()) << name;
    CollectingConsumer c;
    EXPECT_EQ(report_collectives(run, nullptr, c), 0) << name;
    for (const auto& f : c.findings) EXPECT_LT(f.severity, Severity::Warning) << name << ": " << f.message;
  }
}

TEST(ScheduleDevice, TwoRankInversionIsADeadlockFromTheOrder) {
  const auto run = device_run("inversion_2r");
  const auto inv = order_inversions(run);
  ASSERT_FALSE(inv.empty());
  // Rank 0 issued the world all_reduce of step 2 before its tp one; rank 1 the other way round.
  EXPECT_EQ(inv[0].first_rank, 0);
  EXPECT_EQ(inv[0].second_rank, 1);
  EXPECT_EQ(inv[0].a_first.stream, "pg 0 (default_pg)");
  EXPECT_EQ(inv[0].a_first.seq, 2);
  EXPECT_EQ(inv[0].b_first.seq, 2);
  EXPECT_EQ(inv[0].a_first.op.site, "<module> (gen_fr.py:63)");  // the script's own frame

  const auto h = analyze_hang(run);
  ASSERT_EQ(h.deadlocks.size(), 1U);
  EXPECT_EQ(h.deadlocks[0].cause, Deadlock::Cause::OrderInversion);
  EXPECT_EQ(ranks_of_cycle(h.deadlocks[0]), (std::vector<std::int32_t>{0, 1}));
  EXPECT_TRUE(h.never_arrived.empty());
  EXPECT_TRUE(h.missing_dumps.empty());
  // Without TORCH_NCCL_ENABLE_TIMING nothing is seen to start: the stuck members are scheduled.
  for (const auto& g : h.groups)
    for (const auto& m : g.members) EXPECT_EQ(m.state, "scheduled") << g.stream;

  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  const auto* d = first_finding(c, "collective_deadlock");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("Cause: an order inversion"), std::string::npos) << d->message;
  EXPECT_NE(d->message.find("Fix: issue the collectives of pg 0 (default_pg) and pg 1"), std::string::npos)
      << d->message;
  EXPECT_EQ(c.verdict.data["deadlocks"][0]["cause"], "order_inversion");
}

TEST(ScheduleDevice, FourRankInversionDeadlocksEveryRankThroughRankZero) {
  // Rank 0 put world before tp and dp: it inverts against its tp partner (rank 1) and its dp
  // partner (rank 2), and rank 3 waits in dp on rank 1: all four ranks are in the deadlock.
  const auto run = device_run("inversion_4r");
  const auto inv = order_inversions(run);
  ASSERT_EQ(inv.size(), 2U);
  for (const auto& i : inv) {
    EXPECT_EQ(i.first_rank, 0);
    EXPECT_EQ(i.a_first.stream, "pg 0 (default_pg)");
  }
  EXPECT_EQ(inv[0].second_rank, 1);
  EXPECT_EQ(inv[1].second_rank, 2);
  const auto h = analyze_hang(run);
  ASSERT_FALSE(h.deadlocks.empty());
  EXPECT_EQ(ranks_of_cycle(h.deadlocks[0]), (std::vector<std::int32_t>{0, 1}));
  for (const auto& d : h.deadlocks) {
    EXPECT_EQ(d.cause, Deadlock::Cause::OrderInversion);
    EXPECT_EQ(d.component, (std::vector<std::int32_t>{0, 1, 2, 3}));
  }
  EXPECT_TRUE(h.never_arrived.empty());
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  EXPECT_EQ(findings_of(c, "collective_order_inversion"), 2U);
  EXPECT_EQ(findings_of(c, "collective_rank_mismatch"), 0U);  // every rank issued every collective
}

TEST(ScheduleDevice, SkippedCollectiveNamesTheRankThatSkippedIt) {
  for (const auto& [name, skipper, partner, group] :
       {std::tuple{"skip_2r", 1, 0, "pg 2 (undefined)"}, std::tuple{"skip_4r", 3, 1, "pg 4 (undefined)"}}) {
    const auto run = device_run(name);
    EXPECT_TRUE(order_inversions(run).empty()) << name;  // a skip, not an inversion
    const auto h = analyze_hang(run);
    ASSERT_EQ(h.deadlocks.size(), 1U) << name;
    const auto& d = h.deadlocks[0];
    EXPECT_EQ(d.cause, Deadlock::Cause::SkippedCollective) << name;
    const auto& e = d.cycle[d.skipped_edge];
    EXPECT_EQ(e.to, skipper) << name;
    EXPECT_EQ(e.from, partner) << name;
    EXPECT_EQ(e.waits_in.stream, group) << name;
    EXPECT_EQ(e.waits_in.seq, 2) << name;  // the dp all_reduce of step 2
    EXPECT_EQ(e.to_blocked_in.stream, "pg 0 (default_pg)") << name;
    if (std::string(name) == "skip_4r") {
      EXPECT_EQ(d.behind, (std::vector<std::int32_t>{0, 2}));
    }

    CollectingConsumer c;
    EXPECT_EQ(report_collectives(run, nullptr, c), 1) << name;
    const auto* f = first_finding(c, "collective_deadlock");
    ASSERT_NE(f, nullptr) << name;
    EXPECT_NE(f->message.find("Cause: a skipped collective: rank " + std::to_string(skipper) +
                              " never issued " + group + " #2 all_reduce"),
              std::string::npos)
        << f->message;
    EXPECT_NE(f->message.find("Fix: make rank " + std::to_string(skipper) + " issue"), std::string::npos)
        << f->message;
    EXPECT_EQ(c.verdict.data["deadlocks"][0]["skipped"]["rank"], skipper) << name;
  }
}

}  // namespace
