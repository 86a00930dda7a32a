// Collective sequences: the eager / compile Flight Recorder facts of the samples, the functional
// collectives of the compile_tp TORCH_TRACE, and planted reorderings, changes, insertions and
// rank mismatches (reorderings must come out as permutations, never as deletes plus inserts).

#include "diff/collectives/collectives.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "tests/support/graph_test_support.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::diff;
using gparity::testing::TempDir;

const std::string kGraphs = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/";

CollectiveOp op(std::string kind, std::int64_t numel) {
  CollectiveOp o;
  o.kind = std::move(kind);
  o.input_shapes = {"[" + std::to_string(numel) + "]"};
  o.input_dtypes = {"float32"};
  return o;
}

std::vector<CollectiveOp> ops(std::initializer_list<std::pair<const char*, std::int64_t>> list) {
  std::vector<CollectiveOp> v;
  for (const auto& [k, n] : list) v.push_back(op(k, n));
  return v;
}

std::size_t count_kind(const CollectingConsumer& c, std::string_view kind) {
  return static_cast<std::size_t>(
      std::count_if(c.findings.begin(), c.findings.end(), [&](const Finding& f) { return f.kind == kind; }));
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return nlohmann::json::parse(s.str());
}

std::string write_json(const TempDir& dir, const std::string& name, const nlohmann::json& j) {
  return dir.write(name, j.dump());
}

/// The entry with that collective_seq_id.
nlohmann::json& entry(nlohmann::json& dump, std::int64_t seq) {
  for (auto& e : dump["entries"])
    if (e["collective_seq_id"] == seq) return e;
  throw std::runtime_error("no entry " + std::to_string(seq));
}

