// gparity-view end to end under QT_QPA_PLATFORM=offscreen: open every sample through the main
// window, check the item models with QAbstractItemModelTester, select nodes, compare a node across
// ranks of compile_rankbug, search, keyboard moves, and error handling. With
// GPARITY_GUI_SCREENSHOTS=DIR set, each view is also saved there as a PNG (docs/img).
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QKeyEvent>
#include <QPixmap>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <memory>

#include "gui/display_text.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/main_window.hpp"
#include "gui/models.hpp"
#include "tests/support/qt_test_app.hpp"

namespace gparity::gui {
namespace {

const QString kData = QStringLiteral(GPARITY_SOURCE_DIR "/tests/data/graph/");

using gparity::testing::app;
using gparity::testing::screenshot;

class GuiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    window_ = std::make_unique<MainWindow>();
    window_->resize(1400, 860);
    window_->show();
  }
  void open(const QString& path) {
    window_->open_path(path, true);
    ASSERT_TRUE(window_->wait_idle()) << "load did not finish";
    ASSERT_NE(window_->document(), nullptr) << window_->messages().toStdString();
  }
  std::unique_ptr<MainWindow> window_;
};

TEST_F(GuiTest, OpensEveryTraceSampleAndShowsItsGraphs) {
  for (const char* sample : {"compile", "compile_rankbug", "compile_tp"}) {
    SCOPED_TRACE(sample);
    open(kData + QLatin1String(sample));
    const auto doc = window_->document();
    EXPECT_EQ(doc->format, "torch_trace");
    ASSERT_EQ(doc->collection.ranks.size(), 2u);
    EXPECT_EQ(window_->graph_selector()->count(), static_cast<int>(doc->graphs.size()));
    // The window starts on the first joint graph and the table lists its nodes.
    const auto& shown = doc->graphs[static_cast<std::size_t>(window_->current_graph())];
    EXPECT_EQ(shown.kind, "aot_joint_graph");
    EXPECT_EQ(window_->node_table()->rowCount(), static_cast<int>(shown.graph->nodes.size()));
    EXPECT_NE(window_->canvas()->current_layout(), nullptr);
    EXPECT_EQ(window_->canvas()->current_layout()->view.item_of_node.size(), shown.graph->nodes.size());
  }
}

TEST_F(GuiTest, OpensFxTextAndSelectsANode) {
  open(kData + QStringLiteral("eager/tiny_export_graph.txt"));
  const auto doc = window_->document();
  ASSERT_EQ(doc->graphs.size(), 1u);
  const auto* g = doc->graphs[0].graph;
  const auto id = g->find_node("scaled_dot_product_attention");
  ASSERT_NE(id, model::kNoNode);
  window_->select_node(id);
  EXPECT_EQ(window_->canvas()->selected(), id);
  // The inspector shows one column with the node's fields.
  const auto* insp = window_->inspector();
  ASSERT_EQ(insp->columnCount(), 1);
  bool saw_target = false;
  for (int r = 0; r < insp->rowCount(); ++r)
    if (insp->headerData(r, Qt::Vertical, Qt::DisplayRole).toString() == QStringLiteral("target")) {
      EXPECT_EQ(insp->data(insp->index(r, 0), Qt::DisplayRole).toString(),
                QStringLiteral("aten.scaled_dot_product_attention.default"));
      saw_target = true;
    }
  EXPECT_TRUE(saw_target);
  EXPECT_EQ(insp->differing_rows(), 0);
  screenshot(*window_, "fx_text_node_selected");
}

TEST_F(GuiTest, ControlCharactersFromTheInputAreShownEscaped) {
  // An FX argument that would retitle a terminal and clear it, and raw ESC in a source path.
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("evil.txt"));
  {
    QFile f(path);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(
        "class GraphModule(torch.nn.Module):\n"
        "    def forward(self, L_x_ : torch.Tensor):\n"
        "        l_x_ = L_x_\n"
        "        \n"
        "        # File: /tmp/ev\x1b[2Jil.py:3 in fn, code: x.add(s)\n"
        "        add = torch.ops.aten.add.Tensor(l_x_, '\\x1b]0;title\\x07');  l_x_ = None\n"
        "        return (add,)\n");
  }
  open(path);
  const auto* g = window_->document()->graphs[0].graph;
  const auto id = g->find_node("add");
  ASSERT_NE(id, model::kNoNode);
  window_->select_node(id);
  const auto* insp = window_->inspector();
  QStringList cells;
  for (int r = 0; r < insp->rowCount(); ++r)
    cells << insp->data(insp->index(r, 0), Qt::DisplayRole).toString();
  EXPECT_TRUE(cells.contains(QStringLiteral("'\\x1b]0;title\\x07'")))
      << cells.join(QLatin1Char('|')).toStdString();
  const auto* table = window_->node_table();
  const QString source =
      table->data(table->index(static_cast<int>(id), NodeTableModel::Source), Qt::DisplayRole).toString();
  EXPECT_EQ(source, QStringLiteral("ev\\x1b[2Jil.py:3"));
  for (const QString& text : cells + QStringList{source})
    for (const QChar c : text)
      EXPECT_FALSE(c.unicode() < 0x20 || (c.unicode() >= 0x7F && c.unicode() < 0xA0));
}

