// gparity-view's run views under QT_QPA_PLATFORM=offscreen, on the bundled sample runs
// (samples/runs: FSDP2 2-rank, eager vs torch.compile; samples/runs/README.md): the heatmap
// model marks step 1 as the first divergence on both ranks with 14 of 21 parameters differing,
// eager vs eager_repeat has none, the curves carry ULP distances, the models pass
// QAbstractItemModelTester, and the main window opens two runs. With GPARITY_GUI_SCREENSHOTS=DIR
// set, the heatmap and curves are saved there as PNGs (docs/img).
#include "gui/run_views.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDir>
#include <QPixmap>
#include <QStandardPaths>
#include <memory>

#include "core/model/base/input_error.hpp"
#include "gui/main_window.hpp"
#include "gui/run_models.hpp"
#include "tests/support/qt_test_app.hpp"

namespace gparity::gui {
namespace {

const std::string kRuns = GPARITY_SOURCE_DIR "/samples/runs/";

using gparity::testing::app;
using gparity::testing::screenshot;

class RunViewsTest : public ::testing::Test {
 protected:
  void SetUp() override { app(); }
};

TEST_F(RunViewsTest, EagerVsCompileFirstDivergesAtStepOneOnEveryRank) {
  const RunPair runs = load_run_pair(kRuns + "eager", kRuns + "compile");
  ASSERT_EQ(runs.params.size(), 21U);
  EXPECT_EQ(runs.params.front(), "tok.weight");
  ASSERT_EQ(runs.ranks.size(), 2U);
  RunHeatmapModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_runs(&runs);
  for (int r = 0; r < 2; ++r) {
    model.set_rank_index(r);
    SCOPED_TRACE(r);
    ASSERT_EQ(model.columnCount(), 21);
    ASSERT_GE(model.rowCount(), 2);
    EXPECT_EQ(model.headerData(0, Qt::Vertical, Qt::DisplayRole).toString(), QStringLiteral("step 1"));
    ASSERT_TRUE(model.current()->first_divergence.has_value());
    EXPECT_EQ(model.current()->first_divergence->first, 0);   // step 1
    EXPECT_EQ(model.current()->first_divergence->second, 0);  // tok.weight
    EXPECT_TRUE(model.data(model.index(0, 0), RunHeatmapModel::kFirstDivergenceRole).toBool());
    EXPECT_FALSE(model.data(model.index(0, 1), RunHeatmapModel::kFirstDivergenceRole).toBool());
    EXPECT_EQ(model.differing_in_row(0), 14);
    int differing = 0;
    for (int c = 0; c < model.columnCount(); ++c)
      differing += model.data(model.index(0, c), RunHeatmapModel::kDiffersRole).toBool() ? 1 : 0;
    EXPECT_EQ(differing, 14);
    EXPECT_EQ(model.data(model.index(0, 0), Qt::DisplayRole).toString(), QStringLiteral("≠"));
  }
}

TEST_F(RunViewsTest, EagerVsEagerRepeatHasNoDivergence) {
  const RunPair runs = load_run_pair(kRuns + "eager", kRuns + "eager_repeat");
  RunHeatmapModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_runs(&runs);
  for (int r = 0; r < static_cast<int>(runs.ranks.size()); ++r) {
    model.set_rank_index(r);
    EXPECT_FALSE(model.current()->first_divergence.has_value());
    for (int row = 0; row < model.rowCount(); ++row) EXPECT_EQ(model.differing_in_row(row), 0);
    // Every cell was compared: a missing hash array would hide a divergence.
    EXPECT_FALSE(model.data(model.index(0, 0), RunHeatmapModel::kMissingRole).toBool());
  }
}

TEST_F(RunViewsTest, CurvesCarryBothRunsAndTheirUlpDistance) {
  const RunPair runs = load_run_pair(kRuns + "eager", kRuns + "compile");
  RunCurvesModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_runs(&runs);
  model.set_rank_index(1);
  ASSERT_EQ(model.columnCount(), RunCurvesModel::Count);
  ASSERT_GE(model.rowCount(), 2);
  bool some_loss_differs = false;
  for (int row = 0; row < model.rowCount(); ++row) {
    const double base = model.data(model.index(row, RunCurvesModel::BaseLoss), Qt::EditRole).toDouble();
    const double cand = model.data(model.index(row, RunCurvesModel::CandLoss), Qt::EditRole).toDouble();
    const QVariant ulp = model.data(model.index(row, RunCurvesModel::LossUlp), Qt::EditRole);
    ASSERT_TRUE(ulp.isValid()) << row;
    // Zero ULP exactly when the values are equal.
    EXPECT_EQ(ulp.toULongLong() == 0, base == cand) << row;
    some_loss_differs = some_loss_differs || base != cand;
  }
  // README: losses are still bitwise equal at step 1 while parameters already differ.
  EXPECT_EQ(model.data(model.index(0, RunCurvesModel::LossUlp), Qt::EditRole).toULongLong(), 0U);
  EXPECT_TRUE(some_loss_differs);
}

TEST_F(RunViewsTest, WidgetSummarisesAndPaints) {
  RunViewsWidget w(load_run_pair(kRuns + "eager", kRuns + "compile"));
  w.resize(1200, 760);
  w.show();
  EXPECT_TRUE(w.summary().contains(QStringLiteral("first divergence at step 1, tok.weight (14 of 21")))
      << w.summary().toStdString();
  w.set_rank_index(1);
  EXPECT_TRUE(w.summary().contains(QStringLiteral("rank 1"))) << w.summary().toStdString();
  w.set_rank_index(0);
  w.show_heatmap();
  QApplication::processEvents();
  EXPECT_FALSE(w.grab().isNull());
  screenshot(w, "run_heatmap");
  w.show_curves();
  QApplication::processEvents();
  screenshot(w, "run_curves");
}

// Every rank at once: each rank's steps one after the other, each rank's first divergence
// marked, a followed cause selecting its rank's row; one rank again on request.
TEST_F(RunViewsTest, HeatmapShowsEveryRankAtOnceAndFollowsACauseToItsRow) {
  const RunPair runs = load_run_pair(kRuns + "eager", kRuns + "compile");
  ASSERT_EQ(runs.ranks.size(), 2U);
  const int steps0 = static_cast<int>(runs.ranks[0].steps.size());
  const int steps1 = static_cast<int>(runs.ranks[1].steps.size());
  RunHeatmapModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_runs(&runs);
  model.set_all_ranks(true);
  ASSERT_EQ(model.rowCount(), steps0 + steps1);
  EXPECT_EQ(model.headerData(0, Qt::Vertical, Qt::DisplayRole).toString(), QStringLiteral("rank 0 · step 1"));
  EXPECT_EQ(model.headerData(steps0, Qt::Vertical, Qt::DisplayRole).toString(),
            QStringLiteral("rank 1 · step 1"));
  EXPECT_EQ(model.rank_step(steps0), (std::pair<int, int>{1, 0}));
  EXPECT_EQ(model.row_of(1, 0), steps0);
  EXPECT_FALSE(model.rank_step(steps0 + steps1).has_value());
  // Both ranks' first divergences (step 1, tok.weight), 14 parameters differing on each.
  for (const int row : {0, steps0}) {
    EXPECT_TRUE(model.data(model.index(row, 0), RunHeatmapModel::kFirstDivergenceRole).toBool()) << row;
    EXPECT_EQ(model.differing_in_row(row), 14) << row;
    EXPECT_TRUE(model.data(model.index(row, 0), Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("rank %1").arg(row == 0 ? 0 : 1)));
  }
  // Choosing a rank keeps every row; switching back to one rank shows that rank's rows only.
  model.set_rank_index(1);
  EXPECT_EQ(model.rowCount(), steps0 + steps1);
  model.set_all_ranks(false);
  EXPECT_EQ(model.rowCount(), steps1);
  EXPECT_EQ(model.rank_step(0), (std::pair<int, int>{1, 0}));
  EXPECT_EQ(model.row_of(0, 0), -1);

  // The widget opens on every rank; a cause of rank 1 selects rank 1's row, not rank 0's.
  RunViewsWidget w(load_run_pair(kRuns + "eager", kRuns + "compile"));
  w.resize(1200, 760);
  w.show();
  ASSERT_TRUE(w.heatmap_model()->all_ranks());
  CauseRef cause;
  cause.kind = CauseRef::Kind::RunCell;
  cause.rank = 1;
  cause.step = w.runs().ranks[1].steps[1];
  cause.param = w.runs().params[2];
  ASSERT_TRUE(w.select_cause(cause));
  EXPECT_EQ(w.heatmap()->selected_cell(), (std::pair<int, int>{steps0 + 1, 2}));
  EXPECT_EQ(w.heatmap_model()->current()->rank, 1);
  EXPECT_TRUE(w.summary().contains(QStringLiteral("rank 1"))) << w.summary().toStdString();
}

TEST_F(RunViewsTest, MainWindowOpensTwoRunsAndReportsBadOnes) {
  EXPECT_TRUE(MainWindow::is_run(QString::fromStdString(kRuns + "eager")));
  EXPECT_FALSE(MainWindow::is_run(QString::fromStdString(kRuns + "gate.json")));
  MainWindow window;
  window.open_runs(QString::fromStdString(kRuns + "eager"), QString::fromStdString(kRuns + "compile"));
  ASSERT_TRUE(window.wait_idle());
  ASSERT_NE(window.run_views(), nullptr);
  EXPECT_TRUE(window.run_views()->heatmap_model()->current()->first_divergence.has_value());
  window.open_runs(QString::fromStdString(kRuns + "eager"), QString::fromStdString(kRuns + "no_such_run"));
  ASSERT_TRUE(window.wait_idle());
  EXPECT_TRUE(window.messages().contains(QStringLiteral("Cannot open runs")))
      << window.messages().toStdString();
}

// A run whose rank 1 was killed at step 2 (the real `gparity run`, tests/data/runs/faults):
// against itself the views are not green, and the summary names the rank and step.
TEST_F(RunViewsTest, KilledRankIsNamedInTheSummaryNotShownAsParity) {
  const std::string run = GPARITY_SOURCE_DIR "/tests/data/runs/faults/killed-rank1-step2";
  RunViewsWidget w(load_run_pair(run, run));
  EXPECT_EQ(w.runs().exit_code, 1);
  EXPECT_TRUE(w.runs().verdict.starts_with("INCOMPLETE")) << w.runs().verdict;
  w.set_rank_index(1);
  const auto text = w.summary().toStdString();
  EXPECT_NE(text.find("INCOMPLETE"), std::string::npos) << text;
  EXPECT_NE(text.find("baseline rank 1 stopped after step 1: steps 2-3 missing"), std::string::npos) << text;
  EXPECT_EQ(text.find("rank 0 failed"), std::string::npos)
      << "rank 1's view names rank 1's evidence: " << text;

  // Two runs that failed at step 1: nothing compared on any rank.
  const std::string failed = GPARITY_SOURCE_DIR "/tests/data/runs/faults/failed-step1-kill";
  RunViewsWidget f(load_run_pair(failed, failed));
  EXPECT_EQ(f.runs().exit_code, 2);
  EXPECT_NE(f.summary().toStdString().find("nothing compared"), std::string::npos)
      << f.summary().toStdString();
}

TEST_F(RunViewsTest, NotARunIsAnInputError) {
  EXPECT_THROW((void)load_run_pair(kRuns + "eager", kRuns + "gate.json"), model::InputError);
}

}  // namespace
}  // namespace gparity::gui