TEST(DiffSequences, SwappedPairIsOneReorderingNotDeletesAndInserts) {
  const auto a = ops({{"all_gather", 10}, {"all_gather", 20}, {"reduce_scatter", 30}, {"all_reduce", 1}});
  const auto b = ops({{"all_gather", 10}, {"reduce_scatter", 30}, {"all_gather", 20}, {"all_reduce", 1}});
  const auto d = diff_sequences(a, b);
  ASSERT_EQ(d.reorderings.size(), 1u);
  EXPECT_EQ(d.reorderings[0].a, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(d.reorderings[0].b, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(d.reorderings[0].permutation(), "2 1");
  EXPECT_TRUE(d.added.empty());
  EXPECT_TRUE(d.removed.empty());
  EXPECT_TRUE(d.changed.empty());
  EXPECT_EQ(d.same.size(), 2u);
}

TEST(DiffSequences, RotationIsOnePermutationOfTheWholeBlock) {
  const auto a = ops({{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}});
  const auto b = ops({{"b", 2}, {"c", 3}, {"d", 4}, {"a", 1}});
  const auto d = diff_sequences(a, b);
  ASSERT_EQ(d.reorderings.size(), 1u);
  EXPECT_EQ(d.reorderings[0].permutation(), "2 3 4 1");
  EXPECT_TRUE(d.same.empty());
}

TEST(DiffSequences, ChangedSizeInPlaceIsAChange) {
  const auto a = ops({{"ag", 10}, {"ag", 20}, {"rs", 30}});
  const auto b = ops({{"ag", 10}, {"ag", 21}, {"rs", 30}});
  const auto d = diff_sequences(a, b);
  ASSERT_EQ(d.changed.size(), 1u);
  EXPECT_EQ(d.changed[0].a, 1u);
  EXPECT_EQ(d.changed[0].b, 1u);
  EXPECT_TRUE(d.reorderings.empty());
  EXPECT_TRUE(d.added.empty() && d.removed.empty());
}

TEST(DiffSequences, InsertionIsAnAdditionAndKeepsTheRestInPlace) {
  const auto a = ops({{"ag", 10}, {"ag", 10}, {"rs", 30}});
  const auto b = ops({{"ag", 10}, {"ar", 1}, {"ag", 10}, {"rs", 30}});
  const auto d = diff_sequences(a, b);
  EXPECT_EQ(d.added, (std::vector<std::size_t>{1}));
  EXPECT_TRUE(d.removed.empty());
  EXPECT_TRUE(d.changed.empty());
  EXPECT_TRUE(d.reorderings.empty());
  EXPECT_EQ(d.same.size(), 3u);
}

TEST(DiffSequences, ReorderingAndChangeTogether) {
  const auto a = ops({{"x", 1}, {"y", 2}, {"z", 3}, {"w", 4}, {"v", 5}});
  const auto b = ops({{"y", 2}, {"x", 1}, {"z", 3}, {"w", 40}, {"v", 5}});
  const auto d = diff_sequences(a, b);
  ASSERT_EQ(d.reorderings.size(), 1u);
  EXPECT_EQ(d.reorderings[0].a, (std::vector<std::size_t>{0, 1}));
  ASSERT_EQ(d.changed.size(), 1u);
  EXPECT_EQ(d.changed[0].a, 3u);
  EXPECT_TRUE(d.added.empty() && d.removed.empty());
}

TEST(CollectivesSample, EagerAndCompileFlightRecorderSequencesAgree) {
  const std::vector<std::string> eager{kGraphs + "eager/rank0_flight_recorder.json",
                                       kGraphs + "eager/rank1_flight_recorder.json"};
  const std::vector<std::string> compile{kGraphs + "compile/rank0_flight_recorder.json",
                                         kGraphs + "compile/rank1_flight_recorder.json"};
  const auto base = load_collectives(eager);
  const auto cand = load_collectives(compile);
  ASSERT_EQ(cand.ranks.size(), 2u);
  for (const auto& rc : cand.ranks) {
    ASSERT_EQ(rc.streams.size(), 1u);
    EXPECT_EQ(rc.streams[0].name, "pg 0 (default_pg)");
    EXPECT_EQ(rc.streams[0].ranks, (std::vector<std::int64_t>{0, 1}));
    ASSERT_EQ(rc.streams[0].ops.size(), 198u);
    // FSDP2's first all-gather: the root's per-rank shard (49,200 floats) gathered over 2 ranks.
    EXPECT_EQ(rc.streams[0].ops[0].signature(), "_all_gather_base ([49200] float32) -> ([98400] float32)");
    EXPECT_EQ(rc.streams[0].ops[11].kind, "all_reduce");
  }
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(cand, &base, c), 0);
  // Every difference would be a reordering or a change; there are none.
  for (const auto& f : c.findings) EXPECT_NE(f.severity, Severity::Divergence) << f.message;
  EXPECT_EQ(c.verdict.data["reorderings"], 0);
  EXPECT_EQ(c.verdict.data["changed"], 0);
  ASSERT_FALSE(c.checks.empty());
  for (const auto& ch : c.checks) EXPECT_EQ(ch.outcome, Check::Outcome::Pass) << ch.name;
}

TEST(CollectivesSample, PlantedSwapAndResizeAreAReorderingAndAChange) {
  TempDir dir;
  auto dump = read_json(kGraphs + "compile/rank0_flight_recorder.json");
  // Swap the all_reduce (#12) with the first coalesced all-gather (#13); resize #20.
  std::swap(entry(dump, 12)["collective_seq_id"], entry(dump, 13)["collective_seq_id"]);
  entry(dump, 20)["input_sizes"] = nlohmann::json::array({nlohmann::json::array({50})});
  const auto cand_path = write_json(dir, "rank0_flight_recorder.json", dump);
  const std::vector<std::string> base_paths{kGraphs + "eager/rank0_flight_recorder.json"};
  const std::vector<std::string> cand_paths{cand_path};
  const auto base = load_collectives(base_paths);
  const auto cand = load_collectives(cand_paths);
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(cand, &base, c), 1);
  EXPECT_EQ(count_kind(c, "collective_reordered"), 1u);
  EXPECT_EQ(count_kind(c, "collective_changed"), 1u);
  EXPECT_EQ(count_kind(c, "collective_added"), 0u);
  EXPECT_EQ(count_kind(c, "collective_removed"), 0u);
  for (const auto& f : c.findings) {
    if (f.kind == "collective_reordered") {
      EXPECT_EQ(f.values["baseline_positions"], nlohmann::json::array({12, 13}));
      EXPECT_EQ(f.values["candidate_positions"], nlohmann::json::array({13, 12}));
      EXPECT_EQ(f.values["permutation"], "2 1");
    }
    if (f.kind == "collective_changed") {
      EXPECT_EQ(f.values["baseline_position"], 20);
      EXPECT_NE(f.message.find("([48] float32)"), std::string::npos) << f.message;
      EXPECT_NE(f.message.find("([50] float32)"), std::string::npos) << f.message;
    }
  }
}

