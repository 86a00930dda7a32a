// Collective sequences: the eager / compile Flight Recorder facts of the samples, the functional
// collectives of the compile_tp TORCH_TRACE, and planted reorderings, changes, insertions and
// rank mismatches (reorderings must come out as permutations, never as deletes plus inserts).

#include "diff/collectives.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/model/base/input_error.hpp"
#include "tests/diff/graph_test_support.hpp"
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

}  // namespace
