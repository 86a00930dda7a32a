// N-way rank classification: each class of difference planted in small graphs written here
// (device literal, affine slice bounds, mesh-coordinate constant on a 2x4 mesh of 8 ranks,
// non-affine constant, other target, extra node, reordering, renamed nodes), then the facts
// the samples README states for torch-2.11-fsdp2-2rank compile and compile_rankbug.

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/graph_report.hpp"
#include "diff/graphs/mesh.hpp"
#include "diff/graphs/rank_classify.hpp"
#include "tests/support/graph_test_support.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::diff;
using gparity::model::Graph;
using gparity::testing::fx_graph;
using gparity::testing::replace_all;

using gparity::testing::kPlantedRankBody;

struct Plant {
  int lo = 0, hi = 16, c = 1;
  int dev = 0;  // the device literal
};

std::vector<Graph> graphs_for(int world, const std::function<Plant(int)>& plant,
                              const std::string& body = kPlantedRankBody) {
  std::vector<Graph> out;
  for (int r = 0; r < world; ++r) {
    const Plant p = plant(r);
    out.push_back(fx_graph(gparity::testing::planted_body(body, p.lo, p.hi, p.c, p.dev), r));
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
    const std::string b = gparity::testing::planted_body(kPlantedRankBody, 0, 16, 1, 0);
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
  return gparity::testing::planted_body(body, 0, 16, 1, 0);
}

TEST(GraphRanks, ExtraNodeOnOneRankIsDivergent) {
  std::vector<Graph> gs;
  for (int r = 0; r < 3; ++r) gs.push_back(fx_graph(fill(kPlantedRankBody), r));
  gs.push_back(
      fx_graph(fill(replace_all(kPlantedRankBody, "return (add, sin, cos)",
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
  gs.push_back(fx_graph(fill(kPlantedRankBody), 0));
  gs.push_back(fx_graph(fill(cos + replace_all(kPlantedRankBody, cos, "")), 1));
  const auto c = classify(gs);
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].field, "order");
  EXPECT_EQ(c.findings[0].node, "cos");
}

TEST(GraphRanks, RenamedNodesOnOneRankAreIdentical) {
  std::vector<Graph> gs;
  gs.push_back(fx_graph(fill(kPlantedRankBody), 0));
  gs.push_back(
      fx_graph(replace_all(replace_all(fill(kPlantedRankBody), "sin", "sine"), "aten.sine", "aten.sin"), 1));
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

const std::string kRanksGraphs = GPARITY_SOURCE_DIR "/tests/data/graph/";

TEST(GraphRanksSamples, CompileRankbugIsRankParametricInTheSliceBoundsOnly) {
  const auto trace = gparity::model::read_torch_trace_dir(kRanksGraphs + "compile_rankbug");
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
  const auto trace = gparity::model::read_torch_trace_dir(kRanksGraphs + "compile");
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
  const auto trace = gparity::model::read_torch_trace_dir(kRanksGraphs + "compile_rankbug");
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

// ---- meshes: 2x2x2 planted, read from artifacts, inferred; process-group-parametric ---------

RankLayout mesh_2x2x2() {
  RankLayout l;
  l.mesh = {2, 2, 2};
  l.mesh_names = {"pp", "dp", "tp"};
  return l;
}

TEST(GraphRanksMesh, ConstantsThatFollowACoordinateOfA2x2x2MeshAreNamed) {
  const auto layout = mesh_2x2x2();
  const auto tp = [&](int r) { return layout.coordinates(r)[2]; };
  const auto dp = [&](int r) { return layout.coordinates(r)[1]; };
  const auto gs = graphs_for(8, [&](int r) {
    return Plant{48 * dp(r), 48 * dp(r) + 16, 32 * tp(r) + 32, r};
  });
  const auto c = classify(gs, layout);
  EXPECT_EQ(c.verdict, GraphVerdict::RankParametric);
  std::set<std::string> texts;
  for (const auto& f : c.findings)
    if (f.function) texts.insert(f.field + " = " + f.function->text());
  EXPECT_TRUE(texts.contains("args[2] = 48*dp")) << ::testing::PrintToString(texts);
  EXPECT_TRUE(texts.contains("args[3] = 48*dp + 16")) << ::testing::PrintToString(texts);
  EXPECT_TRUE(texts.contains("args[1] = 32*tp + 32")) << ::testing::PrintToString(texts);
}

TEST(GraphRanksMesh, ConstantOverTwoCoordinatesIsASumOfNamedTerms) {
  const auto layout = mesh_2x2x2();
  std::vector<std::int32_t> ranks;
  std::vector<std::int64_t> values;
  for (int r = 0; r < 8; ++r) {
    const auto c = layout.coordinates(r);
    ranks.push_back(r);
    values.push_back(10 * c[0] + 3 * c[2] + 1);  // pp and tp, not dp
  }
  const auto f = fit_affine(ranks, values, layout);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->text(), "10*pp + 3*tp + 1");
  values[5] += 1;  // one rank off: no function
  EXPECT_FALSE(fit_affine(ranks, values, layout));
}

TEST(GraphRanksMesh, WithoutMeshTheWorldSizeFactorizationsAreTriedAndSaidInferred) {
  const std::int32_t ranks[] = {0, 1, 2, 3};
  const std::int64_t row[] = {0, 0, 48, 48};
  RankLayout none;
  EXPECT_FALSE(fit_affine(ranks, row, none));  // no mesh and no world size: nothing to infer from
  none.infer_world = 4;
  const auto f = fit_affine(ranks, row, none);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->text(), "48*mesh[0]");
  EXPECT_EQ(f->inferred_mesh, "2x2 inferred from world size 4");
  EXPECT_EQ(mesh_factorizations(8), (std::vector<std::vector<std::int32_t>>{{2, 4}, {4, 2}, {2, 2, 2}}));
}

const std::string kCollectiveBody = R"(mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
all_reduce: "f32[8, 64][64, 1]cuda:{d}" = torch.ops._c10d_functional.all_reduce.default(mm, 'sum', '{g}')
wait_tensor: "f32[8, 64][64, 1]cuda:{d}" = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
return (wait_tensor,))";

std::vector<Graph> collective_graphs(int world, const std::function<std::string(int)>& group) {
  std::vector<Graph> out;
  for (int r = 0; r < world; ++r) out.push_back(fx_graph(replace_all(kCollectiveBody, "{g}", group(r)), r));
  return out;
}

TEST(GraphRanksMesh, TpGroupNamedPerSliceIsProcessGroupParametric) {
  const auto layout = mesh_2x2x2();
  // One tp group per (pp, dp) slice: ranks 0-1 '4', 2-3 '5', 4-5 '6', 6-7 '7'.
  const auto gs = collective_graphs(8, [](int r) { return std::to_string(4 + r / 2); });
  const auto c = classify(gs, layout);
  EXPECT_EQ(c.verdict, GraphVerdict::ProcessGroupParametric);
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].cls, FindingClass::ProcessGroupParametric);
  EXPECT_EQ(c.findings[0].node, "all_reduce");
  EXPECT_NE(c.findings[0].note.find("one group per tp slice"), std::string::npos) << c.findings[0].note;
  EXPECT_NE(c.findings[0].note.find("DeviceMesh"), std::string::npos);
  // The dp groups: ranks sharing (pp, tp): {0,2}, {1,3}, {4,6}, {5,7}.
  const auto dp = collective_graphs(8, [&](int r) {
    const auto k = layout.coordinates(r);
    return "g" + std::to_string(k[0] * 2 + k[2]);
  });
  const auto cd = classify(dp, layout);
  ASSERT_EQ(cd.findings.size(), 1U);
  EXPECT_NE(cd.findings[0].note.find("one group per dp slice"), std::string::npos) << cd.findings[0].note;
}