TEST(CollectivesSample, RankThatDepartsIsNamedAtItsFirstMismatch) {
  TempDir dir;
  auto r1 = read_json(kGraphs + "eager/rank1_flight_recorder.json");
  entry(r1, 50)["input_dtypes"] = nlohmann::json::array({"BFloat16"});
  entry(r1, 60)["input_dtypes"] = nlohmann::json::array({"BFloat16"});
  const std::vector<std::string> paths{kGraphs + "eager/rank0_flight_recorder.json",
                                       write_json(dir, "rank1_flight_recorder.json", r1)};
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(load_collectives(paths), nullptr, c), 1);
  ASSERT_EQ(count_kind(c, "collective_rank_mismatch"), 1u);  // the first mismatch only
  const auto& f = c.findings.back();
  EXPECT_EQ(f.where.rank, 1);
  EXPECT_EQ(f.values["position"], 50);
  EXPECT_NE(f.message.find("bfloat16"), std::string::npos) << f.message;
}

TEST(CollectivesSample, DroppedTailIsACountMismatch) {
  TempDir dir;
  auto r1 = read_json(kGraphs + "eager/rank1_flight_recorder.json");
  auto& entries = r1["entries"];
  entries.erase(entries.end() - 3, entries.end());
  const std::vector<std::string> paths{kGraphs + "eager/rank0_flight_recorder.json",
                                       write_json(dir, "rank1_flight_recorder.json", r1)};
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(load_collectives(paths), nullptr, c), 1);
  ASSERT_EQ(count_kind(c, "collective_rank_mismatch"), 1u);
  EXPECT_EQ(c.findings.back().values["this_count"], 195);
  EXPECT_EQ(c.findings.back().values["reference_count"], 198);
}

TEST(CollectivesGraph, CompileTpTraceHasTheSameFunctionalCollectivesOnBothRanks) {
  const std::vector<std::string> paths{kGraphs + "compile_tp"};
  const auto run = load_collectives(paths);
  ASSERT_EQ(run.ranks.size(), 2u);
  const auto& r0 = run.ranks[0];
  ASSERT_FALSE(r0.streams.empty());
  bool saw_all_reduce = false, saw_wait = false;
  for (const auto& s : r0.streams) {
    for (const auto& o : s.ops) {
      if (o.kind == "all_reduce" && o.output_dtypes[0] == "float32") {
        saw_all_reduce = true;
        EXPECT_EQ(o.params, "sum");
        EXPECT_EQ(o.group, "0");
      }
      saw_wait = saw_wait || o.kind == "wait_tensor";
    }
  }
  EXPECT_TRUE(saw_all_reduce);
  EXPECT_TRUE(saw_wait);
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 0);
  EXPECT_EQ(count_kind(c, "collective_rank_mismatch"), 0u);
}

TEST(CollectivesGraph, FunctionalCollectivesOfAnFxGraphWithSizesAndGroup) {
  const auto g = gparity::testing::fx_graph(
      "all_reduce: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops._c10d_functional.all_reduce.default(x, 'sum', "
      "'3')\n"
      "wait_tensor: \"f32[8, 64][64, 1]cuda:{d}\" = "
      "torch.ops._c10d_functional.wait_tensor.default(all_reduce)\n"
      "ag: \"f32[16, 64][64, 1]cuda:{d}\" = "
      "torch.ops._c10d_functional.all_gather_into_tensor.default(wait_tensor, "
      "2, '3')\n"
      "return (ag,)");
  const auto s = collectives_from_graph(g, "g");
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0].signature(), "all_reduce sum ([8, 64] float32) -> ([8, 64] float32)");
  EXPECT_EQ(s.ops[0].group, "3");
  EXPECT_EQ(s.ops[1].kind, "wait_tensor");
  EXPECT_EQ(s.ops[1].group, "3");  // the group of the collective it waits on
  EXPECT_EQ(s.ops[2].signature(), "all_gather_into_tensor 2 ([8, 64] float32) -> ([16, 64] float32)");
  EXPECT_EQ(s.ops[2].where, "ag");
}

