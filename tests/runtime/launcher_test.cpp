// The local launcher (core/runtime/launcher): what it does when a rank fails.

#include "core/runtime/launcher.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gparity::runtime {
namespace {

LaunchOptions shell(const std::string& script, std::chrono::milliseconds grace) {
  LaunchOptions o;
  o.nproc = 2;
  o.exe = "/bin/sh";
  o.args = {"-c", script};
  o.grace = grace;
  return o;
}

const RankExit* exit_of(const LaunchResult& r, int rank) {
  for (const auto& e : r.exits)
    if (e.rank == rank) return &e;
  return nullptr;
}

TEST(Launcher, RanksLeftWithoutRankZerosStoreAreStoppedSoon) {
  // Rank 0 (the rendezvous store's host) fails; rank 1 would sleep for 20 s, and the grace is a
  // minute: it is killed a few seconds after rank 0 is gone instead.
  const auto r =
      launch_local(shell("if [ \"$RANK\" = 0 ]; then exit 3; fi; sleep 20", std::chrono::minutes(1)),
                   [](int, bool, std::string_view) {});
  EXPECT_NE(r.failure.find("rank 0"), std::string::npos) << r.failure;
  const RankExit* one = exit_of(r, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_TRUE(one->killed_by_launcher);
}

TEST(Launcher, OtherRanksGetTheGraceWhileRankZeroRuns) {
  // Rank 1 fails; rank 0 finishes on its own within the grace and is not killed.
  const auto r =
      launch_local(shell("if [ \"$RANK\" = 1 ]; then exit 3; fi; sleep 1", std::chrono::minutes(1)),
                   [](int, bool, std::string_view) {});
  EXPECT_NE(r.failure.find("rank 1"), std::string::npos) << r.failure;
  const RankExit* zero = exit_of(r, 0);
  ASSERT_NE(zero, nullptr);
  EXPECT_FALSE(zero->killed_by_launcher);
  EXPECT_EQ(zero->exit_code, 0);
}

TEST(Launcher, RendezvousPortsAvoidTheEphemeralRange) {
  // Another rank's connection attempts take their local ports from that range.
  int lo = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> lo;
  for (int i = 0; i < 20; ++i) {
    const int p = pick_free_port();
    EXPECT_GT(p, 0);
    if (lo > 11000) {
      EXPECT_LT(p, lo);
    }
  }
}

TEST(Launcher, OneNodeOfSeveralStartsItsShareOfTheGlobalRanks) {
  LaunchOptions o = shell(
      "echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE "
      "$MASTER_ADDR $MASTER_PORT",
      std::chrono::seconds(5));
  o.node = {3, 1, "10.1.2.3", 23456};
  std::map<int, std::string> lines;
  const auto r = launch_local(o, [&lines](int rank, bool, std::string_view line) { lines[rank] = line; });
  EXPECT_TRUE(r.ok()) << r.failure;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[2], "2 0 6 2 1 3 10.1.2.3 23456");  // node 1 of 3, 2 ranks each: ranks 2 and 3
  EXPECT_EQ(lines[3], "3 1 6 2 1 3 10.1.2.3 23456");
  ASSERT_NE(exit_of(r, 3), nullptr);
}

TEST(Launcher, NodesOfARunNeedTheRendezvousAddressAndPort) {
  EXPECT_THROW(validate(NodeLayout{2, 0, "", 0}), std::invalid_argument);
  EXPECT_THROW(validate(NodeLayout{2, 0, "node0", 0}), std::invalid_argument);
  EXPECT_THROW(validate(NodeLayout{2, 2, "node0", 29400}), std::invalid_argument);
  EXPECT_NO_THROW(validate(NodeLayout{2, 1, "node0", 29400}));
  EXPECT_NO_THROW(validate(NodeLayout{}));  // one node: a free local port
}

TEST(Launcher, RanksGetTheCommandWithoutTheLaunchersOptions) {
  EXPECT_EQ(rank_arguments({"gparity", "run", "--nproc", "2", "--nnodes=2", "--node-rank", "1", "--out", "r",
                            "--master-addr", "h", "--master-port=5", "--steps", "3"}),
            (std::vector<std::string>{"run", "--out", "r", "--steps", "3"}));
  // An option that only starts like one of them stays.
  EXPECT_EQ(rank_arguments({"gparity", "run", "--nprocs", "x"}),
            (std::vector<std::string>{"run", "--nprocs", "x"}));
}

}  // namespace
}  // namespace gparity::runtime
