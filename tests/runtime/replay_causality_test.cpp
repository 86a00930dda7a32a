// Cross-rank causality through the real `gparity replay --coor` and `gparity compare` (CPU, Gloo,
// this build's LibTorch) on tests/data/replay/causal_trace, a 4-rank TORCH_TRACE of a 2x2 mesh
// (tp groups '3' = {0, 1}, '4' = {2, 3}, described "mesh_tp" by the Flight Recorder dumps beside
// the logs; tests/data/replay/make_causal_trace.py writes it). Its graphs slice, scale,
// all-reduce on the tp group, scale and add; compile 0/0 is correct everywhere, 1/0 has rank 1's
// slice bound wrong, 2/0 ranks 1's and 3's, 3/0 rank 3's slice and rank 2's last scale. The
// verdicts must name the wrong rank as the only origin, every other member of its group as
// having received from it (with the group), and leave the other group alone.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "diff/replay/replay_verdict.hpp"
#include "tests/runtime/replay_summaries.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity {
namespace {

using gparity::testing::replay_summaries;

using gparity::testing::CommandResult;
using gparity::testing::run_command;
using gparity::testing::TempDir;
using json = nlohmann::json;

const std::filesystem::path kTrace =
    std::filesystem::path(GPARITY_SOURCE_DIR) / "tests" / "data" / "replay" / "causal_trace";

CommandResult replay_causal(const std::filesystem::path& out, const std::string& compile, int nproc,
                            std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"replay",  kTrace.string(),       "--compile-id", compile,
                                   "--nproc", std::to_string(nproc), "--timeout",    "60",
                                   "--out",   out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_command(GPARITY_EXE, args);
}

bool has(const std::string& text, const std::string& phrase) {
  return text.find(phrase) != std::string::npos;
}

/// `gparity replay --coor --json` of compile `compile` on 4 ranks: each rank's summary, the exit
/// code checked against `exit_code`.
std::map<int, json> coor_on_four_ranks(const TempDir& dir, const std::string& compile, int exit_code) {
  const auto r = replay_causal(dir.path() / "run", compile, 4, {"--coor", "--json"});
  EXPECT_EQ(r.exit_code, exit_code) << r.out << r.err;
  auto s = replay_summaries(r.out);
  EXPECT_EQ(s.size(), 4U) << r.out << r.err;
  return s;
}

TEST(ReplayCausality, CoorNamesTheBuggyRankAsTheOnlyOriginAndItsPartnerAsReceivedOnFourRanks) {
  TempDir dir;
  const auto s = coor_on_four_ranks(dir, "1/0", 1);
  ASSERT_EQ(s.size(), 4U);
  // Rank 1: its own graph (slice at 32) differs from rank 0's at the slice: the origin.
  const auto& v1 = s.at(1)["verdict"];
  EXPECT_EQ(v1["cause"], "origin") << v1.dump();
  EXPECT_EQ(v1["first_divergent"]["node"], "slice_1") << v1.dump();
  EXPECT_EQ(v1["first_divergent"]["source"], "/workspace/causal.py:20") << v1.dump();
  // Rank 0: its graph is rank 0's graph; only the all-reduce brings rank 1's damage.
  const auto& v0 = s.at(0)["verdict"];
  EXPECT_EQ(v0["cause"], "received") << v0.dump();
  EXPECT_EQ(v0["first_divergent"]["node"], "all_reduce") << v0.dump();
  EXPECT_EQ(v0["collective"], "all_reduce") << v0.dump();
  EXPECT_EQ(v0["group"], "3") << v0.dump();
  EXPECT_EQ(v0["group_desc"], "mesh_tp") << v0.dump();
  EXPECT_EQ(v0["from_ranks"], json::array({1})) << v0.dump();
  EXPECT_EQ(v0["origin_rank"], 1) << v0.dump();
  EXPECT_EQ(v0["origin"]["node"], "slice_1") << v0.dump();
  EXPECT_EQ(v0["safe_alone"], true) << "run with rank 1's correct contribution, rank 0 gives its own bits";
  EXPECT_EQ(v0["affected_by"], json::array({1})) << v0.dump();
  EXPECT_TRUE(has(v0["text"], "safe by itself, affected by rank 1")) << v0.dump();
  // The other tp group is untouched; every rank names rank 1 as the only origin.
  for (const int rank : {2, 3}) EXPECT_EQ(s.at(rank)["verdict"]["outputs_equal"], true) << rank;
  for (const auto& [rank, j] : s) {
    EXPECT_EQ(j["verdict"]["origin_ranks"], json::array({1})) << rank;
    EXPECT_EQ(j["verdict"]["all_equal"], false) << rank;
  }
  // The alone run is evidence too: its records are in rank 0's trace.
  std::ifstream f(dir.path() / "run" / "rank-0.jsonl");
  const std::string trace((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(trace, R"("graph":"coor-alone")")) << "no coor-alone records";
  // A viewer judging the run directory again through the same calls gets the same verdicts.
  const auto again = diff::judge_replay_run((dir.path() / "run").string());
  ASSERT_EQ(again.size(), 4U);
  for (const auto& v : again) {
    EXPECT_EQ(v.verdict.text, s.at(v.rank)["verdict"]["text"].get<std::string>()) << v.rank;
    EXPECT_EQ(v.verdict.overall, s.at(v.rank)["verdict"]["overall"].get<std::string>()) << v.rank;
    EXPECT_EQ(v.verdict.exit_code, 1) << v.rank;
  }
}

TEST(ReplayCausality, CoorOnTwoRanksSaysWhereTheReceivedDivergenceCameFrom) {
  TempDir dir;
  const auto r = replay_causal(dir.path() / "run", "1/0", 2, {"--coor"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // Origins first: rank 0 prints the verdict of every rank before its own line.
  EXPECT_TRUE(has(r.out,
                  "[rank 0] all ranks: unsafe: origin on rank 1: slice_1 (aten.slice.Tensor) at "
                  "/workspace/causal.py:20"))
      << r.out;
  EXPECT_TRUE(has(r.out,
                  "[rank 1] rank 1: unsafe: rank 0's graph, hoisted, differs from this rank's; first "
                  "divergent node: slice_1 (aten.slice.Tensor) at /workspace/causal.py:20"))
      << r.out;
  EXPECT_TRUE(has(r.out, "[rank 0] rank 0: safe by itself, affected by rank 1")) << r.out;
  EXPECT_TRUE(has(r.out,
                  "received at all_reduce (group tp '3') from rank 1, origin slice_1 at "
                  "/workspace/causal.py:20"))
      << r.out;
  EXPECT_FALSE(has(r.out,
                   "all_reduce (_c10d_functional.all_reduce.default) at /workspace/causal.py:22 <-> "
                   "coor node all_reduce; its inputs are equal (origin)"))
      << "the collective that only carried rank 1's damage is not an origin:\n"
      << r.out;
}

TEST(ReplayCausality, AReceivedDivergenceNamesTheOriginTheSendersOwnFindingNames) {
  // 4/0: rank 1 slices x twice with the same wrong bound; the first slice (slice_1) is kept for
  // the output, the second (slice_2) is all-reduced. Rank 1's finding and the overall line name
  // slice_1; rank 0's received finding names it too, and slice_2 as the way it reached the
  // all-reduce (issue 36: on the 2x2 mesh, rank 1's origin slice_6 while rank 0's received
  // finding named slice_scatter_1).
  TempDir dir;
  const auto s = coor_on_four_ranks(dir, "4/0", 1);
  ASSERT_EQ(s.size(), 4U);
  const auto& v1 = s.at(1)["verdict"];
  EXPECT_EQ(v1["cause"], "origin") << v1.dump();
  EXPECT_EQ(v1["first_divergent"]["node"], "slice_1") << v1.dump();
  const auto& v0 = s.at(0)["verdict"];
  EXPECT_EQ(v0["cause"], "received") << v0.dump();
  EXPECT_EQ(v0["origin"]["node"], v1["first_divergent"]["node"]) << v0.dump();
  EXPECT_EQ(v0["origin"]["source"], "/workspace/causal.py:30") << v0.dump();
  EXPECT_EQ(v0["through"]["node"], "slice_2") << v0.dump();
  EXPECT_EQ(v0["through"]["rank"], 1) << v0.dump();
  EXPECT_TRUE(has(v0["text"],
                  "received at all_reduce (group tp '3') from rank 1, origin slice_1 at "
                  "/workspace/causal.py:30, reaching all_reduce through slice_2 at /workspace/causal.py:32"))
      << v0.dump();
  const std::string overall = v0["overall"];
  EXPECT_TRUE(has(overall, "origin on rank 1: slice_1 (aten.slice.Tensor) at /workspace/causal.py:30"))
      << overall;
  EXPECT_TRUE(has(overall, "rank 0 received at all_reduce (group tp '3') from rank 1, origin slice_1"))
      << overall;
  for (const int rank : {2, 3}) EXPECT_EQ(s.at(rank)["verdict"]["outputs_equal"], true) << rank;
}

TEST(ReplayCausality, CoorNamesBothOriginsWhenTwoGroupsHaveABuggyRank) {
  TempDir dir;
  const auto s = coor_on_four_ranks(dir, "2/0", 1);
  ASSERT_EQ(s.size(), 4U);
  for (const int rank : {1, 3}) {
    EXPECT_EQ(s.at(rank)["verdict"]["cause"], "origin") << rank;
    EXPECT_EQ(s.at(rank)["verdict"]["first_divergent"]["node"], "slice_1") << rank;
  }
  const std::map<int, std::pair<int, std::string>> received = {{0, {1, "3"}}, {2, {3, "4"}}};
  for (const auto& [rank, from] : received) {
    const auto& v = s.at(rank)["verdict"];
    EXPECT_EQ(v["cause"], "received") << v.dump();
    EXPECT_EQ(v["from_ranks"], json::array({from.first})) << v.dump();
    EXPECT_EQ(v["group"], from.second) << v.dump();
    EXPECT_EQ(v["origin_rank"], from.first) << v.dump();
    EXPECT_EQ(v["safe_alone"], true) << v.dump();
  }
  EXPECT_EQ(s.at(0)["verdict"]["origin_ranks"], json::array({1, 3}));
}

TEST(ReplayCausality, CoorRunsAReceivingRankAloneToFindTheBugTheDamageHid) {
  // 3/0: rank 3's slice is wrong, and rank 2 scales the all-reduced sum by a quarter where rank
  // 0's graph scales by a half. In the coor run rank 2's scale only propagates rank 3's damage;
  // run alone, with rank 3's correct contribution, it is rank 2's own origin.
  TempDir dir;
  const auto s = coor_on_four_ranks(dir, "3/0", 1);
  ASSERT_EQ(s.size(), 4U);
  const auto& v2 = s.at(2)["verdict"];
  EXPECT_EQ(v2["cause"], "received") << v2.dump();
  EXPECT_EQ(v2["from_ranks"], json::array({3})) << v2.dump();
  EXPECT_EQ(v2["safe_alone"], false) << v2.dump();
  EXPECT_TRUE(has(v2["alone_first_divergent"], "mul_1")) << v2.dump();
  EXPECT_TRUE(has(v2["text"],
                  "unsafe: rank 0's graph, hoisted, differs from this rank's even with its "
                  "partners' correct inputs"))
      << v2.dump();
  EXPECT_EQ(s.at(3)["verdict"]["cause"], "origin");
  for (const int rank : {0, 1}) EXPECT_EQ(s.at(rank)["verdict"]["outputs_equal"], true) << rank;
  // The overall verdict names both ranks whose graphs are wrong.
  const std::string overall = s.at(0)["verdict"]["overall"];
  EXPECT_TRUE(has(overall, "origin on rank 3: slice_1")) << overall;
  EXPECT_TRUE(has(overall, "origin on rank 2 with its partners' correct inputs")) << overall;
}

TEST(ReplayCausality, AllCorrectStaysSafe) {
  TempDir dir;
  const auto s = coor_on_four_ranks(dir, "0/0", 0);
  ASSERT_EQ(s.size(), 4U);
  for (const auto& [rank, j] : s) {
    EXPECT_EQ(j["verdict"]["outputs_equal"], true) << rank;
    EXPECT_EQ(j["verdict"]["all_equal"], true) << rank;
    EXPECT_TRUE(j["verdict"]["origin_ranks"].empty()) << rank;
    EXPECT_TRUE(j["verdict"]["safe_alone"].is_null()) << "nothing received: no alone run";
  }
}

/// `gparity compare` of a correct replay run (compile `good`) against one of compile `bad`, both
/// on 4 ranks.
json compare_runs(const TempDir& dir, const std::string& bad, std::vector<std::string> extra = {},
                  const std::string& good = "0/0") {
  const auto base = dir.path() / "base", cand = dir.path() / "cand";
  const std::vector<std::string> graph = {"--graph", "aot_forward_graph"};
  const auto rb = replay_causal(base, good, 4, graph);
  EXPECT_EQ(rb.exit_code, 0) << rb.out << rb.err;
  const auto rc = replay_causal(cand, bad, 4, graph);
  EXPECT_EQ(rc.exit_code, 0) << rc.out << rc.err;
  std::vector<std::string> args = {"compare", base.string(), cand.string(), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_command(GPARITY_EXE, args);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << r.out << r.err;
  return j;
}

/// The node findings of a compare report, in report order.
std::vector<json> node_findings(const json& report) {
  std::vector<json> out;
  for (const auto& f : report["findings"])
    if (f["kind"] == "node_divergence" || f["kind"] == "node_origin") out.push_back(f);
  return out;
}

TEST(ReplayCausality, CompareNamesTheOriginFirstAndThePartnerAsReceived) {
  TempDir dir;
  const auto html = dir.path() / "report.html";
  const auto report = compare_runs(dir, "1/0", {"--html", html.string()});
  const auto fs = node_findings(report);
  ASSERT_EQ(fs.size(), 2U) << report.dump(1);
  // The origin first.
  EXPECT_EQ(fs[0]["where"]["rank"], 1) << fs[0].dump();
  EXPECT_EQ(fs[0]["where"]["node"], "slice_1");
  EXPECT_EQ(fs[0]["values"]["cause"], "origin");
  EXPECT_EQ(fs[0]["values"]["origin_rank"], 1);
  // Then the partner, received through the tp all-reduce.
  EXPECT_EQ(fs[1]["where"]["rank"], 0) << fs[1].dump();
  EXPECT_EQ(fs[1]["where"]["node"], "all_reduce");
  EXPECT_EQ(fs[1]["values"]["cause"], "received");
  EXPECT_EQ(fs[1]["values"]["collective"], "all_reduce");
  EXPECT_EQ(fs[1]["values"]["group"], "3");
  EXPECT_EQ(fs[1]["values"]["group_desc"], "mesh_tp");
  EXPECT_EQ(fs[1]["values"]["origin_rank"], 1);
  EXPECT_EQ(fs[1]["values"]["origin"]["node"], "slice_1");
  EXPECT_EQ(fs[1]["values"]["from_ranks"], json::array({1}));
  EXPECT_TRUE(has(fs[1]["message"],
                  "received at all_reduce (group tp '3') from rank 1, origin slice_1 at "
                  "/workspace/causal.py:20"))
      << fs[1]["message"];
  // The verdict's summary names the origin's rank before the receiving one.
  const auto& summary = report["summary"];
  std::size_t at1 = summary.size(), at0 = summary.size();
  for (std::size_t i = 0; i < summary.size(); ++i) {
    const std::string line = summary[i];
    if (line.starts_with("rank 1: first divergent node slice_1")) at1 = i;
    if (line.starts_with("rank 0: received at all_reduce (group tp '3') from rank 1")) at0 = i;
  }
  EXPECT_LT(at1, summary.size()) << summary.dump(1);
  EXPECT_LT(at0, summary.size()) << summary.dump(1);
  EXPECT_LT(at1, at0) << summary.dump(1);
  // The HTML report: the received finding links to its origin's row.
  std::ifstream f(html);
  const std::string page((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(page, "id=\"node-1-aot_forward_graph-slice_1\"")) << page;
  EXPECT_TRUE(has(page, "href=\"#node-1-aot_forward_graph-slice_1\"")) << page;
}

TEST(ReplayCausality, CompareNamesTheSendersFirstOriginAndTheWayItCame) {
  TempDir dir;
  const auto fs = node_findings(compare_runs(dir, "4/0", {}, "5/0"));
  ASSERT_GE(fs.size(), 2U);
  EXPECT_EQ(fs[0]["where"]["rank"], 1) << fs[0].dump();
  EXPECT_EQ(fs[0]["where"]["node"], "slice_1");
  EXPECT_EQ(fs[0]["values"]["cause"], "origin");
  const auto received =
      std::find_if(fs.begin(), fs.end(), [](const json& f) { return f["where"]["rank"] == 0; });
  ASSERT_NE(received, fs.end());
  EXPECT_EQ((*received)["values"]["cause"], "received") << received->dump();
  EXPECT_EQ((*received)["values"]["origin"]["node"], "slice_1") << received->dump();
  EXPECT_EQ((*received)["values"]["through"]["node"], "slice_2") << received->dump();
  EXPECT_TRUE(has((*received)["message"],
                  "origin slice_1 at /workspace/causal.py:30, reaching all_reduce "
                  "through slice_2 at /workspace/causal.py:32"))
      << (*received)["message"];
}

TEST(ReplayCausality, CompareNamesBothOriginsOfTwoGroups) {
  TempDir dir;
  const auto fs = node_findings(compare_runs(dir, "2/0"));
  ASSERT_EQ(fs.size(), 4U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(fs[i]["values"]["cause"], "origin") << fs[i].dump();
    EXPECT_EQ(fs[i]["where"]["node"], "slice_1") << fs[i].dump();
  }
  EXPECT_EQ(fs[0]["where"]["rank"], 1);
  EXPECT_EQ(fs[1]["where"]["rank"], 3);
  EXPECT_EQ(fs[2]["where"]["rank"], 0);
  EXPECT_EQ(fs[2]["values"]["cause"], "received");
  EXPECT_EQ(fs[2]["values"]["group"], "3");
  EXPECT_EQ(fs[2]["values"]["origin_rank"], 1);
  EXPECT_EQ(fs[3]["where"]["rank"], 2);
  EXPECT_EQ(fs[3]["values"]["cause"], "received");
  EXPECT_EQ(fs[3]["values"]["group"], "4");
  EXPECT_EQ(fs[3]["values"]["origin_rank"], 3);
}

}  // namespace
}  // namespace gparity
