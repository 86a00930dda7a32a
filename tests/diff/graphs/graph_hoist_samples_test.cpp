// Device and process-group hoisting on the real PyTorch 2.11 samples: rank 0's graphs, hoisted
// to rank r, against rank r's own graphs (graph diff without any normalization).
//  - torch-2.11-fsdp2-2rank `compile` (tests/data/graph/compile): every graph of rank 0 becomes
//    rank 1's graph exactly (the aten.full device= literals and every annotation move);
//  - `compile_rankbug`: what is left are the slice bounds (0,32 vs 32,64; aten slices, and
//    getitem/setitem in Dynamo's graphs), never a device or an annotation;
//  - torch-2.11-2x2mesh-mp (../shared/samples, skipped when absent): `compile`'s tp groups differ
//    per dp row ('3' on ranks 0,1; '4' on ranks 2,3); with the Flight Recorder pg_config every
//    graph of rank 0 becomes rank r's exactly; `compile_coor` stays different only on the ranks
//    whose dp coordinate differs from rank 0's (2 and 3), only in slice bounds.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/model/formats/torch_trace.hpp"
#include "core/model/graph/hoist.hpp"
#include "core/model/graph/process_groups.hpp"
#include "diff/graphs/graph_diff.hpp"
#include "tests/support/shared_data.hpp"

