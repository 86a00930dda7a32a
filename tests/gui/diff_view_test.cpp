// The side-by-side diff view under QT_QPA_PLATFORM=offscreen: compile_rankbug rank 0 vs rank 1
// forward graphs (the changes list names the slices whose bounds differ, selection follows the
// alignment, rows jump on both sides), a renamed graph whose selection still follows by
// structure, and the changes model under QAbstractItemModelTester. With
// GPARITY_GUI_SCREENSHOTS=DIR set, the view is saved there as diff_side_by_side.png.
#include "gui/diff_view.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <memory>
#include <set>
#include <string>

#include "gui/graph_canvas.hpp"
#include "gui/main_window.hpp"
#include "tests/support/qt_test_app.hpp"

namespace gparity::gui {
namespace {

const std::string kData = GPARITY_SOURCE_DIR "/tests/data/graph/";

using gparity::testing::app;
using gparity::testing::screenshot;

std::string name_of(const model::Graph& g, model::NodeId id) {
  return std::string(g.node_name(id));
}

class DiffViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    view_ = std::make_unique<DiffView>();
    view_->resize(1500, 900);
    view_->show();
  }
  std::unique_ptr<DiffView> view_;
};

TEST_F(DiffViewTest, RankbugForwardGraphsShowSliceChangesAndSyncSelection) {
  const auto doc = load_document(kData + "compile_rankbug");
  const auto a = doc->find(0, "aot_forward_graph");
  const auto b = doc->find(1, "aot_forward_graph");
  ASSERT_TRUE(a && b);
  view_->set_graphs(doc, *a, doc, *b);
  ASSERT_TRUE(view_->wait_for_layout());
  const auto& ga = *doc->graphs[*a].graph;
  const auto& gb = *doc->graphs[*b].graph;

  // The changes list names the slices whose bounds differ (0, 32 on rank 0 vs 32, 64 on rank 1).
  const auto* m = view_->changes();
  QAbstractItemModelTester tester(const_cast<DiffChangesModel*>(m),
                                  QAbstractItemModelTester::FailureReportingMode::Fatal);
  ASSERT_GT(m->rowCount(), 0);
  // gparity graph diff reports the same two changes (tests/cli: slice_1 and slice_scatter).
  std::set<std::string> changed;
  QString slice_fields;
  for (int r = 0; r < m->rowCount(); ++r) {
    const QString left = m->index(r, DiffChangesModel::Left).data().toString();
    EXPECT_EQ(m->index(r, DiffChangesModel::Right).data().toString(), left);
    EXPECT_EQ(m->index(r, DiffChangesModel::Change).data().toString(), QStringLiteral("changed"));
    changed.insert(left.toStdString());
    if (left == QStringLiteral("slice_1"))
      slice_fields = m->index(r, DiffChangesModel::Fields).data().toString();
  }
  EXPECT_EQ(changed, (std::set<std::string>{"slice_1", "slice_scatter"}));
  EXPECT_TRUE(slice_fields.contains(QStringLiteral("args"))) << slice_fields.toStdString();
  EXPECT_TRUE(slice_fields.contains(QStringLiteral("32"))) << slice_fields.toStdString();

  // Selecting slice_1 on the left selects the aligned slice_1 on the right, and back.
  const auto left_slice = ga.find_node("slice_1");
  ASSERT_NE(left_slice, model::kNoNode);
  view_->left()->select_node(left_slice);
  ASSERT_NE(view_->right()->selected(), model::kNoNode);
  EXPECT_EQ(name_of(gb, view_->right()->selected()), "slice_1");
  EXPECT_EQ(view_->right()->selected(), view_->result()->alignment.a_to_b[left_slice]);
  const auto other = gb.find_node("rsqrt");
  ASSERT_NE(other, model::kNoNode);
  view_->right()->select_node(other);
  EXPECT_EQ(name_of(ga, view_->left()->selected()), "rsqrt");

  // Panning one side moves the other to the same relative place.
  view_->left()->zoom_by(1.0 / view_->left()->scale());  // 1:1: the graph is taller than the view
  EXPECT_NEAR(view_->right()->scale(), view_->left()->scale(), 1e-9);
  const double left_before = view_->left()->view_center().y();
  const double right_before = view_->right()->view_center().y();
  view_->left()->pan_by(0, 300);
  ASSERT_GT(view_->left()->view_center().y(), left_before);
  EXPECT_GT(view_->right()->view_center().y(), right_before);

  // A row of the list selects its nodes on both sides.
  int row = -1;
  for (int r = 0; r < m->rowCount() && row < 0; ++r)
    if (m->index(r, DiffChangesModel::Left).data().toString() == QStringLiteral("slice_1")) row = r;
  ASSERT_GE(row, 0);
  view_->left()->select_node(ga.find_node("rsqrt"));
  view_->jump_to_change(row);
  EXPECT_EQ(name_of(ga, view_->left()->selected()), "slice_1");
  EXPECT_EQ(name_of(gb, view_->right()->selected()), "slice_1");
  // Changed nodes are coloured on both canvases: the screenshot shows them.
  screenshot(*view_, "diff_side_by_side");
}