TEST(CollectivesInput, PathWithNeitherDumpNorLogIsAnInputError) {
  TempDir dir;
  dir.write("readme.txt", "nothing");
  const std::vector<std::string> paths{dir.path().string()};
  EXPECT_THROW(load_collectives(paths), gparity::model::InputError);
}

// ---- rooted collectives, states, graphs against Flight Recorder ----------------------------

CollectiveOp scatter(bool root, std::string received = "[288, 192]") {
  CollectiveOp o;
  o.kind = "scatter";
  o.input_shapes = {std::move(received)};
  o.input_dtypes = {"float32"};
  if (root) {
    o.output_shapes = {"[288, 192]", "[288, 192]"};
    o.output_dtypes = {"float32", "float32"};
  } else {
    o.output_shapes = {"[0]"};
    o.output_dtypes = {"UNKNOWN_SCALAR"};
  }
  o.group = "3";
  o.state = "completed";
  return o;
}

CollectiveRun fr_run(const std::vector<std::vector<CollectiveOp>>& per_rank,
                     const std::string& name = "pg 3 (mesh_tp)") {
  CollectiveRun run;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    RankCollectives rc;
    rc.rank = static_cast<std::int32_t>(r);
    CollectiveStream s;
    s.name = name;
    s.ops = per_rank[r];
    rc.streams.push_back(s);
    run.ranks.push_back(rc);
  }
  return run;
}

TEST(CollectivesRooted, ScatterRootAndNonRootRecordsAreNotAMismatch) {
  // distribute_tensor's scatter: the root records the scatter list, the others a [0] placeholder.
  EXPECT_TRUE(rooted_records_match(scatter(true), scatter(false)));
  EXPECT_TRUE(rooted_records_match(scatter(false), scatter(true)));
  const auto run = fr_run({{scatter(true)}, {scatter(false)}});
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 0);
  EXPECT_EQ(count_kind(c, "collective_rank_mismatch"), 0U);
  EXPECT_EQ(c.verdict.data["rooted_pairs"], 1);
}

TEST(CollectivesRooted, ScatterWithAnotherShardShapeIsAMismatch) {
  EXPECT_FALSE(rooted_records_match(scatter(true), scatter(false, "[144, 192]")));
  auto wrong_list = scatter(true);
  wrong_list.output_shapes = {"[288, 192]", "[144, 192]"};  // the root's list does not match the shard
  EXPECT_FALSE(rooted_records_match(wrong_list, scatter(false)));
  auto all_reduce = scatter(true);
  all_reduce.kind = "all_reduce";  // not rooted: sizes must be equal
  auto all_reduce_b = scatter(false);
  all_reduce_b.kind = "all_reduce";
  EXPECT_FALSE(rooted_records_match(all_reduce, all_reduce_b));
  const auto run = fr_run({{scatter(true)}, {scatter(false, "[144, 192]")}});
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  EXPECT_EQ(count_kind(c, "collective_rank_mismatch"), 1U);
}

TEST(CollectivesStates, EntriesNotCompletedAreReportedAsFrTraceDoes) {
  auto started = op("all_reduce", 64);
  started.state = "started";
  started.where = "record 7";
  auto done = op("all_reduce", 64);
  done.state = "completed";
  const auto run = fr_run({{done, started}, {done, done}});
  CollectingConsumer c;
  report_collectives(run, nullptr, c);
  ASSERT_EQ(count_kind(c, "collective_not_completed"), 1U);
  const auto it = std::find_if(c.findings.begin(), c.findings.end(),
                               [](const Finding& f) { return f.kind == "collective_not_completed"; });
  EXPECT_EQ(it->where.rank, 0);
  EXPECT_EQ(it->where.node, "record 7");
  EXPECT_EQ(c.verdict.data["not_completed"], 1);
}

CollectiveRun graph_and_fr(std::int64_t graph_numel) {
  auto run = fr_run({{op("all_reduce", 64), op("_all_gather_base", 32), op("all_reduce", 64)}});
  for (auto& o : run.ranks[0].streams[0].ops) o.group = "3";
  CollectiveStream g;
  g.name = "0/0 inductor_post_grad_graph";
  auto ag = op("all_gather_into_tensor", 32);
  ag.group = "3";
  ag.where = "all_gather_into_tensor";
  auto w = op("wait_tensor", 32);
  auto ar = op("all_reduce_", graph_numel);
  ar.group = "3";
  ar.where = "all_reduce";
  g.ops = {ag, w, ar};
  run.ranks[0].streams.push_back(g);
  return run;
}