TEST_F(GuiTest, ModelsPassQAbstractItemModelTester) {
  open(kData + QStringLiteral("compile_rankbug"));
  const auto doc = window_->document();
  GraphListModel graphs;
  QAbstractItemModelTester t1(&graphs, QAbstractItemModelTester::FailureReportingMode::Warning);
  graphs.set_document(doc);
  EXPECT_EQ(graphs.rowCount(), static_cast<int>(doc->graphs.size()));
  NodeTableModel table;
  QAbstractItemModelTester t2(&table, QAbstractItemModelTester::FailureReportingMode::Warning);
  table.set_graph(doc, doc->graphs[0].graph);
  EXPECT_EQ(table.columnCount(), NodeTableModel::ColumnCount);
  NodeInspectorModel insp;
  QAbstractItemModelTester t3(&insp, QAbstractItemModelTester::FailureReportingMode::Warning);
  insp.set_node(doc, doc->same_graph_on_ranks(doc->graphs[0]),
                std::string(doc->graphs[0].graph->node_name(0)));
  EXPECT_EQ(insp.columnCount(), 2);
  insp.clear();
  EXPECT_EQ(insp.rowCount(), 0);
}

TEST_F(GuiTest, InspectorMarksTheRankDependentSliceOfCompileRankbug) {
  open(kData + QStringLiteral("compile_rankbug"));
  const auto doc = window_->document();
  const auto fwd = doc->find(0, "aot_forward_graph");
  ASSERT_TRUE(fwd.has_value());
  window_->show_graph(static_cast<int>(*fwd));
  ASSERT_TRUE(window_->canvas()->wait_for_layout());
  const auto* g = doc->graphs[*fwd].graph;
  // Per the samples README: slice bounds are 0,32 on rank 0 and 32,64 on rank 1.
  int slices_differing = 0;
  for (model::NodeId i = 0; i < g->nodes.size(); ++i) {
    if (g->str(g->node(i).target) != "aten.slice.Tensor") continue;
    window_->select_node(i);
    const auto* insp = window_->inspector();
    ASSERT_EQ(insp->columnCount(), 2);
    EXPECT_EQ(insp->headerData(1, Qt::Horizontal, Qt::DisplayRole).toString(), QStringLiteral("rank 1"));
    for (int r = 0; r < insp->rowCount(); ++r) {
      const QString field = insp->headerData(r, Qt::Vertical, Qt::DisplayRole).toString();
      const bool differs = insp->data(insp->index(r, 1), kDiffersRole).toBool();
      if (field == QStringLiteral("name") || field == QStringLiteral("op")) {
        EXPECT_FALSE(differs);
      }
      if (differs && field.startsWith(QStringLiteral("args")) &&
          insp->data(insp->index(r, 0), Qt::DisplayRole).toString() == QStringLiteral("0") &&
          insp->data(insp->index(r, 1), Qt::DisplayRole).toString() == QStringLiteral("32")) {
        ++slices_differing;
        screenshot(*window_, "inspector_rank_values");
      }
    }
  }
  EXPECT_GT(slices_differing, 0) << "no slice with bound 0 on rank 0 and 32 on rank 1";
}

TEST_F(GuiTest, RankDiffModeListsFindingsAndJumpsToTheirNodes) {
  open(kData + QStringLiteral("compile_rankbug"));
  const auto doc = window_->document();
  const auto fwd = doc->find(0, "aot_forward_graph");
  ASSERT_TRUE(fwd.has_value());
  window_->show_graph(static_cast<int>(*fwd));
  ASSERT_TRUE(window_->canvas()->wait_for_layout());
  const auto* findings = window_->findings();
  QAbstractItemModelTester tester(const_cast<FindingsModel*>(findings),
                                  QAbstractItemModelTester::FailureReportingMode::Warning);
  ASSERT_GT(findings->rowCount(), 0);
  // Per the samples README the forward graph differs in slice bounds, affine in rank.
  int slice_rows = 0;
  for (int r = 0; r < findings->rowCount(); ++r) {
    const QString cls = findings->index(r, FindingsModel::Class).data().toString();
    const QString node = findings->index(r, FindingsModel::Node).data().toString();
    if (cls == QStringLiteral("rank-parametric") && node.startsWith(QStringLiteral("slice"))) {
      ++slice_rows;
      window_->jump_to_finding(r);
      const auto name = doc->graphs[*fwd].graph->node_name(window_->canvas()->selected());
      EXPECT_EQ(gparity::gui::exact_text(name), node);
    }
  }
  EXPECT_GT(slice_rows, 0);
  EXPECT_TRUE(window_->messages().contains(QStringLiteral("rank-parametric")));
  screenshot(*window_, "rank_diff_findings");
  // A single-rank document has no findings.
  open(kData + QStringLiteral("eager/tiny_export_graph.txt"));
  EXPECT_EQ(window_->findings()->rowCount(), 0);
}

