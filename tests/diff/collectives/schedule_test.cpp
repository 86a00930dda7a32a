// Collective schedules across process groups (issue 34): ranks from PyTorch's dump names, order
// inversions between ranks, hangs (stuck groups, waits, deadlock cycles and their causes, ranks
// that never arrived, missing dumps) on the hand-made dumps of tests/data/collectives/hand/
// (make_hand_dumps.py), and a pass that moves a collective across another group's in an FX graph.

#include "diff/collectives/schedule.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/flight_recorder.hpp"
#include "diff/collectives/collectives.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/graph_test_support.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::diff;
using gparity::testing::TempDir;
namespace fs = std::filesystem;

const std::string kHand = std::string(GPARITY_SOURCE_DIR) + "/tests/data/collectives/hand/";

CollectiveRun load_dir(const std::string& dir) {
  const std::vector<std::string> paths{dir};
  return load_collectives(paths);
}

std::vector<Finding> schedule_findings(const CollectingConsumer& c, std::string_view kind) {
  std::vector<Finding> out;
  for (const auto& f : c.findings)
    if (f.kind == kind) out.push_back(f);
  return out;
}

/// The deadlock's ranks, in cycle order.
std::vector<std::int32_t> deadlock_ranks(const Deadlock& d) {
  std::vector<std::int32_t> r;
  for (const auto& e : d.cycle) r.push_back(e.from);
  return r;
}

TEST(ScheduleRanks, PyTorchDumpNamesGiveTheRank) {
  using gparity::model::rank_in_file_name;
  EXPECT_EQ(rank_in_file_name("/tmp/nccl_trace_rank_3"), 3);
  EXPECT_EQ(rank_in_file_name("/home/u/.cache/torch/comm_lib_trace_rank_12"), 12);
  EXPECT_EQ(rank_in_file_name("dumps/fr_0"), 0);
  EXPECT_EQ(rank_in_file_name("dumps/fr_7.json"), 7);
  EXPECT_EQ(rank_in_file_name("rank5_flight_recorder.json"), 5);
  EXPECT_EQ(rank_in_file_name("fr_rank2.pkl"), 2);
  EXPECT_EQ(rank_in_file_name("dump.json"), -1);
  EXPECT_EQ(rank_in_file_name("0"), -1);             // digits alone: no prefix, no rank
  EXPECT_EQ(rank_in_file_name("run_20240105"), -1);  // a date, not a rank
}

TEST(ScheduleRanks, PicklesNamedAsPyTorchNamesThemNeedNoRankWarning) {
  TempDir dir;
  const std::string src = std::string(GPARITY_SOURCE_DIR) + "/tests/data/flight_recorder_pickle/";
  for (int r = 0; r < 4; ++r)
    fs::copy_file(src + "fr_rank" + std::to_string(r) + ".pkl", dir.path() / ("fr_" + std::to_string(r)));
  const auto run = load_dir(dir.path().string());
  EXPECT_TRUE(run.problems.empty()) << run.problems.front();
  ASSERT_EQ(run.ranks.size(), 4U);
  for (std::int32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(run.ranks[static_cast<std::size_t>(r)].rank, r);
    EXPECT_TRUE(run.ranks[static_cast<std::size_t>(r)].sources[0].ends_with("fr_" + std::to_string(r)));
  }
  // pg_status of the pickle (integers there, strings in the JSON form).
  const auto& s = run.ranks[0].streams[0];
  EXPECT_EQ(s.status.last_enqueued, 58);
  EXPECT_EQ(s.status.last_completed, 31);
  // Frames give the call site, past torch's own frames.
  EXPECT_FALSE(s.ops[0].site.empty());
  EXPECT_EQ(s.ops[0].site.find("distributed_c10d.py"), std::string::npos) << s.ops[0].site;
}

TEST(ScheduleRanks, AFileNameThatIsNotAMemberOfItsGroupsIsRefused) {
  TempDir dir;
  fs::copy_file(kHand + "inversion_2rank/nccl_trace_rank_1", dir.path() / "nccl_trace_rank_5");
  try {
    load_dir(dir.path().string());
    ADD_FAILURE() << "no error";
  } catch (const gparity::model::InputError& e) {
    EXPECT_NE(e.problem().find("says rank 5"), std::string::npos) << e.what();
  }
}