TEST(CollectivesGraphVsFlightRecorder, GraphCollectivesFoundInOrderPass) {
  const auto run = graph_and_fr(64);
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 0);
  EXPECT_EQ(c.verdict.data["graphs_checked"], 1);
  EXPECT_EQ(c.verdict.data["graph_mismatches"], 0);
}

TEST(CollectivesGraphVsFlightRecorder, GraphCollectiveThatDidNotRunIsNamed) {
  const auto run = graph_and_fr(48);  // the graph's all_reduce has sizes no recorded one has
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  ASSERT_EQ(count_kind(c, "collective_graph_not_run"), 1U);
  const auto it = std::find_if(c.findings.begin(), c.findings.end(),
                               [](const Finding& f) { return f.kind == "collective_graph_not_run"; });
  EXPECT_EQ(it->where.node, "all_reduce");
  auto other_group = graph_and_fr(64);
  other_group.ranks[0].streams[1].ops[2].group = "9";
  CollectingConsumer c2;
  EXPECT_EQ(report_collectives(other_group, nullptr, c2), 1);
  EXPECT_EQ(count_kind(c2, "collective_graph_group_not_recorded"), 1U);
}

TEST(CollectivesMeshSample, NoCollectiveMismatchInTheFlightRecorderDumps) {
  const auto samples = gparity::testing::samples_dir();
  if (!samples) GTEST_SKIP() << "samples not found";
  for (const char* run_name : {"eager", "compile", "compile_coor"}) {
    const std::string dir = *samples + "/torch-2.11-2x2mesh-mp/" + run_name;
    const std::vector<std::string> paths{dir};
    const auto run = load_collectives(paths);
    ASSERT_EQ(run.ranks.size(), 4U) << run_name;
    CollectingConsumer c;
    EXPECT_EQ(report_collectives(run, nullptr, c), 0) << run_name;
    EXPECT_EQ(count_kind(c, "collective_rank_mismatch"), 0U) << run_name;
    // The tp scatter of distribute_tensor on both dp rows: root and non-root records.
    EXPECT_GT(c.verdict.data["rooted_pairs"].get<int>(), 0) << run_name;
    if (std::string(run_name) != "eager") {
      EXPECT_GT(c.verdict.data["graphs_checked"].get<int>(), 0) << run_name;
      EXPECT_EQ(c.verdict.data["graph_mismatches"], 0) << run_name;
    }
  }
}

CollectiveRun p2p_run(std::int64_t recv_numel, int sends) {
  CollectiveRun run;
  for (std::int32_t r = 0; r < 2; ++r) {
    gparity::model::FlightRecorderDump d;
    d.rank = r;
    d.groups.push_back({"0", "0", "default_pg", {0, 1}});
    for (int k = 0; k < (r == 0 ? sends : 1); ++k) {
      gparity::model::FlightRecorderEntry e;
      e.record_id = k;
      e.pg_name = "0";
      e.is_p2p = true;
      e.p2p_seq_id = k + 1;
      e.profiling_name = r == 0 ? "nccl:send 0->1" : "nccl:recv 1<-0";
      e.input_sizes = {{r == 0 ? 64 : recv_numel}};
      e.input_dtypes = {"Float"};
      e.state = "completed";
      d.entries.push_back(e);
    }
    RankCollectives rc;
    rc.rank = r;
    rc.streams = collectives_from_flight_recorder(d);
    run.ranks.push_back(rc);
  }
  return run;
}

TEST(CollectivesP2p, SendPairsWithThePeersRecv) {
  const auto run = p2p_run(64, 1);
  ASSERT_EQ(run.ranks[0].streams[0].ops[0].kind, "send");
  EXPECT_EQ(run.ranks[1].streams[0].ops[0].src, 0);
  EXPECT_EQ(run.ranks[1].streams[0].ops[0].dst, 1);
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 0);  // send on 0, recv on 1: not a rank mismatch
  EXPECT_EQ(c.verdict.data["p2p_pairs"], 1);
}