TEST(GraphRanksMesh, FlightRecorderGroupRanksConfirmOrContradictTheSlices) {
  auto layout = mesh_2x2x2();
  const auto gs = collective_graphs(8, [](int r) { return std::to_string(4 + r / 2); });
  layout.group_ranks = {{"4", {0, 1}}, {"5", {2, 3}}};
  EXPECT_EQ(classify(gs, layout).verdict, GraphVerdict::ProcessGroupParametric);
  layout.group_ranks = {{"5", {0, 1}}};  // the pg_config says group '5' is ranks 0, 1: rank 2 cannot use it
  const auto c = classify(gs, layout);
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_NE(c.findings[0].note.find("does not hold rank 2"), std::string::npos) << c.findings[0].note;
}

TEST(GraphRanksMesh, GroupNamesThatAreNoMeshSliceStayDivergent) {
  const auto layout = mesh_2x2x2();
  // Rank 3 uses another group than its tp partner rank 2: a real difference.
  const auto gs =
      collective_graphs(8, [](int r) { return r == 3 ? std::string("9") : std::to_string(4 + r / 2); });
  const auto c = classify(gs, layout);
  EXPECT_EQ(c.verdict, GraphVerdict::Divergent);
  ASSERT_EQ(c.findings.size(), 1U);
  EXPECT_EQ(c.findings[0].cls, FindingClass::Divergent);
}

