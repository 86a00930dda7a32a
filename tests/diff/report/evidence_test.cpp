// The one evidence rule (diff/report/evidence.hpp) and every engine that finishes its verdict through
// it: zero compared items on either side is never parity (exit 2, "NOTHING COMPARED", the empty
// input named with the formats tried), and a rank whose input yielded nothing is missing
// evidence (exit 1), never an agreeing rank.

#include "diff/report/evidence.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/model/graph/graph.hpp"
#include "diff/checkpoints/checkpoint_compare.hpp"
#include "diff/collectives/collectives.hpp"
#include "diff/graphs/graph_report.hpp"
#include "diff/replay/node_compare.hpp"
#include "diff/runs/buckets.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::diff;
using gparity::testing::TempDir;

const std::string kEvidenceData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/";

std::vector<const Finding*> of_kind(const CollectingConsumer& c, std::string_view kind) {
  std::vector<const Finding*> out;
  for (const auto& f : c.findings)
    if (f.kind == kind) out.push_back(&f);
  return out;
}

Evidence two_sides(std::uint64_t a, std::uint64_t b, std::uint64_t compared) {
  Evidence e;
  e.what = "steps";
  e.sides = {{"baseline", "runs/a", a, "", "", {"trace v1 folder"}},
             {"candidate", "runs/b", b, "", "recorded no step", {"trace v1 folder"}}};
  e.compared = compared;
  return e;
}

/// A parity verdict finished through the rule.
CollectingConsumer finish(const Evidence& e, int exit_code = 0, std::string headline = "PARITY") {
  CollectingConsumer out;
  Verdict v;
  v.exit_code = exit_code;
  v.headline = std::move(headline);
  v.data = {{"evidence", {{"baseline", {{"world_size", 4}}}}}};
  EXPECT_EQ(finish_verdict(v, e, out), out.verdict.exit_code);
  return out;
}

TEST(EvidenceRule, EmptySideIsNothingComparedNamingTheInputAndTheFormatsTried) {
  const auto out = finish(two_sides(12, 0, 0));
  EXPECT_EQ(out.verdict.exit_code, 2);
  EXPECT_EQ(out.verdict.headline, "NOTHING COMPARED: runs/b recorded no step");
  const auto empty = of_kind(out, "input_yielded_nothing");
  ASSERT_EQ(empty.size(), 1U);
  EXPECT_EQ(empty[0]->severity, Severity::Error);
  EXPECT_EQ(empty[0]->where.source, "runs/b");
  EXPECT_EQ(empty[0]->message, "candidate runs/b recorded no step (tried: trace v1 folder)");
  ASSERT_EQ(of_kind(out, "nothing_compared").size(), 1U);
  EXPECT_TRUE(out.verdict.data["nothing_compared"].get<bool>());
  // The counts, and the engine's own evidence keys kept beside the rule's.
  const auto& ev = out.verdict.data["evidence"];
  EXPECT_EQ(ev["baseline"]["world_size"], 4);
  EXPECT_EQ(ev["baseline"]["items"], 12);
  EXPECT_EQ(ev["candidate"]["items"], 0);
  EXPECT_EQ(ev["candidate"]["tried"], nlohmann::json::array({"trace v1 folder"}));
  EXPECT_EQ(out.verdict.summary.back(), "compared: baseline 12 steps; candidate 0 steps");
}

TEST(EvidenceRule, BothSidesEmptyAndNoCounterpartAreNothingCompared) {
  auto both = finish(two_sides(0, 0, 0));
  EXPECT_EQ(both.verdict.exit_code, 2);
  EXPECT_EQ(
      both.verdict.headline,
      "NOTHING COMPARED: neither side yielded any steps: runs/a yielded no steps; runs/b recorded no step");
  EXPECT_EQ(of_kind(both, "input_yielded_nothing").size(), 2U);

  const auto apart = finish(two_sides(3, 3, 0));
  EXPECT_EQ(apart.verdict.exit_code, 2);
  EXPECT_EQ(apart.verdict.headline,
            "NOTHING COMPARED: no steps of the baseline had a counterpart in the candidate");
  EXPECT_TRUE(of_kind(apart, "input_yielded_nothing").empty());

  // The engine's reason wins, and the empty input is still named.
  auto e = two_sides(3, 0, 0);
  e.nothing_why = "the candidate recorded no step";
  EXPECT_EQ(finish(e).verdict.headline,
            "NOTHING COMPARED: the candidate recorded no step; nothing from candidate runs/b");
}

TEST(EvidenceRule, NothingComparedOverridesEveryVerdictButBadInput) {
  EXPECT_EQ(finish(two_sides(0, 0, 0), 1, "DIVERGENCE").verdict.exit_code, 2);
  const auto bad = finish(two_sides(0, 0, 0), 2, "BAD INPUT: unreadable");
  EXPECT_EQ(bad.verdict.exit_code, 2);
  EXPECT_EQ(bad.verdict.headline, "BAD INPUT: unreadable");
  EXPECT_EQ(of_kind(bad, "nothing_compared").size(), 1U);
}