TEST(CollectivesP2p, SizeMismatchAndUnmatchedSendAreNamed) {
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(p2p_run(32, 1), nullptr, c), 1);
  EXPECT_EQ(count_kind(c, "collective_p2p_mismatch"), 1U);
  CollectingConsumer c2;
  EXPECT_EQ(report_collectives(p2p_run(64, 2), nullptr, c2), 1);
  EXPECT_EQ(count_kind(c2, "collective_p2p_unmatched"), 1U);
}

}  // namespace

namespace {

std::string collectives_error(const std::vector<std::string>& paths) {
  try {
    load_collectives(paths);
  } catch (const gparity::model::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CollectivesInput, TwoDumpsOfOneRankAreRefusedNamingBoth) {
  TempDir dir;
  const auto dump = read_json(kGraphs + "eager/rank0_flight_recorder.json");
  write_json(dir, "rank0_flight_recorder.json", dump);
  write_json(dir, "rank00_flight_recorder.json", dump);
  const auto what = collectives_error({dir.path().string()});
  EXPECT_NE(what.find("two Flight Recorder dumps of one rank"), std::string::npos) << what;
  EXPECT_NE(what.find("rank0_flight_recorder.json"), std::string::npos) << what;
  EXPECT_NE(what.find("rank00_flight_recorder.json"), std::string::npos) << what;
}

TEST(CollectivesInput, SymbolicLinkLoopInTheFolderIsNamed) {
  TempDir dir;
  write_json(dir, "rank0_flight_recorder.json", read_json(kGraphs + "eager/rank0_flight_recorder.json"));
  std::filesystem::create_symlink(dir.path() / "loop", dir.path() / "loop");
  const auto what = collectives_error({dir.path().string()});
  EXPECT_NE(what.find("loop: symbolic link loop"), std::string::npos) << what;
}

}  // namespace

namespace {

// A folder's dumps are read on every core and added in file order: the run and the first error
// are those of a one-by-one read.
TEST(CollectivesFolder, ManyDumpsReadInParallelKeepRankOrderAndTheFirstError) {
  TempDir dir;
  auto r0 = read_json(kGraphs + "eager/rank0_flight_recorder.json");
  auto r1 = read_json(kGraphs + "eager/rank1_flight_recorder.json");
  // Twelve ranks of one group: a dump's file name must name a rank its groups hold.
  const std::string twelve = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]";
  r0["pg_config"]["0"]["ranks"] = twelve;
  r1["pg_config"]["0"]["ranks"] = twelve;
  for (int r = 0; r < 12; ++r) {
    auto dump = r % 2 == 0 ? r0 : r1;
    if (r == 9) entry(dump, 40)["input_sizes"] = nlohmann::json::array({nlohmann::json::array({7})});
    write_json(dir, "rank" + std::to_string(r) + "_flight_recorder.json", dump);
  }
  const std::vector<std::string> folder{dir.path().string()};
  const auto run = load_collectives(folder);
  ASSERT_EQ(run.ranks.size(), 12u);
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    EXPECT_EQ(run.ranks[r].rank, static_cast<std::int32_t>(r));
    ASSERT_EQ(run.ranks[r].sources.size(), 1u);
    EXPECT_NE(run.ranks[r].sources[0].find("rank" + std::to_string(r) + "_"), std::string::npos);
  }
  CollectingConsumer c;
  EXPECT_EQ(report_collectives(run, nullptr, c), 1);
  ASSERT_EQ(count_kind(c, "collective_rank_mismatch"), 1u);
  for (const auto& f : c.findings)
    if (f.kind == "collective_rank_mismatch") {
      EXPECT_EQ(f.where.rank, 9);
    }

  // Two damaged dumps: the error names the first in file order, whichever worker read it first.
  dir.write("rank3_flight_recorder.json", R"({"entries": [{"record_id": 1.5, "profiling_name": "x"}]})");
  dir.write("rank7_flight_recorder.json", R"({"entries": [{"record_id": 1}]})");
  try {
    load_collectives(folder);
    ADD_FAILURE() << "no error";
  } catch (const gparity::model::InputError& e) {
    EXPECT_NE(e.source().find("rank3_flight_recorder.json"), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find("\"record_id\" is not an integer"), std::string::npos) << e.what();
  }
}

}  // namespace
