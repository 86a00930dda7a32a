// N-way rank classification: each class of difference planted in small graphs written here
// (device literal, affine slice bounds, mesh-coordinate constant on a 2x4 mesh of 8 ranks,
// non-affine constant, other target, extra node, reordering, renamed nodes), then the facts
// the samples README states for torch-2.11-fsdp2-2rank compile and compile_rankbug.

#include <gtest/gtest.h>

#include <set>

#include "core/model/formats/torch_trace.hpp"
#include "diff/graph_report.hpp"
#include "diff/rank_classify.hpp"
#include "tests/diff/graph_test_support.hpp"

namespace {

using namespace gparity::diff;
using gparity::model::Graph;
using gparity::testing::fx_graph;
using gparity::testing::replace_all;

const std::string kBody = R"(mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
slice_1: "f32[8, 16][64, 1]cuda:{d}" = torch.ops.aten.slice.Tensor(mm, 1, {lo}, {hi})
full: "f32[8, 16][16, 1]cuda:{d}" = torch.ops.aten.full.default([8, 16], {c}, dtype = torch.float32, device = device(type='cuda', index={dev}))
add: "f32[8, 16][16, 1]cuda:{d}" = torch.ops.aten.add.Tensor(slice_1, full)
sin: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.sin.default(x)
cos: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.cos.default(w)
return (add, sin, cos))";

struct Plant {
  int lo = 0, hi = 16, c = 1;
  int dev = 0;  // the device literal
};

std::vector<Graph> graphs_for(int world, const std::function<Plant(int)>& plant,
                              const std::string& body = kBody) {
  std::vector<Graph> out;
  for (int r = 0; r < world; ++r) {
    const Plant p = plant(r);
    std::string b = replace_all(body, "{lo}", std::to_string(p.lo));
    b = replace_all(b, "{hi}", std::to_string(p.hi));
    b = replace_all(b, "{c}", std::to_string(p.c));
    b = replace_all(b, "{dev}", std::to_string(p.dev));
    out.push_back(fx_graph(b, r));
  }
  return out;
}

GraphClassification classify(const std::vector<Graph>& gs, const RankLayout& layout = {}) {
  std::vector<RankGraph> rg;
  for (std::size_t r = 0; r < gs.size(); ++r) rg.push_back({static_cast<std::int32_t>(r), &gs[r]});
  return classify_ranks(rg, GraphNormalization{}, layout);
}

TEST(GraphRanks, SameGraphOnEveryRankIsIdentical) {
  const auto gs = graphs_for(4, [](int) { return Plant{}; });
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::Identical);
  EXPECT_TRUE(c.findings.empty());
}

TEST(GraphRanks, DeviceLiteralEqualToRankIsDeviceParametric) {
  const auto gs = graphs_for(4, [](int r) { return Plant{0, 16, 1, r}; });
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::DeviceParametric);
  EXPECT_EQ(c.groups.size(),
            1U);  // annotations and literal say cuda:<rank>: the local-device mapping unifies them
  ASSERT_EQ(c.findings.size(), 1U);
  const auto& f = c.findings[0];
  EXPECT_EQ(f.cls, FindingClass::DeviceParametric);
  EXPECT_EQ(f.node, "full");
  EXPECT_EQ(f.field, "kwargs.device");
  ASSERT_EQ(f.values.size(), 4U);
  EXPECT_EQ(f.values[3].text, "device(type='cuda', index=3)");
}

TEST(GraphRanks, SameDeviceLiteralOnEveryRankIsNoRankFinding) {
  // cuda:0 baked on every rank is the same graph everywhere (graph devices reports it).
  const auto gs = graphs_for(4, [](int) { return Plant{0, 16, 1, 0}; });
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::Identical) << c.findings.size();
}

TEST(GraphRanks, DeviceLiteralOfAnotherRankIsDivergent) {
  const auto gs = graphs_for(4, [](int r) { return Plant{0, 16, 1, (r + 1) % 4}; });
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
}

TEST(GraphRanks, AffineSliceBoundsAreRankParametric) {
  const auto gs = graphs_for(4, [](int r) { return Plant{16 * r, 16 * r + 16, 1, 0}; });
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::RankParametric);
  ASSERT_EQ(c.findings.size(), 2U);
  EXPECT_EQ(c.findings[0].field, "args[2]");
  ASSERT_TRUE(c.findings[0].function);
  EXPECT_EQ(c.findings[0].function->text(), "16*rank");
  EXPECT_EQ(c.findings[1].field, "args[3]");
  EXPECT_EQ(c.findings[1].function->text(), "16*rank+16");
  EXPECT_EQ(c.groups.size(), 4U);
}