TEST_F(GuiTest, SearchFindsNamesAndTargetsAndStepsThroughThem) {
  open(kData + QStringLiteral("eager/tiny_export_graph.txt"));
  const auto* g = window_->document()->graphs[0].graph;
  int expected = 0;
  for (const auto& n : g->nodes)
    if (g->str(n.name).find("linear") != std::string_view::npos ||
        g->str(n.target).find("linear") != std::string_view::npos)
      ++expected;
  auto* canvas = window_->canvas();
  ASSERT_GT(expected, 1);
  EXPECT_EQ(canvas->search(QStringLiteral("LINEAR")), expected);
  const auto first = canvas->selected();
  canvas->next_match();
  ASSERT_TRUE(canvas->wait_for_layout());
  const auto second = canvas->selected();
  EXPECT_NE(first, second);
  EXPECT_GT(second, first);
  canvas->previous_match();
  EXPECT_EQ(canvas->selected(), first);
  EXPECT_EQ(canvas->search(QStringLiteral("no_such_node_anywhere")), 0);
}

TEST_F(GuiTest, KeyboardFollowsEdges) {
  open(kData + QStringLiteral("eager/tiny_export_graph.txt"));
  const auto* g = window_->document()->graphs[0].graph;
  const model::UseEdges edges(*g);
  auto* canvas = window_->canvas();
  const auto start = g->find_node("embedding");
  ASSERT_NE(start, model::kNoNode);
  canvas->select_node(start);
  QKeyEvent down(QEvent::KeyPress, Qt::Key_Down, Qt::NoModifier);
  QApplication::sendEvent(canvas, &down);
  EXPECT_EQ(canvas->selected(), edges.users(start).front());
  QKeyEvent up(QEvent::KeyPress, Qt::Key_Up, Qt::NoModifier);
  QApplication::sendEvent(canvas, &up);
  EXPECT_EQ(canvas->selected(), edges.inputs(edges.users(start).front()).front());
}

TEST_F(GuiTest, CanvasPaintsOnlyVisibleBoxesAndExpandsGroups) {
  open(kData + QStringLiteral("compile/dedicated_log_torch_trace_rank_0_vp85oaze.log"));
  auto* canvas = window_->canvas();
  const auto* layout = canvas->current_layout();
  ASSERT_NE(layout, nullptr);
  const auto n = layout->view.items.size();
  canvas->zoom_by(1.0 / canvas->scale());  // 1:1
  canvas->grab();
  EXPECT_GT(canvas->painted_items(), 0u);
  EXPECT_LT(canvas->painted_items(), n) << "at 1:1 the joint graph does not fit the window";
  screenshot(*window_, "joint_graph");
  // Collapse every group: fewer boxes, each node still mapped to one.
  const auto groups = layout->grouping->groups.size();
  ASSERT_GT(groups, 0u);
  for (std::uint32_t gi = 0; gi < groups; ++gi) {
    canvas->set_group_collapsed(gi, true);
    ASSERT_TRUE(canvas->wait_for_layout());
  }
  EXPECT_LT(canvas->current_layout()->view.items.size(), n);
  canvas->set_group_collapsed(0, false);
  ASSERT_TRUE(canvas->wait_for_layout());
  EXPECT_FALSE(canvas->current_layout()->collapsed[0]);
  canvas->fit();
  screenshot(*window_, "joint_graph_collapsed");
}

TEST_F(GuiTest, OpensAPt2ArchiveThroughTheModelImporter) {
  open(kData + QStringLiteral("eager/tiny_export.pt2"));
  const auto doc = window_->document();
  ASSERT_NE(doc, nullptr);
  EXPECT_EQ(doc->format, "pt2");
  ASSERT_FALSE(doc->graphs.empty());
  // The archive holds the same program as its print_readable() text beside it.
  const auto& shown = doc->graphs[static_cast<std::size_t>(window_->current_graph())];
  EXPECT_EQ(window_->node_table()->rowCount(), static_cast<int>(shown.graph->nodes.size()));
  open(kData + QStringLiteral("eager/tiny_export_graph.txt"));
  EXPECT_EQ(window_->document()->graphs.front().graph->nodes.size(), shown.graph->nodes.size());
}

TEST_F(GuiTest, BadInputIsReportedInTheWindow) {
  QTemporaryDir dir;
  const QString junk = dir.filePath(QStringLiteral("junk.txt"));
  {
    QFile f(junk);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("this is not a graph\n");
  }
  for (const QString& path : {dir.filePath(QStringLiteral("missing")), junk}) {
    window_->open_path(path, true);
    ASSERT_TRUE(window_->wait_idle());
    EXPECT_EQ(window_->document(), nullptr);
    // Named relative to what was opened: no absolute path of this machine in the pane.
    EXPECT_TRUE(window_->messages().contains(QStringLiteral("Cannot open ") + QFileInfo(path).fileName()))
        << window_->messages().toStdString();
    EXPECT_FALSE(window_->messages().contains(QFileInfo(path).absoluteFilePath()))
        << window_->messages().toStdString();
  }
  // A good file after bad ones still opens.
  open(kData + QStringLiteral("eager/tiny_export_graph.txt"));
}

}  // namespace
}  // namespace gparity::gui