TEST(EvidenceRule, RankWithoutEvidenceIsIncompleteNeverAgreeing) {
  auto e = two_sides(6, 4, 4);
  e.ranks = {
      {0, 3, 2, "", ""}, {1, 3, 2, "", ""}, {2, 0, 0, "", ""}, {3, 0, 0, "r3.pkl", "r3.pkl is a pickle"}};
  e.ranks[2].baseline = 3;  // rank 2: in the baseline only
  const auto out = finish(e);
  EXPECT_EQ(out.verdict.exit_code, 1);
  EXPECT_EQ(out.verdict.headline,
            "INCOMPLETE: ranks 2-3 yielded no steps (missing evidence); no divergence in what was compared");
  const auto gaps = of_kind(out, "rank_without_evidence");
  ASSERT_EQ(gaps.size(), 2U);
  EXPECT_EQ(gaps[0]->severity, Severity::Incomplete);
  EXPECT_EQ(gaps[0]->message,
            "rank 2 yielded no steps in the candidate: missing evidence, not an agreeing rank");
  EXPECT_EQ(
      gaps[1]->message,
      "rank 3 yielded no steps in either run (r3.pkl is a pickle): missing evidence, not an agreeing rank");
  EXPECT_EQ(out.verdict.data["evidence"]["ranks_without_evidence"], nlohmann::json::array({2, 3}));

  // Reported by the engine already: counted (exit 1), no second finding.
  for (auto& r : e.ranks) r.reported = true;
  const auto reported = finish(e);
  EXPECT_EQ(reported.verdict.exit_code, 1);
  EXPECT_TRUE(of_kind(reported, "rank_without_evidence").empty());

  // Allowed: parity on the evidence present, and the summary says what is missing.
  for (auto& r : e.ranks) r.reported = false;
  e.allow_incomplete = true;
  const auto allowed = finish(e);
  EXPECT_EQ(allowed.verdict.exit_code, 0);
  EXPECT_EQ(allowed.verdict.summary.back(), "missing evidence on ranks 2-3: allowed (--allow-incomplete)");
}

TEST(EvidenceRule, EnoughEvidenceKeepsTheVerdictAndSaysWhatWasCompared) {
  auto e = two_sides(12, 12, 3600);
  e.sides[0].detail = e.sides[1].detail = "12 steps x 300 parameters on 4 ranks";
  const auto out = finish(e);
  EXPECT_EQ(out.verdict.exit_code, 0);
  EXPECT_EQ(out.verdict.headline, "PARITY");
  EXPECT_TRUE(out.findings.empty());
  EXPECT_EQ(out.verdict.summary.back(), "compared: 12 steps x 300 parameters on 4 ranks each side");
  EXPECT_EQ(out.verdict.data["evidence"]["compared"], 3600);
  EXPECT_FALSE(out.verdict.data["nothing_compared"].get<bool>());
}

// ---- every engine ---------------------------------------------------------------------------

TEST(EvidenceEngines, CollectivesOfARunWithNoCollectiveAreNeverParity) {
  CollectiveRun run;
  run.path = "x.pkl";
  RankCollectives r0;
  r0.sources = {"x.pkl"};
  r0.nothing = {"x.pkl is a pickle but holds no Flight Recorder entries (it holds a list)"};
  run.ranks.push_back(r0);
  CollectingConsumer out;
  EXPECT_EQ(report_collectives(run, nullptr, out), 2);
  EXPECT_EQ(out.verdict.headline,
            "NOTHING COMPARED: x.pkl is a pickle but holds no Flight Recorder entries (it holds a list)");
  EXPECT_EQ(out.verdict.data["evidence"]["run"]["items"], 0);

  // Against a baseline that has collectives: the empty candidate is still nothing.
  CollectiveRun base;
  base.path = "base";
  RankCollectives b0;
  b0.streams.push_back({"pg 0", {}, {}});
  b0.streams.back().ops.push_back({});
  b0.streams.back().ops.back().kind = "all_reduce";
  base.ranks.push_back(b0);
  CollectingConsumer vs;
  EXPECT_EQ(report_collectives(run, &base, vs), 2);
  EXPECT_EQ(vs.verdict.data["evidence"]["baseline"]["items"], 1);
}

TEST(EvidenceEngines, CollectivesRankWithNoEntriesIsMissingEvidence) {
  CollectiveRun run;
  run.path = "dumps";
  for (int r = 0; r < 2; ++r) {
    RankCollectives rc;
    rc.rank = r;
    rc.sources = {"rank" + std::to_string(r) + ".json"};
    run.ranks.push_back(rc);
  }
  run.ranks[0].streams.push_back({"pg 0 (default_pg)", {}, {}});
  run.ranks[0].streams[0].ops.resize(3);
  run.ranks[1].nothing = {"rank1.json is a Flight Recorder dump with no entries"};
  CollectingConsumer out;
  EXPECT_GE(report_collectives(run, nullptr, out), 1);
  const auto gaps = of_kind(out, "rank_without_evidence");
  ASSERT_EQ(gaps.size(), 1U);
  EXPECT_EQ(gaps[0]->where.rank, 1);
  EXPECT_NE(gaps[0]->message.find("rank1.json is a Flight Recorder dump with no entries"), std::string::npos);
}

