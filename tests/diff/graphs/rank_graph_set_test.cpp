// `graph ranks` at scale (issue 25): ranks' graphs held as one graph plus what differs
// (diff::RankGraphSet) must give what the straightforward path gives. Every case builds the ranks'
// graphs here, classifies them both ways (classify_ranks on the whole graphs, classify_rank_set
// on the set) and compares groups, fingerprints, verdict and every finding field by field; the
// set must also give back each graph exactly. Inputs: the small graphs of graph_ranks_test (each
// class of difference), the sample aot_joint_graph repeated with rank parameters, planted
// constants, added, removed, moved and renamed nodes, and the bundled TORCH_TRACE directories
// read both ways.

#include "diff/graphs/rank_graph_set.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/graph_report.hpp"
#include "diff/graphs/rank_classify.hpp"
#include "tests/support/graph_test_support.hpp"
#include "tests/support/rank_graph_maker.hpp"
#include "tests/support/shared_data.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gparity::diff;
using gparity::model::Graph;
using gparity::testing::fx_graph;
using gparity::testing::RankGraphMaker;
using gparity::testing::replace_all;

std::string finding_text(const RankFinding& f) {
  std::string s = std::string(finding_class_name(f.cls)) + "|" + f.node + "|" + f.target + "|" + f.field +
                  "|" + f.source + "|" + std::to_string(f.graph_line) + "|" + f.compile + "|" + f.note + "|";
  if (f.function) s += f.function->text() + "/" + f.function->inferred_mesh;
  for (const auto& v : f.values) s += "|r" + std::to_string(v.rank) + "=" + v.text;
  return s;
}

/// Both paths on the same graphs: the same answer, and the set gives each graph back.
GraphClassification expect_same(const std::vector<Graph>& graphs, const GraphNormalization& norm = {},
                                const RankLayout& layout = {}, bool parallel = false) {
  std::vector<RankGraph> rg;
  for (std::size_t r = 0; r < graphs.size(); ++r) rg.push_back({static_cast<std::int32_t>(r), &graphs[r]});
  const auto want = classify_ranks(rg, norm, layout);
  RankGraphSet set(norm, layout.ranks_per_node);
  if (parallel) {
    // Rank 0 first, then the others from two threads, in any order.
    set.add(0, graphs[0]);
    std::vector<std::thread> pool;
    for (int t = 0; t < 2; ++t) {
      pool.emplace_back([&, t] {
        for (std::size_t r = graphs.size() - 1 - static_cast<std::size_t>(t); r >= 1 && r < graphs.size();
             r -= 2)
          set.add(static_cast<std::int32_t>(r), graphs[r]);
      });
    }
    for (auto& th : pool) th.join();
  } else {
    for (std::size_t r = 0; r < graphs.size(); ++r) set.add(static_cast<std::int32_t>(r), graphs[r]);
  }
  const auto got = classify_rank_set(set, layout);
  EXPECT_EQ(got.groups, want.groups);
  EXPECT_EQ(got.fingerprints, want.fingerprints);
  EXPECT_EQ(got.verdict, want.verdict);
  EXPECT_EQ(got.findings.size(), want.findings.size());
  for (std::size_t i = 0; i < std::min(got.findings.size(), want.findings.size()); ++i)
    EXPECT_EQ(finding_text(got.findings[i]), finding_text(want.findings[i])) << "finding " << i;
  for (const auto* m : set.members())
    EXPECT_TRUE(gparity::model::graphs_equal(set.materialize(*m), graphs[static_cast<std::size_t>(m->rank)]))
        << "rank " << m->rank;
  return want;
}

std::vector<Graph> small_graphs(int world, const std::function<std::string(int)>& body_of) {
  std::vector<Graph> out;
  for (int r = 0; r < world; ++r) out.push_back(fx_graph(body_of(r), r));
  return out;
}

std::string body(int lo, int hi, int c, int dev) {
  return gparity::testing::planted_body(gparity::testing::kPlantedRankBody, lo, hi, c, dev);
}

