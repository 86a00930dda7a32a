// tlparse's multi-rank facts (its tests/integration_test.rs), each on the input tlparse asserts
// it on, down to the compile id and operation: diverging compile ids, cache hit/miss groups,
// rank 1's collective schedule, tensor-metadata groups, and a graph's collectives against its
// output code; quiet where tlparse asserts no divergence. Excerpts of those inputs are checked in
// under tests/data/trace_facts (the records the facts come from); the whole corpus is read when
// present (GPARITY_TLPARSE_CORPUS or ../shared/external/tlparse), else those tests skip.

#include "diff/graphs/trace_facts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/rank_classify.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::diff;
namespace fs = std::filesystem;

const std::string kFactsData = GPARITY_SOURCE_DIR "/tests/data/trace_facts/";

gparity::model::TraceOptions records_only() {
  gparity::model::TraceOptions o;
  o.parse_graphs = false;
  return o;
}

TraceFacts facts_of(const std::string& dir) {
  return trace_facts(gparity::model::read_torch_trace_dir(dir, records_only()));
}

std::vector<const RankFinding*> with_field(const TraceFacts& f, std::string_view field) {
  std::vector<const RankFinding*> out;
  for (const auto& x : f.findings)
    if (x.field == field) out.push_back(&x);
  return out;
}

const FactGroups* groups_of(const TraceFacts& f, std::string_view fact) {
  for (const auto& g : f.groups)
    if (g.fact == fact) return &g;
  return nullptr;
}

std::string value_of(const RankFinding& f, std::int32_t rank) {
  for (const auto& v : f.values)
    if (v.rank == rank) return v.text;
  return "(none)";
}

std::string corpus_input(const std::string& name) {
  const auto c = gparity::testing::tlparse_corpus();
  if (!c) return "";
  return *c + "/inputs/" + name;
}

/// A folder of rank logs copied from corpus files (tlparse's tests build the same ones).
std::string ranks_of(const gparity::testing::TempDir& tmp, const std::vector<std::string>& files) {
  for (std::size_t r = 0; r < files.size(); ++r)
    fs::copy_file(files[r], tmp.path() / ("dedicated_log_torch_trace_rank_" + std::to_string(r) + ".log"));
  return tmp.path().string();
}

// ---- excerpts (always run) -------------------------------------------------------------------

TEST(TraceFacts, RankOnesCollectiveScheduleDiffersFromRanksZeroAndTwo) {
  const auto f = facts_of(kFactsData + "schedule");
  const auto* g = groups_of(f, "collective_schedule");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->groups.size(), 2U);
  EXPECT_EQ(g->groups[0].ranks, (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(g->groups[1].ranks, (std::vector<std::int32_t>{1}));
  const auto s = with_field(f, "collective_schedule");
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0]->compile, "0/0");
  EXPECT_EQ(value_of(*s[0], 0), "6 ops");
  EXPECT_EQ(value_of(*s[0], 2), "6 ops");
  EXPECT_TRUE(value_of(*s[0], 1).starts_with("4 ops; #4: torch.ops._c10d_functional.wait_tensor.default"))
      << value_of(*s[0], 1);
  EXPECT_EQ(s[0]->target, "torch.ops._c10d_functional.reduce_scatter_tensor.default");
}

TEST(TraceFacts, IdenticalSchedulesAreQuiet) {
  gparity::testing::TempDir tmp;
  const auto dir = ranks_of(tmp, {kFactsData + "schedule/dedicated_log_torch_trace_rank_0.log",
                                  kFactsData + "schedule/dedicated_log_torch_trace_rank_2.log"});
  const auto f = facts_of(dir);
  EXPECT_TRUE(f.findings.empty());
  EXPECT_TRUE(f.groups.empty());
}