TEST(EvidenceEngines, BucketPlansWithNoMemberAreNeverParity) {
  BucketPlans a;
  a.path = "a";
  a.plans.push_back({"a/rank-0.jsonl", 0, "trace record", {}});
  BucketPlans b = a;
  b.path = "b";
  CollectingConsumer out;
  EXPECT_EQ(report_buckets(a, b, out), 2);
  EXPECT_EQ(out.verdict.headline.rfind("NOTHING COMPARED: neither side yielded any bucket members", 0), 0U)
      << out.verdict.headline;
}

TEST(EvidenceEngines, CheckpointsWithNoTensorAreNeverParity) {
  TempDir dir;
  const std::string header = "{}";
  std::string st(8, '\0');
  st[0] = static_cast<char>(header.size());
  st += header;
  const auto a = dir.write("a.safetensors", st);
  const auto b = dir.write("b.safetensors", st);
  CollectingConsumer out;
  EXPECT_EQ(compare_checkpoints(a, b, {}, out), 2);
  EXPECT_EQ(out.verdict.headline.rfind("NOTHING COMPARED: neither side yielded any parameters", 0), 0U)
      << out.verdict.headline;
  EXPECT_NE(out.verdict.headline.find(a + " holds no tensor"), std::string::npos);
  // Against a real checkpoint: the empty side is named.
  CollectingConsumer one;
  EXPECT_EQ(compare_checkpoints(kEvidenceData + "dcp/grid.safetensors", b, {}, one), 2);
  EXPECT_EQ(one.verdict.headline, "NOTHING COMPARED: " + b + " holds no tensor");
}

TEST(EvidenceEngines, GraphRanksWithNoGraphAreNeverParity) {
  TraceRanksReport r;
  r.ranks = {0, 1};
  CollectingConsumer out;
  emit(r, "trace/", out);
  EXPECT_EQ(out.verdict.exit_code, 2);
  EXPECT_EQ(out.verdict.headline,
            "NOTHING COMPARED: trace/ holds no graph (no TORCH_TRACE graph payload on any rank)");
  // A rank that logged no graph while another did: missing evidence.
  r.graphs.push_back({});
  r.graphs[0].kind = "aot_joint_graph";
  r.graphs[0].ranks = {0};
  const auto ruling = rule_on(ranks_evidence(r, "trace/"));
  EXPECT_EQ(ruling.exit_code, 1);
  EXPECT_EQ(ruling.ranks_without_evidence, std::vector<int>{1});
  // With the trace, the rank's log is named.
  gparity::model::MultiRankTrace trace;
  trace.ranks.resize(2);
  trace.ranks[0].rank = 0;
  trace.ranks[1].rank = 1;
  trace.ranks[1].path = "trace/rank_1.log";
  const auto named = rule_on(ranks_evidence(r, "trace/", &trace));
  ASSERT_EQ(named.findings.size(), 1U);
  EXPECT_EQ(named.findings[0].where.source, "trace/rank_1.log");
  EXPECT_EQ(named.findings[0].message,
            "rank 1 yielded no graphs (trace/rank_1.log): missing evidence, not an agreeing rank");
}

TEST(EvidenceEngines, GraphDiffAndDevicesOfEmptyGraphsAreNeverParity) {
  GraphDiffResult empty;  // two graphs of no node: identical, and nothing compared
  gparity::model::Graph g;
  CollectingConsumer out;
  emit(empty, g, "a.json", g, "b.json", out);
  EXPECT_EQ(out.verdict.exit_code, 2);
  EXPECT_EQ(out.verdict.headline.rfind("NOTHING COMPARED: neither side yielded any nodes", 0), 0U);
  const auto devices = rule_on(devices_evidence(g, "g.json"));
  EXPECT_EQ(devices.exit_code, 2);
  EXPECT_EQ(devices.headline, "NOTHING COMPARED: g.json holds a graph with no node");
}

TEST(EvidenceEngines, NodeComparisonWithNoRecordIsNeverParity) {
  NodeGraphResult r;
  r.graph = "aot_joint_graph 0/0";
  const auto ruling = rule_on(node_evidence(r, "a", 0, "b", 0));
  EXPECT_EQ(ruling.exit_code, 2);
  EXPECT_EQ(ruling.headline,
            "NOTHING COMPARED: neither side yielded any node records: a recorded no node; b "
            "recorded no node");
  r.compared = 5;
  EXPECT_EQ(rule_on(node_evidence(r, "a", 5, "b", 5)).exit_code, 0);
}

}  // namespace