TEST(RankGraphSet, EachClassOfDifferenceAsTheStraightforwardPath) {
  // identical, device-parametric, rank-parametric, divergent constant, foreign device literal
  expect_same(small_graphs(4, [](int) { return body(0, 16, 1, 0); }));
  EXPECT_EQ(expect_same(small_graphs(4, [](int r) { return body(0, 16, 1, r); })).verdict,
            GraphVerdict::DeviceParametric);
  EXPECT_EQ(expect_same(small_graphs(8, [](int r) { return body(16 * r, 16 * r + 16, 1, r); })).verdict,
            GraphVerdict::RankParametric);
  EXPECT_EQ(expect_same(small_graphs(4, [](int r) { return body(0, 16, r == 2 ? 7 : 1, r); })).verdict,
            GraphVerdict::Divergent);
  expect_same(small_graphs(4, [](int r) { return body(0, 16, 1, r == 3 ? 1 : r); }));
  expect_same(small_graphs(4, [](int) { return body(0, 16, 1, 0); }), {}, mesh_override_layout("2x2"));
  // another target, an extra node, a reordering, renamed nodes
  expect_same(small_graphs(4, [](int r) {
    auto b = body(0, 16, 1, r);
    return r == 1 ? replace_all(b, "aten.sin.default", "aten.tanh.default") : b;
  }));
  expect_same(small_graphs(4, [](int r) {
    auto b = body(0, 16, 1, r);
    return r == 2 ? replace_all(b, "return (add, sin, cos)",
                                "neg: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.neg.default(x)\n"
                                "return (add, sin, cos)")
                  : b;
  }));
  expect_same(small_graphs(4, [](int r) {
    auto b = body(0, 16, 1, r);
    if (r != 1) return b;
    const std::string sin = "sin: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.sin.default(x)\n";
    const std::string cos = "cos: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.cos.default(w)\n";
    return replace_all(b, sin + cos, cos + sin);
  }));
  expect_same(small_graphs(4, [](int r) {
    auto b = body(0, 16, 1, r);
    return r == 3 ? replace_all(replace_all(b, "sin", "sine"), "cos", "cosine") : b;
  }));
}

TEST(RankGraphSet, NormalizationOptionsAsTheStraightforwardPath) {
  const auto graphs = small_graphs(8, [](int r) { return body(16 * r, 16 * r + 16, 1, r % 4); });
  RankLayout per_node;
  per_node.ranks_per_node = 4;
  expect_same(graphs, {}, per_node);
  GraphNormalization no_local;
  no_local.map_local_device = false;
  expect_same(graphs, no_local);
  GraphNormalization symbols;
  symbols.renumber_symbols = true;
  expect_same(graphs, symbols);
}

class RepeatedSample : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path dir = fs::path(GPARITY_SOURCE_DIR) / "tests/data/graph/compile";
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.path().filename().string().starts_with("dedicated_log_torch_trace_rank_0_")) continue;
      auto t = gparity::model::read_torch_trace(e.path().string());
      for (auto& g : t.graphs)
        if (g.kind == "aot_joint_graph") sample_ = new Graph(std::move(g.graph));
    }
  }
  static void TearDownTestSuite() {
    delete sample_;
    sample_ = nullptr;
  }
  static Graph* sample_;
};
Graph* RepeatedSample::sample_ = nullptr;

TEST_F(RepeatedSample, RankParametersDevicesAndAPlantedConstant) {
  ASSERT_NE(sample_, nullptr);
  const RankGraphMaker maker(*sample_, 3000, 6);
  ASSERT_EQ(maker.rank_params(), 6U);
  std::vector<Graph> graphs;
  for (int r = 0; r < 12; ++r)
    graphs.push_back(maker.rank_graph(r, r, true, r == 7 ? std::optional<std::int64_t>(1224) : std::nullopt));
  const auto c = expect_same(graphs);
  EXPECT_EQ(c.groups.size(), 12U);  // every rank its own group: the rank parameters differ
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
  std::size_t rank_parametric = 0;
  for (const auto& f : c.findings) rank_parametric += f.cls == FindingClass::RankParametric;
  EXPECT_GE(rank_parametric, 4U);     // 6 parameters, a few of which may share a node or the plant
  expect_same(graphs, {}, {}, true);  // added from two threads
  // Devices only: one group, device-parametric, and the set holds one graph.
  std::vector<Graph> devices;
  for (int r = 0; r < 6; ++r) devices.push_back(maker.rank_graph(r, r, false));
  EXPECT_EQ(expect_same(devices).verdict, GraphVerdict::DeviceParametric);
  RankGraphSet set({}, 0);
  for (int r = 0; r < 6; ++r) set.add(r, devices[static_cast<std::size_t>(r)]);
  EXPECT_EQ(set.base_count(), 1U);
  EXPECT_EQ(set.patched_nodes(), 0U);
}

