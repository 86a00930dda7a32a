// Node findings in gparity-view (gui/node_findings.*, MainWindow's "Node findings" dock) under
// QT_QPA_PLATFORM=offscreen: two replay runs written here (a "graph" record naming a graph JSON
// beside each trace, "node" records; the candidate's nodes renamed), their findings through
// compute_node_findings, the model checked with QAbstractItemModelTester, and selecting the
// finding opens the graph the run names and selects the divergent node on the canvas; on two
// ranks of a tp group, the origin is listed first and the partner's received finding links to it.

#include "gui/node_findings.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <fstream>

#include "core/model/graph/graph_json.hpp"
#include "core/model/run/trace_writer.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/main_window.hpp"
#include "gui/models.hpp"
#include "tests/support/graph_test_support.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::gui {
namespace {

const char* kBody = R"FX(mm: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
tanh: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.tanh.default(mm)
mul: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mul.Tensor(tanh, tanh)
return (mul,))FX";
const char* kRenamed = R"FX(mm_4: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mm.default(x, w)
tanh_2: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.tanh.default(mm_4)
mul_9: "f32[8, 64][64, 1]cuda:{d}" = torch.ops.aten.mul.Tensor(tanh_2, tanh_2)
return (mul_9,))FX";

/// One rank; `differ`: node names whose hash differs from the baseline's.
void write_run(const std::filesystem::path& dir, const char* body, const std::vector<std::string>& names,
               const std::vector<std::string>& differ) {
  model::RunManifest m;
  model::write_manifest(dir, m);
  std::ofstream(dir / "forward.json") << model::graph_to_json(gparity::testing::fx_graph(body)).dump();
  model::TraceWriter w(dir, 0);
  model::GraphRef ref;
  ref.path = "forward.json";
  ref.kind = "aot_forward_graph";
  ref.compile_id = "0/0";
  w.write_graph(ref);
  int line = 10;
  for (const auto& n : names) {
    const bool d = std::find(differ.begin(), differ.end(), n) != differ.end();
    w.write_raw(
        {{"type", "node"},
         {"graph", "aot_forward_graph 0/0"},
         {"node", n},
         {"op", n == "x" || n == "w" ? "placeholder" : "aten." + n.substr(0, n.find('_')) + ".default"},
         {"source", "/workspace/train.py:" + std::to_string(line++)},
         {"output", 0},
         {"dtype", "f32"},
         {"shape", {8, 64}},
         {"xxh3", d ? "00000000000000bb" : "00000000000000aa"},
         {"shard", d ? "00000000000000bb" : "00000000000000aa"}});
  }
}

class NodeFindingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gparity::testing::app();
    write_run(tmp.path() / "a", kBody, {"x", "w", "mm", "tanh", "mul"}, {});
    write_run(tmp.path() / "b", kRenamed, {"x", "w", "mm_4", "tanh_2", "mul_9"}, {"tanh_2", "mul_9"});
  }
  gparity::testing::TempDir tmp;
};

TEST_F(NodeFindingsTest, ModelListsTheFirstDivergentNode) {
  const auto findings = compute_node_findings((tmp.path() / "a").string(), (tmp.path() / "b").string());
  ASSERT_EQ(findings.size(), 1U);
  NodeFindingsModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_findings(findings);
  ASSERT_EQ(model.rowCount(), 1);
  const auto at = [&](int c) { return model.index(0, c).data().toString(); };
  EXPECT_EQ(at(NodeFindingsModel::Rank), QStringLiteral("0"));
  EXPECT_EQ(at(NodeFindingsModel::Graph), QStringLiteral("aot_forward_graph 0/0"));
  EXPECT_EQ(at(NodeFindingsModel::Node), QStringLiteral("tanh → tanh_2"));
  EXPECT_EQ(at(NodeFindingsModel::Op), QStringLiteral("aten.tanh.default"));
  EXPECT_EQ(at(NodeFindingsModel::Source), QStringLiteral("/workspace/train.py:13"));
  EXPECT_EQ(at(NodeFindingsModel::Cause), QStringLiteral("origin"));
  EXPECT_EQ(model.index(0, 0).data(kNodeNameRole).toString(), QStringLiteral("tanh"));
}

TEST_F(NodeFindingsTest, SelectingTheFindingOpensTheGraphAndSelectsTheNode) {
  MainWindow w;
  w.set_node_findings(compute_node_findings((tmp.path() / "a").string(), (tmp.path() / "b").string()));
  ASSERT_EQ(w.node_findings()->rowCount(), 1);
  w.jump_to_node_finding(0);  // no graph open: opens the baseline's forward.json, then selects
  ASSERT_TRUE(w.wait_idle());
  ASSERT_TRUE(w.document());
  const auto* g = w.document()->graphs.at(static_cast<std::size_t>(w.current_graph())).graph;
  EXPECT_EQ(w.canvas()->selected(), g->find_node("tanh"));
  EXPECT_NE(g->find_node("tanh"), model::kNoNode);
  EXPECT_TRUE(w.messages().contains(QStringLiteral("1 node finding")));
}

