// Issue 33: `gparity replay --node-hash lazy` (the default of --against, --coor and --repeat)
// hashes the graphs' outputs, the collectives' inputs and in-place writes first, and every node
// only on the ranks where those differ (each collective then taking its first pass's result:
// no communication). It must name what hashing every node (`--node-hash shard`) names: on every
// replay test input with a divergence (tests/data/replay: an op changed under --against, an
// in-place write that reaches no output, coor_trace's rank-dependent slice, causal_trace's
// compiles 1/0 to 4/0 on 4 ranks and 1/0 on 2), every rank's verdict (first divergent node,
// cause, origin, group, ranks, the alone run, the lines) and the exit code are the same in both
// modes, the second pass recorded every tensor of the first alike (deterministic), and the run
// directory judged again gives the same verdicts. The one input where the modes differ by design,
// a divergence that reaches no output (against_b.txt), is pinned in replay_test.cpp.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "core/model/run/trace_writer.hpp"
#include "diff/replay/replay_verdict.hpp"
#include "tests/runtime/replay_summaries.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity {
namespace {

using gparity::testing::replay_summaries;
using gparity::testing::run_command;
using gparity::testing::TempDir;
using json = nlohmann::json;

const std::filesystem::path kReplayData =
    std::filesystem::path(GPARITY_SOURCE_DIR) / "tests" / "data" / "replay";

struct ModeRun {
  int exit_code = 0;
  std::map<int, json> summaries;  // by rank
};

ModeRun replay_in_mode(const std::filesystem::path& out, std::vector<std::string> args,
                       const std::string& mode) {
  args.insert(args.begin(), "replay");
  for (const auto& a : {"--json", "--timeout", "60", "--node-hash"}) args.emplace_back(a);
  args.push_back(mode);
  args.push_back("--out");
  args.push_back(out.string());
  const auto r = run_command(GPARITY_EXE, args);
  EXPECT_NE(r.exit_code, 2) << r.out << r.err;
  return {r.exit_code, replay_summaries(r.out)};
}

/// Runs `args` lazily and hashing every node; every rank's verdict must be the same but for the
/// evidence counts (a rank whose first pass was equal compared its outputs and collective inputs).
/// Returns the lazy run's summaries.
std::map<int, json> expect_lazy_names_what_every_node_names(std::vector<std::string> args, int ranks,
                                                            int exit_code) {
  TempDir dir;
  const auto lazy = replay_in_mode(dir.path() / "lazy", args, "lazy");
  const auto every = replay_in_mode(dir.path() / "every", args, "shard");
  EXPECT_EQ(every.exit_code, exit_code);
  EXPECT_EQ(lazy.exit_code, every.exit_code);
  EXPECT_EQ(lazy.summaries.size(), static_cast<std::size_t>(ranks));
  EXPECT_EQ(every.summaries.size(), static_cast<std::size_t>(ranks));
  for (const auto& [rank, s] : every.summaries) {
    if (!lazy.summaries.contains(rank)) continue;
    const auto& l = lazy.summaries.at(rank);
    auto want = s["verdict"], got = l["verdict"];
    want.erase("evidence");
    got.erase("evidence");
    EXPECT_EQ(got, want) << "rank " << rank;
    // Every node hashed again exactly where this rank's executions differ, deterministically.
    EXPECT_EQ(s["node_hash"]["mode"], "shard");
    EXPECT_EQ(l["node_hash"]["mode"], "lazy");
    EXPECT_EQ(l["node_hash"]["every_node_pass"], !want["outputs_equal"].get<bool>()) << l.dump();
    EXPECT_EQ(l["node_hash"]["deterministic"], true) << l.dump();
  }
  // The lazy run directory, judged again from its records, gives the verdicts the ranks printed.
  for (const auto& v : diff::judge_replay_run((dir.path() / "lazy").string())) {
    if (!lazy.summaries.contains(v.rank)) continue;
    const auto& printed = lazy.summaries.at(v.rank)["verdict"];
    EXPECT_EQ(v.verdict.text, printed["text"].get<std::string>()) << v.rank;
    EXPECT_EQ(v.verdict.overall, printed["overall"].get<std::string>()) << v.rank;
    EXPECT_EQ(v.verdict.exit_code, lazy.exit_code) << v.rank;
  }
  return lazy.summaries;
}

std::vector<std::string> causal(const std::string& compile, int nproc) {
  return {(kReplayData / "causal_trace").string(),
          "--compile-id",
          compile,
          "--coor",
          "--nproc",
          std::to_string(nproc)};
}

TEST(ReplayLazy, AgainstAChangedOpNamesItsFirstNode) {
  const auto s = expect_lazy_names_what_every_node_names(
      {(kReplayData / "against_a.txt").string(), "--against", (kReplayData / "against_sub.txt").string()}, 1,
      1);
  EXPECT_EQ(s.at(0)["verdict"]["first_divergent"]["node"], "s1");
}

TEST(ReplayLazy, AnInPlaceWriteThatReachesNoOutputIsCompared) {
  // inplace_b.txt writes 3x into its input buf where inplace.txt writes 2x; the output (x + 1)
  // is equal: the write is the graph's only difference, and the first pass hashes it.
  const auto s = expect_lazy_names_what_every_node_names(
      {(kReplayData / "inplace.txt").string(), "--against", (kReplayData / "inplace_b.txt").string()}, 1, 1);
  EXPECT_EQ(s.at(0)["verdict"]["first_divergent"]["node"], "y");
  EXPECT_EQ(s.at(0)["verdict"]["cause"], "origin");
}

TEST(ReplayLazy, CoorARankDependentSlice) {
  const auto s = expect_lazy_names_what_every_node_names(
      {(kReplayData / "coor_trace").string(), "--compile-id", "1/0", "--coor", "--nproc", "2"}, 2, 1);
  EXPECT_EQ(s.at(1)["verdict"]["first_divergent"]["node"], "slice_1");
  EXPECT_EQ(s.at(0)["node_hash"]["every_node_pass"], false) << "rank 0 equal: outputs only";
}

TEST(ReplayLazy, CoorOneBuggyRankOnFourRanks) {
  // Ranks 2 and 3 equal in the first pass (their records: outputs and collective inputs), ranks 0
  // and 1 hash every node again: rank 0 still receives at the all-reduce, from rank 1.
  const auto s = expect_lazy_names_what_every_node_names(causal("1/0", 4), 4, 1);
  EXPECT_EQ(s.at(0)["verdict"]["cause"], "received");
  for (const int rank : {2, 3}) EXPECT_EQ(s.at(rank)["node_hash"]["every_node_pass"], false) << rank;
}

TEST(ReplayLazy, CoorOneBuggyRankOnTwoRanks) {
  expect_lazy_names_what_every_node_names(causal("1/0", 2), 2, 1);
}

TEST(ReplayLazy, CoorTwoGroupsWithABuggyRankEach) {
  expect_lazy_names_what_every_node_names(causal("2/0", 4), 4, 1);
}

TEST(ReplayLazy, CoorAReceivingRankRunAloneFindsItsOwnBug) {
  const auto s = expect_lazy_names_what_every_node_names(causal("3/0", 4), 4, 1);
  EXPECT_EQ(s.at(2)["verdict"]["safe_alone"], false);
}

TEST(ReplayLazy, CoorTheSendersFirstOriginAndTheWayItCame) {
  const auto s = expect_lazy_names_what_every_node_names(causal("4/0", 4), 4, 1);
  EXPECT_EQ(s.at(0)["verdict"]["through"]["node"], "slice_2");
}

TEST(ReplayLazy, ParityHashesOutputsAndCollectiveInputsOnly) {
  // collectives.txt against itself on 2 ranks: equal, so nothing is hashed again; the records are
  // the output's, the tensors the five collectives read (x, then each wait_tensor's result) and
  // the output's node, not the collectives' own results (wait_tensor's inputs).
  const auto graph = (kReplayData / "collectives.txt").string();
  const std::vector<std::string> args = {graph, "--against", graph, "--nproc", "2", "--group", "world=0,1"};
  const auto s = expect_lazy_names_what_every_node_names(args, 2, 0);
  for (const auto& [rank, j] : s) EXPECT_EQ(j["node_hash"]["every_node_pass"], false) << rank;
  TempDir dir;
  ASSERT_EQ(replay_in_mode(dir.path() / "run", args, "lazy").exit_code, 0);
  for (const int rank : {0, 1}) {
    const auto t = model::read_rank_trace(model::rank_trace_path(dir.path() / "run", rank).string(), rank);
    std::map<std::string, std::set<std::string>> nodes;
    for (const auto& n : t.nodes) nodes[n.graph].insert(n.node);
    const std::set<std::string> want = {"x", "a_w", "g_w", "r_w", "t_w", "b_w", "output"};
    EXPECT_EQ(nodes["a"], want) << rank;
    EXPECT_EQ(nodes["b"], want) << rank;
  }
}

}  // namespace
}  // namespace gparity