TEST_F(RepeatedSample, NodesAddedRemovedMovedAndRenamedOnSomeRanks) {
  ASSERT_NE(sample_, nullptr);
  const RankGraphMaker maker(*sample_, 1500, 3);
  std::vector<Graph> graphs;
  for (int r = 0; r < 8; ++r) graphs.push_back(maker.rank_graph(r, r, true));
  const std::size_t mid = graphs[0].nodes.size() / 2;
  // rank 2: two adjacent independent nodes swap their targets and arguments (same names);
  // rank 3: a node's target changes; rank 4: a node renamed; rank 5: a foreign device literal
  // equal to rank 0's device; rank 6: an extra node at the end (structurally different).
  auto& g2 = graphs[2];
  std::swap(g2.nodes[mid].target, g2.nodes[mid + 1].target);
  std::swap(g2.nodes[mid].args, g2.nodes[mid + 1].args);
  std::swap(g2.nodes[mid].kwargs, g2.nodes[mid + 1].kwargs);
  graphs[3].nodes[mid + 10].target = graphs[3].intern("aten.tanh.default");
  graphs[4].nodes[mid + 20].name = graphs[4].intern("renamed_node");
  for (auto& n : graphs[5].nodes) {
    for (auto& kw : n.kwargs) {
      if (kw.value.kind == gparity::model::ValueKind::Device) kw.value.device.index = 0;
    }
  }
  auto& g6 = graphs[6];
  auto extra = g6.nodes[mid];
  extra.name = g6.intern("extra_node");
  g6.nodes.insert(g6.nodes.end() - 1, extra);
  expect_same(graphs);
  expect_same(graphs, {}, {}, true);
}

// The bundled traces (and the shared samples when present), read whole and read for scale: the
// same report, as JSON.
// Every rank's graph that is not a base of its own must have been read by its differences
// (RankGraphSet::add_text): the device digits rewritten, the statements that differ (aten.full's
// device literal, the rank bug's slice bounds, tp group names) parsed alone.
void expect_same_trace(const std::string& dir, const RankLayout& layout = {}) {
  SCOPED_TRACE(dir);
  const GraphNormalization norm;
  const auto whole = classify_trace(gparity::model::read_torch_trace_dir(dir), norm, layout);
  const auto input = read_ranks_input(dir, norm, layout.ranks_per_node);
  const auto sets = classify_trace(input, layout);
  EXPECT_EQ(to_json(sets).dump(), to_json(whole).dump());
  EXPECT_FALSE(whole.graphs.empty());
  std::size_t from_text = 0, members = 0;
  for (const auto& g : input.graphs) {
    for (const auto* m : g.set->members()) {
      from_text += m->from_text;
      members += !m->is_base;
    }
  }
  EXPECT_GT(members, 0U);
  EXPECT_EQ(from_text, members);
}

TEST(RankGraphSet, TorchTraceDirectoriesAsTheStraightforwardPath) {
  const fs::path data = fs::path(GPARITY_SOURCE_DIR) / "tests/data/graph";
  for (const char* d : {"compile", "compile_rankbug", "compile_tp"}) expect_same_trace((data / d).string());
  if (const auto samples = gparity::testing::samples_dir()) {
    const fs::path mesh = fs::path(*samples) / "torch-2.11-2x2mesh-mp";
    for (const char* d : {"compile", "compile_coor"}) {
      if (fs::exists(mesh / d / "trace")) expect_same_trace((mesh / d / "trace").string());
    }
  }
}

}  // namespace