// The --mesh override of `gparity graph ranks` and gparity-view: sizes, or named sizes.
TEST(GraphRanksMesh, MeshOverrideTakesSizesOrNamedSizes) {
  const auto plain = parse_mesh_override("2x4");
  EXPECT_EQ(plain.shape, (std::vector<std::int32_t>{2, 4}));
  EXPECT_EQ(plain.names, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(plain.source, "--mesh");
  const auto named = parse_mesh_override("pp=2,dp=2,tp=2");
  EXPECT_EQ(named.shape, (std::vector<std::int32_t>{2, 2, 2}));
  EXPECT_EQ(named.names, (std::vector<std::string>{"pp", "dp", "tp"}));
  EXPECT_EQ(parse_mesh_override("dp=8").shape, (std::vector<std::int32_t>{8}));
  for (const char* bad : {"", "2x", "x2", "2x0", "dp=-1", "dp=2,tp", "2y4", "dp=2,,tp=2", "99999999999"}) {
    try {
      (void)parse_mesh_override(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const gparity::model::InputError& e) {
      EXPECT_EQ(e.source(), "--mesh");
      EXPECT_NE(e.problem().find("2x4 or dp=2,tp=4"), std::string::npos) << e.what();
    }
  }
}

TEST(GraphRanksMesh, DeviceMeshSpecsAndProcessGroupsGiveTheMesh) {
  const auto full = parse_device_mesh("DeviceMesh((pp=2, dp=2, tp=2), 'cuda', stride=(4, 2, 1))");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->names, (std::vector<std::string>{"pp", "dp", "tp"}));
  EXPECT_EQ(full->strides, (std::vector<std::int64_t>{4, 2, 1}));
  EXPECT_FALSE(parse_device_mesh("DeviceMesh(cuda)"));
  // Sub-meshes printed alone: ordered by stride, outer first.
  std::vector<MeshSpec> subs{*parse_device_mesh("DeviceMesh((tp=2), 'cuda', stride=(1,))"),
                             *parse_device_mesh("DeviceMesh((dp=2), 'cuda', stride=(2,))")};
  const auto m = mesh_from_specs(subs, 4);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->text(), "2x2 (dp, tp)");
  EXPECT_FALSE(mesh_from_specs(subs, 8));  // do not cover 8 ranks
  EXPECT_EQ(mesh_from_specs(std::vector<MeshSpec>{*full}, 8)->text(), "2x2x2 (pp, dp, tp)");
  // Flight Recorder pg_config: mesh_<dim> groups with their ranks.
  std::vector<gparity::model::ProcessGroupConfig> groups{
      {"0", "0", "default_pg", {0, 1, 2, 3}}, {"1", "1", "mesh_dp", {0, 2}}, {"3", "3", "mesh_tp", {0, 1}}};
  const auto g = mesh_from_groups(groups, 4);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->text(), "2x2 (dp, tp)");
  EXPECT_EQ(g->source, "Flight Recorder pg_config");
}