TEST(ScheduleRanks, ADumpWithoutRankInItsNameTakesTheOneRankItsGroupsHold) {
  // Rank 2 of the 4-rank job: default_pg [0..3] and tp [2, 3] leave 2 and 3; no single rank.
  // A dump of a rank whose groups single it out needs no name.
  TempDir dir;
  auto j = nlohmann::json::parse(gparity::testing::slurp(kHand + "healthy_4rank/nccl_trace_rank_2"));
  j["pg_config"]["9"] = {{"name", "9"}, {"desc", "pp"}, {"ranks", "[2, 6]"}};
  const auto path = dir.write("dump.json", j.dump());
  const std::vector<std::string> paths{path};
  const auto run = load_collectives(paths);
  ASSERT_EQ(run.ranks.size(), 1U);
  EXPECT_EQ(run.ranks[0].rank, 2);
  EXPECT_TRUE(run.problems.empty());
}

TEST(ScheduleRanks, ADumpPyTorchWroteWithNoEntriesIsAnEmptyRankNotAnError) {
  // dump_json leaves "entries" out when there are none.
  TempDir dir;
  const auto path = dir.write(
      "nccl_trace_rank_0",
      R"({"version": "2.10", "comm_lib_version": "2.27.5", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0]"}}, "pg_status": {}})");
  const std::vector<std::string> paths{path};
  const auto run = load_collectives(paths);
  ASSERT_EQ(run.ranks.size(), 1U);
  EXPECT_TRUE(run.ranks[0].streams.empty());
  EXPECT_FALSE(run.ranks[0].nothing.empty());
}

TEST(ScheduleHealthy, AllCompletedDumpsAreParityWithNoHangAndNoInversion) {
  const auto run = load_dir(kHand + "healthy_4rank");
  EXPECT_TRUE(run.problems.empty());
  EXPECT_TRUE(order_inversions(run).empty());
  const auto h = analyze_hang(run);
  EXPECT_FALSE(h.hung());
  EXPECT_TRUE(h.groups.empty());
  EXPECT_TRUE(h.missing_dumps.empty());
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 0);
  EXPECT_EQ(c.verdict.data["order_inversions"], 0);
  EXPECT_EQ(c.verdict.data["deadlock_count"], 0);
  EXPECT_TRUE(c.verdict.data["deadlocks"].empty());
}