TEST(TraceFacts, CacheHitMissPatternsFormMoreThanTwoGroups) {
  const auto f = facts_of(kFactsData + "cache");
  const auto* g = groups_of(f, "cache");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->groups.size(), 3U);
  EXPECT_EQ(g->groups[0].ranks, (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(g->groups[1].ranks, (std::vector<std::int32_t>{1}));
  EXPECT_EQ(g->groups[2].ranks, (std::vector<std::int32_t>{3}));
  EXPECT_EQ(g->groups[1].sequence, "20 hits, 10 misses, 0 bypasses");
  // Down to the compile id and the cache: compile 0/0's FX graph cache hit on ranks 1 and 3 only.
  const auto c = with_field(f, "cache");
  const auto it = std::find_if(c.begin(), c.end(), [](const RankFinding* x) {
    return x->compile == "0/0" && x->node == "fx_graph_cache";
  });
  ASSERT_NE(it, c.end());
  EXPECT_EQ(value_of(**it, 0), "absent");
  EXPECT_EQ(value_of(**it, 1), "hit");
  EXPECT_EQ(value_of(**it, 3), "hit");
  // Ranks 1 and 3 compiled 0/1..0/6 and rank 1 alone 0/7..0/14: compile-id divergence.
  const auto ids = with_field(f, "compile_id");
  ASSERT_EQ(ids.size(), 14U);
  EXPECT_EQ(ids.front()->compile, "0/1");
  EXPECT_EQ(value_of(*ids.front(), 3), "present");
  EXPECT_EQ(value_of(*ids.back(), 3), "absent");
}

TEST(TraceFacts, TensorMetaGroupsRanksFiveAndSix) {
  const auto f = facts_of(kFactsData + "tensor_meta");
  const auto* g = groups_of(f, "tensor_meta");
  ASSERT_NE(g, nullptr);
  const auto five_six = std::find_if(g->groups.begin(), g->groups.end(), [](const RankGroup& x) {
    return x.ranks == std::vector<std::int32_t>{5, 6};
  });
  EXPECT_NE(five_six, g->groups.end());
  EXPECT_EQ(g->groups.size(), 3U);  // 0, 4, (5, 6)
  // Named down to the op and key: compile 0/0 op 3's outputs differ on ranks 5 and 6.
  const auto t = with_field(f, "tensor_meta");
  const auto it = std::find_if(t.begin(), t.end(), [](const RankFinding* x) { return x->compile == "0/0"; });
  ASSERT_NE(it, t.end());
  EXPECT_NE(value_of(**it, 5).find("differs at ops[3].outputs"), std::string::npos) << value_of(**it, 5);
  EXPECT_EQ(value_of(**it, 4), "absent");
}

TEST(TraceFacts, GraphCollectivesThatDoNotMatchTheOutputCode) {
  const auto f = facts_of(kFactsData + "parity");
  const auto p = with_field(f, "collectives_vs_code");
  ASSERT_EQ(p.size(), 2U);  // tlparse: graphs -_0_0_0 and -_0_1_0
  EXPECT_EQ(p[0]->compile, "0/0");
  EXPECT_TRUE(value_of(*p[0], 0).starts_with("offset 0, missing waits 1")) << value_of(*p[0], 0);
  EXPECT_EQ(p[0]->node, "buf1");
  EXPECT_EQ(p[1]->compile, "0/1");
  EXPECT_TRUE(value_of(*p[1], 0).starts_with("offset 0, missing waits 3")) << value_of(*p[1], 0);
  EXPECT_EQ(p[1]->node, "buf4, buf11, buf12");
}

TEST(TraceFacts, CodeCollectivesSkipCommentsAndPairWaits) {
  const auto c = code_collectives(
      "# torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')\n"
      "buf2 = torch.ops._c10d_functional.all_gather_into_tensor.default(buf1, 2, '0')\n"
      "torch.ops._c10d_functional.all_reduce_.default(buf3, 'sum', '0')\n"
      "torch.ops._c10d_functional.wait_tensor.default(buf2)  # waits buf2\n");
  ASSERT_EQ(c.calls.size(), 2U);
  EXPECT_EQ(c.calls[0].first, "all_gather");
  EXPECT_EQ(c.calls[0].second, 2);
  EXPECT_EQ(c.calls[1].first, "all_reduce");
  EXPECT_EQ(c.waits, 1U);
  EXPECT_EQ(c.unwaited, (std::vector<std::string>{"buf3"}));
  EXPECT_EQ(collective_family("torch.ops._c10d_functional.reduce_scatter_tensor.default"), "reduce_scatter");
  EXPECT_EQ(collective_family("torch.ops.c10d.reduce_.default"), "reduce");
}

// ---- the whole corpus (skips when absent) ----------------------------------------------------

#define REQUIRE_CORPUS()                                                               \
  if (!gparity::testing::tlparse_corpus()) GTEST_SKIP() << "tlparse corpus not found"; \
  static_assert(true)

TEST(TraceFactsCorpus, DivergingCompileIdsInMultiRankLogs) {
  REQUIRE_CORPUS();
  const auto f = facts_of(corpus_input("multi_rank_logs"));
  EXPECT_EQ(with_field(f, "compile_id").size(), 14U);
  const auto* g = groups_of(f, "cache");
  ASSERT_NE(g, nullptr);
  EXPECT_GT(g->groups.size(), 2U);
}

TEST(TraceFactsCorpus, IdenticalLogsAreQuiet) {
  REQUIRE_CORPUS();
  for (const char* log : {"simple.log", "cache_hit_miss.log"}) {
    gparity::testing::TempDir tmp;
    const auto f = facts_of(ranks_of(tmp, {corpus_input(log), corpus_input(log)}));
    EXPECT_TRUE(f.findings.empty()) << log << ": " << f.findings.front().field;
    EXPECT_TRUE(f.groups.empty()) << log;
  }
}

TEST(TraceFactsCorpus, CacheHitsAgainstNoHitsDiverge) {
  REQUIRE_CORPUS();
  gparity::testing::TempDir tmp;
  const auto f = facts_of(ranks_of(tmp, {corpus_input("cache_hit_miss.log"), corpus_input("simple.log")}));
  const auto* g = groups_of(f, "cache");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->groups.size(), 2U);
  EXPECT_FALSE(with_field(f, "compile_id").empty());  // 1/0 only on rank 0
}