// ---- the 2x2 (dp, tp) mesh sample (skips when absent) -----------------------------------------

std::optional<std::string> mesh_sample(const char* run) {
  const auto s = gparity::testing::samples_dir();
  if (!s) return std::nullopt;
  return *s + "/torch-2.11-2x2mesh-mp/" + run + "/trace";
}

TEST(GraphRanksMeshSample, CompileCoorGraphsFollowTheDpCoordinate) {
  const auto dir = mesh_sample("compile_coor");
  if (!dir) GTEST_SKIP() << "samples not found";
  const auto r = classify_trace(gparity::model::read_torch_trace_dir(*dir), {}, {});
  EXPECT_EQ(r.mesh, "2x2 (dp, tp) from DeviceMesh in graph payloads");
  std::size_t dp_constants = 0;
  for (const auto& g : r.graphs) {
    for (const auto& f : g.classification.findings) {
      EXPECT_NE(f.cls, FindingClass::Divergent) << g.kind << " " << f.node << " " << f.field;
      if (f.cls == FindingClass::RankParametric) {
        ASSERT_TRUE(f.function);
        EXPECT_EQ(f.function->variable, "dp") << f.function->text();
        EXPECT_EQ(f.function->a, 48);
        ++dp_constants;
      }
    }
  }
  EXPECT_GT(dp_constants, 10U);
}

TEST(GraphRanksMeshSample, TpGroupsAreProcessGroupParametric) {
  for (const char* run : {"compile", "compile_coor"}) {
    const auto dir = mesh_sample(run);
    if (!dir) GTEST_SKIP() << "samples not found";
    const auto r = classify_trace(gparity::model::read_torch_trace_dir(*dir), {}, {});
    EXPECT_TRUE(r.findings.empty()) << run;  // no trace-level divergence
    std::size_t pg = 0;
    for (const auto& g : r.graphs) {
      for (const auto& f : g.classification.findings) {
        EXPECT_NE(f.cls, FindingClass::Divergent) << run << " " << g.kind << " " << f.node << " " << f.field;
        if (f.cls != FindingClass::ProcessGroupParametric) continue;
        ++pg;
        EXPECT_EQ(f.target.find("_c10d_functional.all_reduce"), 0U) << f.target;
        EXPECT_NE(f.note.find("one group per tp slice"), std::string::npos) << f.note;
      }
    }
    EXPECT_GT(pg, 4U) << run;
    EXPECT_NE(r.verdict, GraphVerdict::Divergent) << run;
  }
}

}  // namespace

namespace {

TEST(GraphRanksMesh, ManifestDeclaresTheMesh) {
  gparity::testing::TempDir tmp;
  std::filesystem::create_directories(tmp.path() / "trace");
  tmp.write("manifest.json",
            R"({"world_size": 8, "mesh_shape": [2, 2, 2], "mesh_dim_names": ["pp", "dp", "tp"]})");
  std::vector<std::string> problems;
  const auto m = mesh_from_manifest((tmp.path() / "trace").string(), 8, problems);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->text(), "2x2x2 (pp, dp, tp)");
  EXPECT_EQ(m->source, "manifest manifest.json");
  EXPECT_FALSE(mesh_from_manifest((tmp.path() / "trace").string(), 4, problems));  // another world
  gparity::testing::TempDir damaged;
  damaged.write("rank0_meta.json", "{not json");
  damaged.write("rank1_meta.json", R"({"mesh": {"shape": [2, 4], "names": ["dp", "tp"]}})");
  std::vector<std::string> p2;
  const auto meta = mesh_from_manifest(damaged.path().string(), 8, p2);
  ASSERT_TRUE(meta);  // the damaged file is named, the next one still used
  EXPECT_EQ(meta->text(), "2x4 (dp, tp)");
  EXPECT_EQ(p2.size(), 1U);
}

}  // namespace