TEST(ScheduleInversion, FourRanksTheInvertedPairDeadlocksTheOthersWaitBehind) {
  const auto run = load_dir(kHand + "inversion_4rank");
  const auto inv = order_inversions(run);
  ASSERT_EQ(inv.size(), 1U);
  EXPECT_EQ(inv[0].first_rank, 0);
  EXPECT_EQ(inv[0].second_rank, 1);
  EXPECT_EQ(inv[0].a_first.stream, "pg 0 (default_pg)");
  EXPECT_EQ(inv[0].b_first.stream, "pg 1 (tp)");
  EXPECT_EQ(inv[0].a_first.seq, 3);
  EXPECT_EQ(inv[0].b_first.seq, 3);
  // Each side named with its own frames: rank 0 issued the world all_reduce early.
  EXPECT_EQ(inv[0].a_first.op.site, "sync_grads_early (train.py:58)");
  EXPECT_EQ(inv[0].a_second.op.site, "sync_grads (train.py:63)");
  EXPECT_EQ(inv[0].b_second.op.site, "tp_block (train.py:41)");

  const auto h = analyze_hang(run);
  ASSERT_EQ(h.deadlocks.size(), 1U);
  const auto& d = h.deadlocks[0];
  EXPECT_EQ(d.cause, Deadlock::Cause::OrderInversion);
  EXPECT_EQ(deadlock_ranks(d), (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(d.behind, (std::vector<std::int32_t>{2, 3}));
  for (const auto& e : d.cycle) EXPECT_TRUE(e.issued);
  // Per group: the world group is stuck at #3 with rank 1's queued behind its tp all_reduce.
  ASSERT_EQ(h.groups.size(), 2U);
  EXPECT_EQ(h.groups[0].stream, "pg 0 (default_pg)");
  EXPECT_EQ(h.groups[0].seq, 3);
  ASSERT_EQ(h.groups[0].members.size(), 4U);
  EXPECT_EQ(h.groups[0].members[0].state, "started");
  EXPECT_EQ(h.groups[0].members[1].state, "scheduled");
  EXPECT_EQ(h.groups[0].members[1].last_completed, 2);
  EXPECT_TRUE(h.never_arrived.empty());

  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  const auto dl = schedule_findings(c, "collective_deadlock");
  ASSERT_EQ(dl.size(), 1U);
  EXPECT_NE(dl[0].message.find("Cause: an order inversion"), std::string::npos) << dl[0].message;
  EXPECT_NE(dl[0].message.find("Fix: issue the collectives of pg 0 (default_pg) and pg 1 (tp) in one order"),
            std::string::npos)
      << dl[0].message;
  EXPECT_NE(dl[0].message.find("Ranks 2, 3 wait on this deadlock"), std::string::npos) << dl[0].message;
  EXPECT_EQ(schedule_findings(c, "collective_order_inversion").size(), 1U);
  // --json carries the cycle and the inversion.
  ASSERT_EQ(c.verdict.data["deadlocks"].size(), 1U);
  EXPECT_EQ(c.verdict.data["deadlocks"][0]["cause"], "order_inversion");
  EXPECT_EQ(c.verdict.data["deadlocks"][0]["cycle"].size(), 2U);
  EXPECT_EQ(c.verdict.data["inversions"][0]["first"][0]["site"], "sync_grads_early (train.py:58)");
  EXPECT_EQ(c.verdict.headline.find("collectives deadlock"), 0U) << c.verdict.headline;
}

TEST(ScheduleInversion, TwoRanksSharingBothGroups) {
  const auto run = load_dir(kHand + "inversion_2rank");
  const auto h = analyze_hang(run);
  ASSERT_EQ(h.deadlocks.size(), 1U);
  EXPECT_EQ(h.deadlocks[0].cause, Deadlock::Cause::OrderInversion);
  EXPECT_TRUE(h.deadlocks[0].behind.empty());
  EXPECT_EQ(order_inversions(run).size(), 1U);
}

TEST(ScheduleSkip, ARankThatSkipsACollectiveIsNamedNotAnInversion) {
  const auto run = load_dir(kHand + "skip_2rank");
  EXPECT_TRUE(order_inversions(run).empty());  // rank 1 never issued tp #3: no two orders to compare
  const auto h = analyze_hang(run);
  ASSERT_EQ(h.deadlocks.size(), 1U);
  const auto& d = h.deadlocks[0];
  EXPECT_EQ(d.cause, Deadlock::Cause::SkippedCollective);
  const auto& skipped = d.cycle[d.skipped_edge];
  EXPECT_EQ(skipped.to, 1);
  EXPECT_FALSE(skipped.issued);
  EXPECT_EQ(skipped.waits_in.stream, "pg 1 (tp)");
  EXPECT_EQ(skipped.waits_in.seq, 3);
  EXPECT_EQ(skipped.waits_in.op.site, "tp_block (train.py:41)");
  EXPECT_EQ(skipped.to_blocked_in.stream, "pg 0 (default_pg)");
  ASSERT_EQ(h.groups.size(), 2U);
  EXPECT_EQ(h.groups[1].members[1].state, "not issued");
  EXPECT_EQ(h.groups[1].members[1].last_issued, 2);

  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  const auto dl = schedule_findings(c, "collective_deadlock");
  ASSERT_EQ(dl.size(), 1U);
  EXPECT_NE(dl[0].message.find("Cause: a skipped collective: rank 1 never issued pg 1 (tp) #3 all_reduce"),
            std::string::npos)
      << dl[0].message;
  EXPECT_NE(dl[0].message.find("Fix: make rank 1 issue"), std::string::npos) << dl[0].message;
  EXPECT_EQ(c.verdict.data["deadlocks"][0]["skipped"]["rank"], 1);
}

TEST(ScheduleNeverArrived, AnIdleRankThatNeverIssuedIsTheOneNamed) {
  const auto run = load_dir(kHand + "never_arrived_2rank");
  const auto h = analyze_hang(run);
  EXPECT_TRUE(h.deadlocks.empty());
  ASSERT_EQ(h.never_arrived.size(), 1U);
  EXPECT_EQ(h.never_arrived[0].to, 1);
  EXPECT_EQ(h.never_arrived[0].from, 0);
  EXPECT_EQ(h.never_arrived[0].waits_in.stream, "pg 0 (default_pg)");
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  const auto na = schedule_findings(c, "collective_never_arrived");
  ASSERT_EQ(na.size(), 1U);
  EXPECT_EQ(na[0].where.rank, 1);
  EXPECT_NE(na[0].message.find("Fix: make rank 1 issue it"), std::string::npos) << na[0].message;
}

TEST(ScheduleMissing, AMissingDumpIsNamedAndTheRestIsStillAnalysed) {
  TempDir dir;
  for (int r = 0; r < 3; ++r)
    fs::copy_file(kHand + "inversion_4rank/nccl_trace_rank_" + std::to_string(r),
                  dir.path() / ("nccl_trace_rank_" + std::to_string(r)));
  const auto run = load_dir(dir.path().string());
  const auto h = analyze_hang(run);
  EXPECT_EQ(h.missing_dumps, (std::vector<std::int32_t>{3}));
  ASSERT_EQ(h.deadlocks.size(), 1U);
  EXPECT_EQ(h.deadlocks[0].behind, (std::vector<std::int32_t>{2}));
  EXPECT_EQ(h.groups[0].members[3].state, "no dump");
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  const auto m = schedule_findings(c, "collective_dump_missing");
  ASSERT_EQ(m.size(), 1U);
  EXPECT_EQ(m[0].severity, Severity::Incomplete);
  EXPECT_EQ(m[0].where.rank, 3);

  // Healthy dumps with one missing: incomplete, never parity.
  TempDir healthy;
  for (int r = 0; r < 3; ++r)
    fs::copy_file(kHand + "healthy_4rank/nccl_trace_rank_" + std::to_string(r),
                  healthy.path() / ("nccl_trace_rank_" + std::to_string(r)));
  CollectingConsumer ch;
  EXPECT_EQ(report_collectives(load_dir(healthy.path().string()), nullptr, ch), 1);
  EXPECT_EQ(schedule_findings(ch, "collective_dump_missing").size(), 1U);
  EXPECT_NE(ch.verdict.headline.find("incomplete"), std::string::npos) << ch.verdict.headline;
}

/// A dump of `rank` issuing one all_reduce in each of `groups` (name, ranks), in that order; the
/// first started, the rest scheduled behind it.
std::string blocked_dump(const std::vector<std::pair<std::string, std::string>>& groups) {
  nlohmann::json d = {
      {"version", "2.10"}, {"pg_config", nlohmann::json::object()}, {"pg_status", nlohmann::json::object()}};
  d["entries"] = nlohmann::json::array();
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const auto& [name, ranks] = groups[k];
    d["pg_config"][name] = {{"name", name}, {"desc", "g" + name}, {"ranks", ranks}};
    d["entries"].push_back({{"record_id", k},
                            {"pg_id", k},
                            {"process_group", {name, "g" + name}},
                            {"collective_seq_id", 1},
                            {"p2p_seq_id", 0},
                            {"op_id", 1},
                            {"profiling_name", "nccl:all_reduce"},
                            {"input_sizes", {{16}}},
                            {"input_dtypes", {"Float"}},
                            {"output_sizes", {{16}}},
                            {"output_dtypes", {"Float"}},
                            {"state", k == 0 ? "started" : "scheduled"},
                            {"is_p2p", false}});
  }
  return d.dump();
}

TEST(ScheduleCycle, ThreeRanksInACycleNoTwoOfWhichShareTwoGroups) {
  // A = [0, 1], B = [1, 2], C = [0, 2]: rank 0 issues A then C, rank 1 B then A, rank 2 C then B.
  // No two ranks share two groups, so no pairwise inversion exists; the wait-for cycle does.
  TempDir dir;
  dir.write("fr_0", blocked_dump({{"A", "[0, 1]"}, {"C", "[0, 2]"}}));
  dir.write("fr_1", blocked_dump({{"B", "[1, 2]"}, {"A", "[0, 1]"}}));
  dir.write("fr_2", blocked_dump({{"C", "[0, 2]"}, {"B", "[1, 2]"}}));
  const auto run = load_dir(dir.path().string());
  EXPECT_TRUE(order_inversions(run).empty());
  const auto h = analyze_hang(run);
  ASSERT_EQ(h.deadlocks.size(), 1U);
  EXPECT_EQ(deadlock_ranks(h.deadlocks[0]), (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(h.deadlocks[0].cause, Deadlock::Cause::OrderInversion);
}

TEST(ScheduleWindow, RingsStartingAtDifferentCollectivesAreNoInversion) {
  // Rank 1's ring lost its oldest entries: only what both hold is compared.
  TempDir dir;
  fs::copy_file(kHand + "healthy_4rank/nccl_trace_rank_0", dir.path() / "nccl_trace_rank_0");
  auto j = nlohmann::json::parse(gparity::testing::slurp(kHand + "healthy_4rank/nccl_trace_rank_1"));
  j["entries"].erase(j["entries"].begin(), j["entries"].begin() + 3);
  dir.write("nccl_trace_rank_1", j.dump());
  auto run = load_dir(dir.path().string());
  EXPECT_TRUE(order_inversions(run).empty());
}

TEST(ScheduleSamples, TheMeshRunsHaveOneOrderAcrossGroupsAndCompileMovesNothing) {
  const auto samples = gparity::testing::samples_dir();
  if (!samples) GTEST_SKIP() << "samples not found";
  const auto dir = *samples + "/torch-2.11-2x2mesh-mp/";
  const auto eager = load_dir(dir + "eager");
  for (const char* name : {"eager", "compile", "compile_coor"}) {
    const auto run = load_dir(dir + name);
    EXPECT_TRUE(order_inversions(run).empty()) << name;
    EXPECT_FALSE(analyze_hang(run).hung()) << name;
    EXPECT_TRUE(order_moves(eager, run).empty()) << name;
  }
}

// ---- a pass that moves a collective across another group's (FX) ----------------------------

/// The post-grad graph of one rank: a tp all_reduce (group '3') and a dp all_gather (group '1'),
/// in the order given.
CollectiveStream graph_stream(bool all_gather_first) {
  const std::string ar =
      "all_reduce: \"f32[8, 64][64, 1]cuda:0\" = torch.ops._c10d_functional.all_reduce.default(x, 'sum', "
      "'3')\n"
      "wait_ar: \"f32[8, 64][64, 1]cuda:0\" = torch.ops._c10d_functional.wait_tensor.default(all_reduce)\n";
  const std::string ag =
      "all_gather: \"f32[16, 64][64, 1]cuda:0\" = "
      "torch.ops._c10d_functional.all_gather_into_tensor.default(y, 2, '1')\n"
      "wait_ag: \"f32[16, 64][64, 1]cuda:0\" = torch.ops._c10d_functional.wait_tensor.default(all_gather)\n";
  const auto g =
      gparity::testing::fx_graph((all_gather_first ? ag + ar : ar + ag) + "return (wait_ar, wait_ag)");
  return collectives_from_graph(g, "0/0 inductor_post_grad_graph");
}

CollectiveRun graph_run(std::vector<bool> all_gather_first) {
  CollectiveRun run;
  for (std::size_t r = 0; r < all_gather_first.size(); ++r) {
    RankCollectives rc;
    rc.rank = static_cast<std::int32_t>(r);
    rc.streams.push_back(graph_stream(all_gather_first[r]));
    run.ranks.push_back(std::move(rc));
  }
  return run;
}

TEST(ScheduleGraphs, APassThatMovesACollectiveAcrossAnotherGroupsIsNamedWithItsNode) {
  const auto eager_order = graph_run({false, false});
  const auto moved = graph_run({true, true});
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(moved, &eager_order, c), 1);
  // Per group nothing changed (each group issues the same one collective); the graph's whole
  // sequence is permuted, and the move names the groups and the node.
  EXPECT_EQ(c.verdict.data["changed"], 0);
  EXPECT_EQ(c.verdict.data["reorderings"], 2);
  const auto m = schedule_findings(c, "collective_moved_across_group");
  ASSERT_EQ(m.size(), 2U);  // rank 0 and rank 1
  EXPECT_EQ(m[0].where.rank, 0);
  EXPECT_EQ(m[0].where.node, "all_gather");
  EXPECT_NE(
      m[0].message.find("the candidate issues group '1' #1 all_gather_into_tensor (node all_gather) before "
                        "group '3' #1 all_reduce (node all_reduce)"),
      std::string::npos)
      << m[0].message;
  EXPECT_EQ(c.verdict.data["moved_across_groups"].size(), 2U);
  // Both ranks moved it alike: no inversion between them.
  EXPECT_TRUE(schedule_findings(c, "collective_order_inversion").empty());

  CollectingConsumer same;
  EXPECT_EQ(report_collectives(eager_order, &eager_order, same), 0);
}

TEST(ScheduleGraphs, OneRankMovedItAndTheRanksInvert) {
  const auto run = graph_run({true, false});
  const auto inv = order_inversions(run);
  ASSERT_EQ(inv.size(), 1U);
  EXPECT_EQ(inv[0].source, "0/0 inductor_post_grad_graph");
  EXPECT_EQ(inv[0].first_rank, 0);  // all_gather first
  EXPECT_EQ(inv[0].a_first.op.where, "all_gather");
  EXPECT_EQ(inv[0].b_first.op.where, "all_reduce");
  EXPECT_EQ(inv[0].second_rank, 1);
  EXPECT_EQ(inv[0].a_second.op.where, "all_gather");
}

}  // namespace