constexpr const char* kGraphA = R"FX(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4]", y: "f32[4]"):
        add: "f32[4]" = torch.ops.aten.add.Tensor(x, y)
        mul: "f32[4]" = torch.ops.aten.mul.Tensor(add, y)
        relu: "f32[4]" = torch.ops.aten.relu.default(mul)
        neg: "f32[4]" = torch.ops.aten.neg.default(add)
        return (relu, neg)
)FX";

// The same graph with every computed node renamed, the negation moved up, and one node added.
constexpr const char* kGraphB = R"FX(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4]", y: "f32[4]"):
        sum_0: "f32[4]" = torch.ops.aten.add.Tensor(x, y)
        negated: "f32[4]" = torch.ops.aten.neg.default(sum_0)
        prod_0: "f32[4]" = torch.ops.aten.mul.Tensor(sum_0, y)
        act_0: "f32[4]" = torch.ops.aten.relu.default(prod_0)
        extra: "f32[4]" = torch.ops.aten.sigmoid.default(negated)
        return (act_0, extra)
)FX";

std::shared_ptr<const Document> write_and_load(const QTemporaryDir& dir, const char* name, const char* text) {
  const QString path = dir.filePath(QLatin1String(name));
  QFile f(path);
  EXPECT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(text);
  f.close();
  return load_document(path.toStdString());
}

TEST_F(DiffViewTest, RenamedNodesStillSyncSelectionByStructure) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const auto a = write_and_load(dir, "a.txt", kGraphA);
  const auto b = write_and_load(dir, "b.txt", kGraphB);
  view_->set_graphs(a, 0, b, 0);
  ASSERT_TRUE(view_->wait_for_layout());
  const auto& ga = *a->graphs[0].graph;
  const auto& gb = *b->graphs[0].graph;

  const std::pair<const char*, const char*> renamed[] = {
      {"add", "sum_0"}, {"mul", "prod_0"}, {"relu", "act_0"}, {"neg", "negated"}};
  for (const auto& [left, right] : renamed) {
    SCOPED_TRACE(left);
    view_->left()->select_node(ga.find_node(left));
    ASSERT_NE(view_->right()->selected(), model::kNoNode);
    EXPECT_EQ(name_of(gb, view_->right()->selected()), right);
    EXPECT_EQ(view_->result()->alignment.how[ga.find_node(left)], diff::MatchHow::Structure);
  }
  // Right to left as well.
  view_->right()->select_node(gb.find_node("prod_0"));
  EXPECT_EQ(name_of(ga, view_->left()->selected()), "mul");

  // The added node is listed as added and selecting it leaves the left side where it was.
  const auto* m = view_->changes();
  QAbstractItemModelTester tester(const_cast<DiffChangesModel*>(m),
                                  QAbstractItemModelTester::FailureReportingMode::Fatal);
  bool saw_extra = false;
  bool saw_moved = false;
  for (int r = 0; r < m->rowCount(); ++r) {
    const QString right = m->index(r, DiffChangesModel::Right).data().toString();
    const QString change = m->index(r, DiffChangesModel::Change).data().toString();
    if (right == QStringLiteral("extra")) {
      EXPECT_EQ(change, QStringLiteral("added"));
      EXPECT_EQ(m->index(r, 0).data(kLeftNodeRole).toInt(), -1);
      EXPECT_EQ(m->index(r, 0).data(kRightNodeRole).toInt(), static_cast<int>(gb.find_node("extra")));
      saw_extra = true;
    }
    // A matched node out of order is "moved" and drawn in the move colour.
    if (m->index(r, DiffChangesModel::Left).data().toString() == QStringLiteral("neg")) {
      EXPECT_TRUE(change.startsWith(QStringLiteral("moved"))) << change.toStdString();
      EXPECT_EQ(right, QStringLiteral("negated"));
      saw_moved = true;
    }
  }
  EXPECT_TRUE(saw_extra);
  EXPECT_TRUE(saw_moved);
  view_->right()->select_node(gb.find_node("extra"));
  EXPECT_EQ(name_of(ga, view_->left()->selected()), "mul");
}

TEST_F(DiffViewTest, MainWindowOpensTwoGraphInputsSideBySide) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  for (const auto& [name, text] : {std::pair{"a.txt", kGraphA}, std::pair{"b.txt", kGraphB}}) {
    QFile f(dir.filePath(QLatin1String(name)));
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(text);
  }
  MainWindow window;
  window.open_diff(dir.filePath(QStringLiteral("a.txt")), dir.filePath(QStringLiteral("b.txt")));
  ASSERT_TRUE(window.wait_idle());
  ASSERT_NE(window.document(), nullptr) << window.messages().toStdString();
  auto* diff = window.diff_view();
  ASSERT_NE(diff, nullptr) << window.messages().toStdString();
  ASSERT_TRUE(diff->wait_for_layout());
  EXPECT_EQ(diff->left()->graph(), window.document()->graphs[0].graph);
  EXPECT_EQ(diff->result()->summary.added, 1u);
  // Selecting in the main window's graph is independent; the diff window follows its own canvases.
  const auto* ga = diff->left()->graph();
  diff->left()->select_node(ga->find_node("relu"));
  EXPECT_EQ(name_of(*diff->right()->graph(), diff->right()->selected()), "act_0");
}

}  // namespace
}  // namespace gparity::gui