namespace {

using namespace gparity;
namespace fs = std::filesystem;

const std::string kHoistGraphs = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/";

// Where a rank-derived slice offset shows: aten slices in the aot and post-grad graphs, Python
// indexing in Dynamo's graphs.
const std::set<std::string> kSliceTargets = {"aten.slice.Tensor", "aten.slice_scatter.default",
                                             "operator.getitem", "operator.setitem"};

std::string shared_samples() {  // ../shared/samples or $GPARITY_SAMPLES; "" when absent
  const auto d = gparity::testing::samples_dir();
  std::error_code ec;
  return d && fs::is_directory(fs::path(*d) / "torch-2.11-2x2mesh-mp", ec) ? *d : std::string();
}

struct Outcome {
  std::size_t graphs = 0;
  std::size_t devices = 0, annotations = 0, groups = 0, unresolved = 0;
  std::set<std::string> changed_targets;  // targets of nodes that still differ
  std::set<std::string> changed_fields;   // "aten.slice.Tensor args[2]", ...
};

/// Every graph of rank 0 hoisted to `to` and diffed against rank `to`'s graph of the same kind,
/// compile id and occurrence.
Outcome hoist_all(const model::MultiRankTrace& t, int to, const model::ProcessGroupTable* groups) {
  Outcome out;
  const auto* r0 = t.rank(0);
  const auto* rt = t.rank(to);
  EXPECT_TRUE(r0 && rt);
  if (!r0 || !rt) return out;
  std::map<std::pair<std::string, std::string>, int> seen;
  for (const auto& g : r0->graphs) {
    const int occ = seen[{g.kind, g.compile.text()}]++;
    const auto same = rt->find_graphs(g.kind, g.compile);
    EXPECT_GT(same.size(), static_cast<std::size_t>(occ)) << g.kind;
    if (same.size() <= static_cast<std::size_t>(occ)) continue;
    model::HoistOptions o;
    o.source_rank = o.source_device = 0;
    o.target_rank = o.target_device = to;
    o.groups = groups;
    const auto h = model::hoist_graph(g.graph, o);
    ++out.graphs;
    out.devices += h.count(model::HoistChangeKind::DeviceLiteral);
    out.annotations += h.count(model::HoistChangeKind::Annotation);
    out.groups += h.count(model::HoistChangeKind::ProcessGroup);
    out.unresolved += h.unresolved.size();
    diff::GraphNormalization norm;
    norm.map_local_device = false;
    const diff::NormalizedGraph a(h.graph, norm, std::nullopt);
    const diff::NormalizedGraph b(same[static_cast<std::size_t>(occ)]->graph, norm, std::nullopt);
    const auto d = diff::diff_graphs(a, b);
    EXPECT_EQ(d.summary.added + d.summary.removed, 0U) << g.kind;
    for (const auto& c : d.changes) {
      if (c.a == model::kNoNode) continue;
      const std::string target(h.graph.str(h.graph.node(c.a).target));
      out.changed_targets.insert(target);
      for (const auto& f : c.fields) out.changed_fields.insert(target + " " + f.path);
    }
  }
  return out;
}

TEST(HoistSamples, CompileRank0GraphsBecomeRank1GraphsExactly) {
  const auto t = model::read_torch_trace_dir(kHoistGraphs + "compile");
  const auto groups = model::load_group_table({kHoistGraphs + "compile"}, {});
  ASSERT_EQ(groups.groups().size(), 1U);  // default_pg only: FSDP2 over the world
  const auto o = hoist_all(t, 1, &groups);
  EXPECT_EQ(o.graphs, 10U);
  EXPECT_GT(o.devices, 0U);
  EXPECT_GT(o.annotations, 500U);
  EXPECT_EQ(o.groups, 0U);
  EXPECT_EQ(o.unresolved, 0U);
  EXPECT_TRUE(o.changed_fields.empty()) << *o.changed_fields.begin();
}

TEST(HoistSamples, RankbugKeepsOnlyTheRankDependentSliceBounds) {
  const auto t = model::read_torch_trace_dir(kHoistGraphs + "compile_rankbug");
  const auto o = hoist_all(t, 1, nullptr);
  EXPECT_EQ(o.unresolved, 0U);
  EXPECT_GT(o.devices, 0U);
  EXPECT_EQ(o.changed_targets, kSliceTargets);
  for (const auto& f : o.changed_fields) EXPECT_EQ(f.find("meta"), std::string::npos) << f;
  for (const auto& f : o.changed_fields) EXPECT_EQ(f.find("device"), std::string::npos) << f;
}

TEST(HoistSamples, MeshGroupsHoistThroughFlightRecorderPgConfig) {
  const auto samples = shared_samples();
  if (samples.empty()) GTEST_SKIP() << "../shared/samples/torch-2.11-2x2mesh-mp not found";
  const auto run = samples + "/torch-2.11-2x2mesh-mp/compile";
  const auto t = model::read_torch_trace_dir(run + "/trace");
  const auto groups = model::load_group_table({run}, {});
  ASSERT_NE(groups.find("3"), nullptr);
  EXPECT_EQ(groups.find("3")->desc, "mesh_tp");
  EXPECT_EQ(groups.find("4")->ranks, (std::vector<std::int64_t>{2, 3}));
  for (const int to : {1, 2, 3}) {
    const auto o = hoist_all(t, to, &groups);
    EXPECT_EQ(o.graphs, 10U);
    EXPECT_EQ(o.unresolved, 0U) << "rank " << to;
    EXPECT_TRUE(o.changed_fields.empty()) << "rank " << to << ": " << *o.changed_fields.begin();
    // Same dp row as rank 0 (rank 1): same tp group, nothing to rename.
    if (to == 1) {
      EXPECT_EQ(o.groups, 0U);
    } else {
      EXPECT_GT(o.groups, 0U);
    }
  }
  // Without the group table the tp group of ranks 2 and 3 stays rank 0's, reported unresolved.
  const auto bare = hoist_all(t, 2, nullptr);
  EXPECT_GT(bare.unresolved, 0U);
  EXPECT_FALSE(bare.changed_fields.empty());
}

TEST(HoistSamples, MeshCoordinateSliceIsUnsafeExactlyOnOtherDpRows) {
  const auto samples = shared_samples();
  if (samples.empty()) GTEST_SKIP() << "../shared/samples/torch-2.11-2x2mesh-mp not found";
  const auto run = samples + "/torch-2.11-2x2mesh-mp/compile_coor";
  const auto t = model::read_torch_trace_dir(run + "/trace");
  const auto groups = model::load_group_table({run}, {});
  EXPECT_TRUE(hoist_all(t, 1, &groups).changed_fields.empty());
  for (const int to : {2, 3}) {
    const auto o = hoist_all(t, to, &groups);
    EXPECT_EQ(o.unresolved, 0U);
    EXPECT_EQ(o.changed_targets, kSliceTargets) << "rank " << to;
  }
}

}  // namespace
