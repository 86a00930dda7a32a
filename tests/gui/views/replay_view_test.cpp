// Replay records view (gui/views/replay_view.*) under QT_QPA_PLATFORM=offscreen, on
// tests/data/replay/coor_run: the real `gparity replay --coor` of causal_trace's compile 1/0 on
// four CPU ranks (make_coor_run.sh): rank 1's slice bound is wrong (origin), rank 0 receives it
// through the tp group '3' all-reduce, ranks 2 and 3 are equal. The view must name the same first
// divergent node, with the same cause, as the verdict `gparity replay` printed (judged again from
// the records by diff::judge_replay_run, which the runtime tests hold equal to the CLI's output).

#include "gui/views/replay_view.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QTableView>
#include <QTest>
#include <algorithm>
#include <set>

#include "diff/replay/replay_verdict.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/legend.hpp"
#include "tests/support/qt_test_app.hpp"

namespace gparity::gui::views {
namespace {

const std::string kCoorRun = std::string(GPARITY_SOURCE_DIR) + "/tests/data/replay/coor_run";
const std::string kAgainstRun = std::string(GPARITY_SOURCE_DIR) + "/tests/data/replay/against_run";

bool diverges(const std::string& status) {
  return status != "equal" && status != "unmatched";
}

TEST(ReplayRecordsView, EveryRankShowsTheFirstDivergentNodeAndCauseOfTheCliVerdict) {
  const auto verdicts = diff::judge_replay_run(kCoorRun);
  const auto records = load_replay_records(kCoorRun);
  EXPECT_EQ(records.mode, "coor");
  ASSERT_EQ(records.ranks.size(), 4U);
  ASSERT_EQ(verdicts.size(), 4U);
  for (const auto& v : verdicts) {
    const auto* r = records.rank(v.rank);
    ASSERT_NE(r, nullptr) << v.rank;
    EXPECT_EQ(r->verdict, v.verdict.text) << v.rank;
    const ReplayNodeRow* first = nullptr;
    for (const auto& row : r->rows)
      if (first == nullptr && diverges(row.status)) first = &row;
    if (!v.verdict.json.contains("first_divergent")) {
      EXPECT_EQ(first, nullptr) << "rank " << v.rank << " is equal in the verdict; the view shows "
                                << first->node;
      continue;
    }
    ASSERT_NE(first, nullptr) << v.rank;
    EXPECT_EQ(first->node, v.verdict.json["first_divergent"]["node"]) << v.rank;
    EXPECT_EQ(first->status, v.verdict.json["cause"]) << v.rank;
    EXPECT_EQ(r->first_node, first->node) << v.rank;
  }
  // The facts of the sample, whatever the verdict says.
  const auto row_of = [&](int rank, const std::string& node) -> const ReplayNodeRow& {
    for (const auto& row : records.rank(rank)->rows)
      if (row.node == node) return row;
    ADD_FAILURE() << "no node " << node << " on rank " << rank;
    static const ReplayNodeRow none;
    return none;
  };
  EXPECT_EQ(row_of(1, "slice_1").status, "origin");
  EXPECT_NE(row_of(1, "slice_1").xxh3_a, row_of(1, "slice_1").xxh3_b);
  EXPECT_EQ(row_of(0, "all_reduce").status, "received");
  EXPECT_NE(row_of(0, "all_reduce").cause.find("from rank 1"), std::string::npos)
      << row_of(0, "all_reduce").cause;
  EXPECT_EQ(row_of(0, "slice_1").status, "equal");
  EXPECT_EQ(row_of(0, "slice_1").xxh3_a, row_of(0, "slice_1").xxh3_b);
  for (const int rank : {2, 3})
    for (const auto& row : records.rank(rank)->rows)
      EXPECT_FALSE(diverges(row.status)) << rank << " " << row.node;
}

TEST(ReplayRecordsView, OpensOnTheOriginAndStepsThroughDivergencesAndCauses) {
  gparity::testing::app();
  ReplayRecordsView view(load_replay_records(kCoorRun));
  view.resize(1280, 760);
  view.show();
  QApplication::processEvents();
  // The origin rank first, its first divergent node selected, both hashes in the inspector.
  EXPECT_EQ(view.shown_rank(), 1);
  EXPECT_EQ(view.selected_node(), "slice_1");
  // ... and on the canvas: the replayed graph, the node selected and filled with its status.
  ASSERT_TRUE(view.canvas()->wait_for_layout());
  ASSERT_NE(view.canvas()->graph(), nullptr);
  EXPECT_EQ(view.canvas()->selected(), view.canvas()->graph()->find_node("slice_1"));
  QApplication::processEvents();
  const auto* rank1 = view.records().rank(1);
  for (const auto& row : rank1->rows) {
    if (row.node == "slice_1") {
      EXPECT_TRUE(view.inspector_text().contains(QString::fromStdString(row.xxh3_a)))
          << view.inspector_text().toStdString();
      EXPECT_TRUE(view.inspector_text().contains(QString::fromStdString(row.xxh3_b)));
    }
  }
  gparity::testing::screenshot(view, "view_replay_records");

  // N / P: the next divergent node after slice_1, and back.
  ASSERT_TRUE(view.next_divergence());
  const std::string next = view.selected_node();
  EXPECT_NE(next, "slice_1");
  for (const auto& row : rank1->rows) {
    if (row.node == next) {
      EXPECT_TRUE(diverges(row.status)) << next;
    }
  }
  ASSERT_TRUE(view.previous_divergence());
  EXPECT_EQ(view.selected_node(), "slice_1");
  EXPECT_FALSE(view.previous_divergence()) << "slice_1 is rank 1's first divergence";
  // The same from the keyboard: N and P in the node table.
  auto* table = view.findChild<QTableView*>();
  ASSERT_NE(table, nullptr);
  QApplication::setActiveWindow(&view);
  table->setFocus();
  QTest::keyClick(table, Qt::Key_N);
  EXPECT_EQ(view.selected_node(), next);
  QTest::keyClick(table, Qt::Key_P);
  EXPECT_EQ(view.selected_node(), "slice_1");

  // A cause on another rank selects rank and node; one the records do not hold changes nothing.
  CauseRef cause;
  cause.kind = CauseRef::Kind::ReplayNode;
  cause.rank = 0;
  cause.node = "all_reduce";
  EXPECT_TRUE(view.select_cause(cause));
  EXPECT_EQ(view.shown_rank(), 0);
  EXPECT_EQ(view.selected_node(), "all_reduce");
  ASSERT_TRUE(view.canvas()->wait_for_layout());
  EXPECT_EQ(view.canvas()->selected(), view.canvas()->graph()->find_node("all_reduce"));
  // A node selected on the canvas selects its row.
  emit view.canvas()->node_selected(view.canvas()->graph()->find_node("mul_1"));
  EXPECT_EQ(view.selected_node(), "mul_1");
  ASSERT_TRUE(view.select_cause(cause));
  EXPECT_TRUE(view.inspector_text().contains(QStringLiteral("received")))
      << view.inspector_text().toStdString();
  QApplication::processEvents();
  gparity::testing::screenshot(view, "view_replay_records_received");
  cause.node = "no_such_node";
  EXPECT_FALSE(view.select_cause(cause));
  cause.rank = 7;
  cause.node = "all_reduce";
  EXPECT_FALSE(view.select_cause(cause));
  EXPECT_EQ(view.selected_node(), "all_reduce");
  cause.kind = CauseRef::Kind::Op;
  cause.rank = 0;
  EXPECT_FALSE(view.select_cause(cause)) << "another kind of cause";

  // Every status a row shows is in the legend; the model holds up under the tester.
  std::set<std::string> statuses;
  for (const auto& r : view.records().ranks)
    for (const auto& row : r.rows) statuses.insert(row.status);
  const QStringList labels = view.legend()->labels();
  for (const auto& s : statuses) EXPECT_TRUE(labels.contains(QString::fromStdString(s))) << s;
  ReplayNodeModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  for (const auto& r : view.records().ranks) model.set_rank(&r);
  model.set_rank(nullptr);
}

// `--against`: b is a with the sum reassociated and every computed node renamed; nodes pair by
// structure, so s1 is shown with its partner t1, and a cause naming b's node selects it.
TEST(ReplayRecordsView, AgainstShowsEachNodeWithItsPartnerAndTheCliFirstDivergence) {
  gparity::testing::app();
  const auto verdicts = diff::judge_replay_run(kAgainstRun);
  ReplayRecordsView view(load_replay_records(kAgainstRun));
  view.show();
  QApplication::processEvents();
  EXPECT_EQ(view.records().mode, "against");
  ASSERT_EQ(view.records().ranks.size(), 2U);
  ASSERT_EQ(verdicts.size(), 2U);
  EXPECT_EQ(view.shown_rank(), 0);
  EXPECT_EQ(view.selected_node(), verdicts[0].verdict.json["first_divergent"]["node"]);
  EXPECT_EQ(view.selected_node(), "s1");
  const auto& row = view.records().ranks[0].rows;
  const auto s1 = std::find_if(row.begin(), row.end(), [](const ReplayNodeRow& r) { return r.node == "s1"; });
  ASSERT_NE(s1, row.end());
  EXPECT_EQ(s1->node_b, verdicts[0].verdict.json["first_divergent"]["other_node"]);
  EXPECT_EQ(s1->node_b, "t1");
  EXPECT_EQ(s1->status, "origin");
  CauseRef cause;
  cause.kind = CauseRef::Kind::ReplayNode;
  cause.rank = 1;
  cause.node = "t2";  // b's name of s2
  ASSERT_TRUE(view.select_cause(cause));
  EXPECT_EQ(view.shown_rank(), 1);
  EXPECT_EQ(view.selected_node(), "s2");
}

TEST(ReplayRecordsView, ARunThatIsNotAReplayIsRefusedNamingIt) {
  const std::string runs = std::string(GPARITY_SOURCE_DIR) + "/samples/runs/eager";
  try {
    (void)load_replay_records(runs);
    ADD_FAILURE() << "a training run is not a replay run";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("replay"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gparity::gui::views