TEST(TraceFactsCorpus, CollectiveScheduleOfRankOne) {
  REQUIRE_CORPUS();
  const auto f = facts_of(corpus_input("multi_rank_schedule"));
  const auto* g = groups_of(f, "collective_schedule");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->groups.size(), 2U);
  EXPECT_EQ(g->groups[0].ranks, (std::vector<std::int32_t>{0, 2}));
  const auto s = with_field(f, "collective_schedule");
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0]->compile, "0/0");
  EXPECT_TRUE(value_of(*s[0], 1).starts_with("4 ops")) << value_of(*s[0], 1);
  gparity::testing::TempDir tmp;
  fs::path dir(corpus_input("multi_rank_schedule"));
  const auto quiet = facts_of(ranks_of(tmp, {(dir / "dedicated_log_torch_trace_rank_0_6u3fubwl.log").string(),
                                             (dir / "dedicated_log_torch_trace_rank_2.log").string()}));
  EXPECT_TRUE(with_field(quiet, "collective_schedule").empty());
  EXPECT_EQ(groups_of(quiet, "collective_schedule"), nullptr);
}

TEST(TraceFactsCorpus, TensorMetaDivergesAndGroupsRanksFiveAndSix) {
  REQUIRE_CORPUS();
  const auto f = facts_of(corpus_input("multi_rank_runtime"));
  const auto* g = groups_of(f, "tensor_meta");
  ASSERT_NE(g, nullptr);
  EXPECT_GT(g->groups.size(), 1U);
  EXPECT_TRUE(std::any_of(g->groups.begin(), g->groups.end(), [](const RankGroup& x) {
    return x.ranks == std::vector<std::int32_t>{5, 6};
  }));
  EXPECT_FALSE(with_field(f, "tensor_meta").empty());
}

TEST(TraceFactsCorpus, CollectivesParityMatchesTlparse) {
  REQUIRE_CORPUS();
  const auto f = facts_of(corpus_input("collectives_parity"));
  const auto p = with_field(f, "collectives_vs_code");
  ASSERT_EQ(p.size(), 2U);
  EXPECT_EQ(p[0]->compile, "0/0");
  EXPECT_TRUE(value_of(*p[0], 0).starts_with("offset 0, missing waits 1"));
  EXPECT_EQ(p[1]->compile, "0/1");
  EXPECT_TRUE(value_of(*p[1], 0).starts_with("offset 0, missing waits 3"));
}

TEST(TraceFactsCorpus, ClassifyTraceCarriesTheFacts) {
  REQUIRE_CORPUS();
  // `graph ranks` classifies graphs and facts together; the facts survive graphs it cannot parse.
  const auto trace = gparity::model::read_torch_trace_dir(corpus_input("multi_rank_schedule"));
  const auto r = classify_trace(trace, {}, {});
  EXPECT_EQ(r.verdict, GraphVerdict::Divergent);
  EXPECT_TRUE(std::any_of(r.findings.begin(), r.findings.end(), [](const RankFinding& x) {
    return x.field == "collective_schedule" && x.compile == "0/0";
  }));
  EXPECT_TRUE(std::any_of(r.fact_groups.begin(), r.fact_groups.end(),
                          [](const FactGroups& x) { return x.fact == "collective_schedule"; }));
}

}  // namespace