TEST(GraphRanks, NonAffineConstantIsDivergent) {
  const int cs[] = {0, 5, 7, 100};
  const auto gs = graphs_for(4, [&](int r) { return Plant{0, 16, cs[r], 0}; });
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].field, "args[1]");
  EXPECT_FALSE(c.findings[0].function);
}

TEST(GraphRanks, MeshCoordinateConstantOn2x4Mesh) {
  // 8 ranks on a 2x4 mesh: the constant is 10 * (row) + 3, i.e. 3,3,3,3,13,13,13,13.
  const auto gs = graphs_for(8, [](int r) { return Plant{0, 16, 10 * (r / 4) + 3, 0}; });
  RankLayout mesh;
  mesh.mesh = {2, 4};
  const auto c = classify(gs, mesh);
  EXPECT_EQ(c.verdict, GraphVerdict::RankParametric);
  ASSERT_EQ(c.findings.size(), 1U);
  ASSERT_TRUE(c.findings[0].function);
  EXPECT_EQ(c.findings[0].function->text(), "10*mesh[0]+3");
  // Without the mesh, no affine function of the rank fits: divergent.
  EXPECT_EQ(classify(gs).verdict, GraphVerdict::Divergent);
  // A function of the other coordinate (column): -2*col+7.
  const auto cols = graphs_for(8, [](int r) { return Plant{0, 16, -2 * (r % 4) + 7, 0}; });
  const auto cc = classify(cols, mesh);
  ASSERT_EQ(cc.findings.size(), 1U);
  EXPECT_EQ(cc.findings[0].function->text(), "-2*mesh[1]+7");
}

TEST(GraphRanks, OtherTargetIsDivergent) {
  const auto c = [&] {
    auto gs = graphs_for(4, [](int) { return Plant{}; });
    std::string b = replace_all(
        replace_all(replace_all(replace_all(kBody, "{lo}", "0"), "{hi}", "16"), "{c}", "1"), "{dev}", "0");
    gs[2] = fx_graph(replace_all(b, "aten.sin.default", "aten.tanh.default"), 2);
    return classify(gs);
  }();
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
  bool target = false;
  for (const auto& f : c.findings) {
    if (f.field == "target") {
      target = true;
      EXPECT_EQ(f.values[2].text, "aten.tanh.default");
      EXPECT_EQ(f.values[0].text, "aten.sin.default");
    }
  }
  EXPECT_TRUE(target);
}

std::string fill(const std::string& body) {
  return replace_all(replace_all(replace_all(replace_all(body, "{lo}", "0"), "{hi}", "16"), "{c}", "1"),
                     "{dev}", "0");
}

TEST(GraphRanks, ExtraNodeOnOneRankIsDivergent) {
  std::vector<Graph> gs;
  for (int r = 0; r < 3; ++r) gs.push_back(fx_graph(fill(kBody), r));
  gs.push_back(
      fx_graph(fill(replace_all(kBody, "return (add, sin, cos)",
                                "neg: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.neg.default(x)\n"
                                "return (add, sin, cos)")),
               3));
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
  ASSERT_FALSE(c.findings.empty());
  bool node = false;
  for (const auto& f : c.findings) {
    if (f.field == "node" && f.node == "neg") {
      node = true;
      EXPECT_EQ(f.values[3].text, "present");
      EXPECT_EQ(f.values[0].text, "absent");
    }
  }
  EXPECT_TRUE(node);
}

TEST(GraphRanks, ReorderingOnOneRankIsDivergent) {
  std::vector<Graph> gs;
  const std::string cos = "cos: \"f32[8, 64][64, 1]cuda:{d}\" = torch.ops.aten.cos.default(w)\n";
  gs.push_back(fx_graph(fill(kBody), 0));
  gs.push_back(fx_graph(fill(cos + replace_all(kBody, cos, "")), 1));
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].field, "order");
  EXPECT_EQ(c.findings[0].node, "cos");
}

TEST(GraphRanks, RenamedNodesOnOneRankAreIdentical) {
  std::vector<Graph> gs;
  gs.push_back(fx_graph(fill(kBody), 0));
  gs.push_back(fx_graph(replace_all(replace_all(fill(kBody), "sin", "sine"), "aten.sine", "aten.sin"), 1));
  ASSERT_EQ(gs[1].find_node("sine") != gparity::model::kNoNode, true);
  EXPECT_EQ(classify(gs).verdict, GraphVerdict::Identical);
}

TEST(GraphRanks, FitAffine) {
  const std::int32_t ranks[] = {0, 1, 2, 3};
  const std::int64_t down[] = {9, 6, 3, 0};
  const auto f = fit_affine(ranks, down, {});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->text(), "-3*rank+9");
  const std::int64_t half[] = {0, 0, 1, 1};  // rank/2: not affine with an integer slope
  EXPECT_FALSE(fit_affine(ranks, half, {}));
  RankLayout node;
  node.ranks_per_node = 2;
  const std::int64_t local[] = {5, 6, 5, 6};
  ASSERT_TRUE(fit_affine(ranks, local, node));
  EXPECT_EQ(fit_affine(ranks, local, node)->text(), "local_rank+5");
}