/// A 2-rank replay-like run of tp group '3' (gparity::testing::kTpBody); `differ[r]`: rank r's nodes whose
/// hash differs from the baseline's.
void write_tp_run(const std::filesystem::path& dir, const std::vector<std::vector<std::string>>& differ) {
  model::RunManifest m;
  m.world_size = 2;
  m.extra["replay"] = {{"groups", {{"3", {{"ranks", {0, 1}}, {"desc", "mesh_tp"}}}}}};
  model::write_manifest(dir, m);
  std::ofstream(dir / "forward.json")
      << model::graph_to_json(gparity::testing::fx_graph(gparity::testing::kTpBody)).dump();
  for (int rank = 0; rank < 2; ++rank) {
    model::TraceWriter w(dir, rank);
    model::GraphRef ref;
    ref.path = "forward.json";
    ref.kind = "aot_forward_graph";
    ref.compile_id = "0/0";
    w.write_graph(ref);
    int line = 10;
    for (const std::string& n : gparity::testing::kTpNodes) {
      const auto& d = differ[static_cast<std::size_t>(rank)];
      const bool differs = std::find(d.begin(), d.end(), n) != d.end();
      w.write_raw({{"type", "node"},
                   {"graph", "aot_forward_graph 0/0"},
                   {"node", n},
                   {"op", n == "x" || n == "w" ? "placeholder" : "aten." + n + ".default"},
                   {"source", "/workspace/train.py:" + std::to_string(line++)},
                   {"output", 0},
                   {"dtype", "f32"},
                   {"shape", {8, 64}},
                   {"xxh3", differs ? "00000000000000bb" : "00000000000000aa"},
                   {"shard", differs ? "00000000000000bb" : "00000000000000aa"}});
    }
  }
}

TEST(NodeFindingsAcrossRanks, TheOriginComesFirstAndTheReceivedFindingLinksToIt) {
  gparity::testing::app();
  gparity::testing::TempDir tmp;
  write_tp_run(tmp.path() / "a", {{}, {}});
  // Rank 1's mm is wrong; rank 0 only gets it through the all-reduce.
  write_tp_run(tmp.path() / "b",
               {{"all_reduce", "wait_tensor", "mul"}, {"mm", "all_reduce", "wait_tensor", "mul"}});
  auto findings = compute_node_findings((tmp.path() / "a").string(), (tmp.path() / "b").string());
  ASSERT_EQ(findings.size(), 2U);
  std::reverse(findings.begin(), findings.end());  // the model puts origins first whatever it is given
  NodeFindingsModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_findings(findings);
  const auto at = [&](int row, int c) { return model.index(row, c).data().toString(); };
  EXPECT_EQ(at(0, NodeFindingsModel::Rank), QStringLiteral("1"));
  EXPECT_EQ(at(0, NodeFindingsModel::Node), QStringLiteral("mm"));
  EXPECT_EQ(at(0, NodeFindingsModel::Cause), QStringLiteral("origin"));
  EXPECT_TRUE(at(0, NodeFindingsModel::Origin).isEmpty());
  EXPECT_EQ(at(1, NodeFindingsModel::Rank), QStringLiteral("0"));
  EXPECT_EQ(at(1, NodeFindingsModel::Node), QStringLiteral("all_reduce"));
  EXPECT_EQ(at(1, NodeFindingsModel::Cause), QStringLiteral("received"));
  EXPECT_EQ(at(1, NodeFindingsModel::Origin), QStringLiteral("rank 1: mm"));
  EXPECT_TRUE(at(1, NodeFindingsModel::Detail)
                  .contains(QStringLiteral("received at all_reduce (group tp '3') from rank 1")));
  EXPECT_EQ(model.origin_row(1), 0);
  EXPECT_FALSE(model.origin_row(0));

  MainWindow w;
  w.set_node_findings(findings);
  w.jump_to_node_finding(1);
  ASSERT_TRUE(w.wait_idle());
  ASSERT_TRUE(w.jump_to_origin(1));
  ASSERT_TRUE(w.wait_idle());
  EXPECT_EQ(w.current_node_finding(), 0);
  const auto* g = w.document()->graphs.at(static_cast<std::size_t>(w.current_graph())).graph;
  EXPECT_EQ(w.canvas()->selected(), g->find_node("mm"));
  EXPECT_FALSE(w.jump_to_origin(0)) << "an origin links nowhere";
}

}  // namespace
}  // namespace gparity::gui
