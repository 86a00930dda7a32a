// The replay verdict (diff/replay_verdict.*) on hand-written node records of two ranks of tp group
// '3', each rank judged with the other's exchanged records, as `gparity replay` does over the
// store: --coor with rank 1's graph wrong names rank 1 the origin and rank 0 received, runs
// rank 0 alone (safe by itself, or not when the alone run differs), and names origins first in
// the "all ranks" line; --against uses the same classification; one rank without collectives is
// judged as before.

#include "diff/replay/replay_verdict.hpp"

#include <gtest/gtest.h>

#include "tests/support/graph_test_support.hpp"

namespace {

using namespace gparity;
using model::NodeRecord;

using gparity::testing::kTpBody;
using gparity::testing::kTpNodes;

std::vector<NodeRecord> records(const std::string& label, const std::vector<std::string>& differ = {}) {
  std::vector<NodeRecord> out;
  int line = 20;
  for (const auto& n : kTpNodes) {
    NodeRecord r;
    r.graph = label;
    r.node = n;
    r.op = n == "x" || n == "w" ? "placeholder" : "aten." + n + ".default";
    r.source = "/workspace/coor.py:" + std::to_string(line++);
    r.dtype = model::DType::F32;
    r.shape = {8, 64};
    r.xxh3 = r.shard = std::find(differ.begin(), differ.end(), n) != differ.end() ? 2 : 1;
    r.has_xxh3 = true;
    out.push_back(r);
  }
  return out;
}

std::vector<NodeRecord> outputs(const std::vector<NodeRecord>& rs) {
  return {rs.back()};
}

const diff::causality::GroupTable kGroups = {{"3", {{0, 1}, "mesh_tp"}}};

/// Both ranks' --coor runs: own records everywhere equal, coor records differing as given.
struct TwoRanks {
  model::Graph g = gparity::testing::fx_graph(kTpBody);
  std::vector<std::vector<NodeRecord>> own, coor, own_out, coor_out;
  TwoRanks(const std::vector<std::string>& differ0, const std::vector<std::string>& differ1) {
    for (const auto* d : {&differ0, &differ1}) {
      own.push_back(records("own"));
      coor.push_back(records("own", *d));  // labels of the compared side do not matter
      own_out.push_back(outputs(own.back()));
      coor_out.push_back(outputs(coor.back()));
    }
  }
  diff::ReplayRankRun run(int r) const {
    const auto k = static_cast<std::size_t>(r);
    return {r, "own", "coor", {own[k], &g}, {coor[k], &g}, own_out[k], coor_out[k]};
  }
  /// Every rank's exchanged causal records, as the ranks would send them.
  std::vector<std::string> evidence() const {
    std::vector<std::string> out;
    for (int r = 0; r < 2; ++r) {
      const auto c = diff::compare_node_graph("own", run(r).a, run(r).b);
      out.push_back(diff::causality::to_json(diff::causality::RankRecords{r, c.causal}).dump());
    }
    return out;
  }
  /// Judges rank r; the "alone" exchange returns this rank's text and nothing from the other.
  diff::ReplayVerdict judge(int r, diff::ReplayMode mode, const diff::ReplayRunAlone& alone = {}) const {
    const auto ev = evidence();
    return diff::judge_replay(
        mode, run(r), kGroups,
        [&](const std::string& key, const std::string& text) {
          if (key == "causal-records") {
            EXPECT_EQ(text, ev[static_cast<std::size_t>(r)]) << "rank " << r << " sends its own records";
            return ev;
          }
          std::vector<std::string> all(2, "{}");
          all[static_cast<std::size_t>(r)] = text;
          return all;
        },
        alone);
  }
};

TEST(ReplayVerdict, CoorNamesTheOriginRankAndTheRankThatReceivedIt) {
  const TwoRanks t({"all_reduce", "wait_tensor", "mul"}, {"mm", "all_reduce", "wait_tensor", "mul"});
  int alone_runs = 0;
  const auto v0 = t.judge(0, diff::ReplayMode::Coor, [&](std::string&) {
    ++alone_runs;
    return records("coor-alone");  // with rank 1's correct contribution: rank 0's own bits
  });
  EXPECT_EQ(alone_runs, 1);
  EXPECT_FALSE(v0.equal);
  EXPECT_FALSE(v0.all_equal);
  EXPECT_EQ(v0.exit_code, 1);
  EXPECT_EQ(v0.json["cause"], "received");
  EXPECT_EQ(v0.json["from_ranks"], nlohmann::json::array({1}));
  EXPECT_EQ(v0.json["group"], "3");
  EXPECT_EQ(v0.json["collective"], "all_reduce");
  EXPECT_EQ(v0.json["origin_rank"], 1);
  EXPECT_EQ(v0.json["safe_alone"], true);
  EXPECT_TRUE(v0.text.starts_with("safe by itself, affected by rank 1: ")) << v0.text;
  EXPECT_NE(
      v0.text.find("received at all_reduce (group tp '3') from rank 1, origin mm at /workspace/coor.py:22"),
      std::string::npos)
      << v0.text;
  EXPECT_TRUE(
      v0.overall.starts_with("all ranks: unsafe: origin on rank 1: mm (aten.mm.default) at "
                             "/workspace/coor.py:22; rank 0 received at all_reduce"))
      << v0.overall;

  const auto v1 = t.judge(1, diff::ReplayMode::Coor, [&](std::string&) {
    ADD_FAILURE() << "rank 1 has an origin of its own: no alone run";
    return std::vector<NodeRecord>{};
  });
  EXPECT_EQ(v1.json["cause"], "origin");
  EXPECT_TRUE(v1.json["safe_alone"].is_null());
  EXPECT_EQ(
      v1.text,
      "unsafe: rank 0's graph, hoisted, differs from this rank's; first divergent node: mm (aten.mm.default) "
      "at /workspace/coor.py:22 <-> coor node mm; its inputs are equal (origin)");
  EXPECT_EQ(v1.exit_code, 1);
}

TEST(ReplayVerdict, ARankUnsafeByItselfBehindReceivedDamageIsNamed) {
  const TwoRanks t({"all_reduce", "wait_tensor", "mul"}, {"mm", "all_reduce", "wait_tensor", "mul"});
  const auto v0 =
      t.judge(0, diff::ReplayMode::Coor, [&](std::string&) { return records("coor-alone", {"mul"}); });
  EXPECT_EQ(v0.json["safe_alone"], false);
  EXPECT_NE(v0.json["alone_first_divergent"].get<std::string>().find("mul"), std::string::npos);
  EXPECT_TRUE(
      v0.text.starts_with("unsafe: rank 0's graph, hoisted, differs from this rank's even with its "
                          "partners' correct inputs; first divergent node: mul"))
      << v0.text;
  EXPECT_NE(v0.text.find("also affected by rank 1"), std::string::npos) << v0.text;
  // A collective the alone run cannot take a result for: unsafe, and why.
  const auto v0b = t.judge(0, diff::ReplayMode::Coor, [&](std::string& problem) {
    problem = "collective #0 on process group \"3\" has no counterpart";
    return std::vector<NodeRecord>{};
  });
  EXPECT_EQ(v0b.json["safe_alone"], false);
  EXPECT_NE(v0b.text.find("it cannot run alone: collective #0"), std::string::npos) << v0b.text;
}

TEST(ReplayVerdict, AgainstUsesTheSameClassificationAndEqualRanksStayQuiet) {
  const TwoRanks t({"all_reduce", "wait_tensor", "mul"}, {"mm", "all_reduce", "wait_tensor", "mul"});
  const auto v0 = t.judge(0, diff::ReplayMode::Against);
  EXPECT_TRUE(v0.text.starts_with("outputs differ; first divergent node: all_reduce")) << v0.text;
  EXPECT_NE(v0.text.find("received at all_reduce (group tp '3') from rank 1"), std::string::npos) << v0.text;
  EXPECT_FALSE(v0.json.contains("safe_alone")) << "no alone run without --coor";

  const TwoRanks same({}, {});
  const auto e = same.judge(1, diff::ReplayMode::Coor);
  EXPECT_TRUE(e.equal);
  EXPECT_TRUE(e.all_equal);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(e.text, "safe: rank 0's graph, hoisted, gives this rank's bits");
  EXPECT_EQ(e.overall, "all ranks: safe: rank 0's graph, hoisted, gives every rank's bits");
  // Rank 0 equal while rank 1 differs: rank 0's exit code is the overall one.
  const TwoRanks one({}, {"mul"});
  const auto v = one.judge(0, diff::ReplayMode::Coor);
  EXPECT_TRUE(v.equal);
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_EQ(v.text, "safe: rank 0's graph, hoisted, gives this rank's bits");
  EXPECT_NE(v.overall.find("origin on rank 1: mul"), std::string::npos) << v.overall;
  EXPECT_NE(v.overall.find("rank 0 safe"), std::string::npos) << v.overall;
}

}  // namespace