// ---- the samples -----------------------------------------------------------------------------

const std::string kData = GPARITY_SOURCE_DIR "/tests/data/graph/";

TEST(GraphRanksSamples, CompileRankbugIsRankParametricInTheSliceBoundsOnly) {
  const auto trace = gparity::model::read_torch_trace_dir(kData + "compile_rankbug");
  ASSERT_EQ(trace.ranks.size(), 2U);
  const auto r = classify_trace(trace, {}, {});
  EXPECT_EQ(r.verdict, GraphVerdict::RankParametric);
  EXPECT_TRUE(r.findings.empty());
  std::size_t rank_findings = 0, device_findings = 0;
  for (const auto& g : r.graphs) {
    EXPECT_EQ(g.ranks.size(), 2U);
    EXPECT_EQ(g.classification.verdict, GraphVerdict::RankParametric) << g.kind;
    for (const auto& f : g.classification.findings) {
      ASSERT_NE(f.cls, FindingClass::Divergent) << g.kind << " " << f.node << " " << f.field;
      if (f.cls == FindingClass::RankParametric) {
        ++rank_findings;
        ASSERT_TRUE(f.function);
        // Exactly the slice bounds: (0, 32) on rank 0, (32, 64) on rank 1.
        const std::set<std::string> fns{"32*rank", "32*rank+32"};
        EXPECT_TRUE(fns.contains(f.function->text())) << f.function->text();
        const std::set<std::string> targets{"aten.slice.Tensor", "aten.slice_scatter.default",
                                            "operator.getitem", "operator.setitem"};
        EXPECT_TRUE(targets.contains(f.target)) << f.target;
        EXPECT_EQ(f.source.rfind("/workspace/train_tiny.py:", 0), f.source.empty() ? std::string::npos : 0U);
      } else {
        ++device_findings;
        EXPECT_EQ(f.values[0].text, "device(type='cuda', index=0)");
        EXPECT_EQ(f.values[1].text, "device(type='cuda', index=1)");
      }
    }
    if (g.kind == "aot_forward_graph") {
      // README: the forward graph differs only in the slice / slice_scatter bounds.
      ASSERT_EQ(g.classification.findings.size(), 4U);
      for (const auto& f : g.classification.findings) EXPECT_EQ(f.cls, FindingClass::RankParametric);
    }
  }
  EXPECT_GT(rank_findings, 0U);
  EXPECT_GT(device_findings, 0U);
}

TEST(GraphRanksSamples, CompileIsDeviceParametricOnlyInAtenFull) {
  const auto trace = gparity::model::read_torch_trace_dir(kData + "compile");
  const auto r = classify_trace(trace, {}, {});
  EXPECT_EQ(r.verdict, GraphVerdict::DeviceParametric);
  bool joint = false;
  for (const auto& g : r.graphs) {
    EXPECT_NE(g.classification.verdict, GraphVerdict::Divergent) << g.kind;
    EXPECT_NE(g.classification.verdict, GraphVerdict::RankParametric) << g.kind;
    for (const auto& f : g.classification.findings) {
      EXPECT_EQ(f.cls, FindingClass::DeviceParametric);
      EXPECT_EQ(f.target, "aten.full.default");
      EXPECT_EQ(f.field, "kwargs.device");
    }
    if (g.kind == "aot_joint_graph") joint = g.classification.verdict == GraphVerdict::DeviceParametric;
  }
  EXPECT_TRUE(joint);
}

}  // namespace

namespace {

TEST(GraphRanksSamples, EmitsToTheFindingConsumer) {
  const auto trace = gparity::model::read_torch_trace_dir(kData + "compile_rankbug");
  const auto r = classify_trace(trace, {}, {});
  gparity::diff::CollectingConsumer c;
  emit(r, "compile_rankbug", c);
  EXPECT_EQ(c.verdict.exit_code, 1);
  EXPECT_EQ(c.verdict.headline, "rank-parametric");
  EXPECT_EQ(c.checks.size(), r.graphs.size());
  std::size_t n = 0;
  for (const auto& g : r.graphs) n += g.classification.findings.size();
  ASSERT_EQ(c.findings.size(), n);
  for (const auto& f : c.findings) {
    EXPECT_TRUE(f.kind == "graph_rank_parametric" || f.kind == "graph_device_parametric") << f.kind;
    EXPECT_FALSE(f.where.graph.empty());
  }
}

}  // namespace
