// Collectives view (gui/views/collectives_view.*) offscreen on the shared DCP sample's Flight
// Recorder pickles (torch-2.11-dcp: fsdp4's four ranks, fsdp2's two): the same verdict as
// `gparity collectives` (diff::load_collectives + diff::report_collectives), root / non-root
// scatter and gather records shown as matched by the rooted rule, and against a baseline the
// report's first divergence selected in its stream, rank and position.

#include "gui/views/collectives_view.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>

#include "diff/collectives/collectives.hpp"
#include "gui/legend.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/shared_data.hpp"

namespace gparity::gui::views {
namespace {

std::size_t count_status(const CollectiveStreamTable& t, const std::string& status) {
  std::size_t n = 0;
  for (const auto& c : t.columns)
    for (const auto& cell : c.cells) n += cell.status == status;
  return n;
}

diff::CollectingConsumer collectives_cli_report(const std::vector<std::string>& paths,
                                                const std::vector<std::string>& base) {
  const auto run = diff::load_collectives(paths);
  std::optional<diff::CollectiveRun> b;
  if (!base.empty()) b = diff::load_collectives(base);
  diff::CollectingConsumer out;
  (void)diff::report_collectives(run, b ? &*b : nullptr, out);
  return out;
}

TEST(CollectivesView, FourRanksOfPicklesAgreeAndShowTheRootedRule) {
  const auto dcp = gparity::testing::sample_folder("torch-2.11-dcp");
  if (dcp.empty()) GTEST_SKIP() << "shared samples not found";
  gparity::testing::app();
  const std::vector<std::string> paths = {(dcp / "fsdp4").string()};
  const auto cli = collectives_cli_report(paths, {});
  auto data = load_collective_sequences(paths);
  EXPECT_EQ(data.exit_code, 0);
  EXPECT_EQ(data.headline, cli.verdict.headline);
  ASSERT_EQ(data.streams.size(), 1U);
  const auto& t = data.streams[0];
  ASSERT_EQ(t.columns.size(), 4U);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(t.columns[static_cast<std::size_t>(r)].rank, r);
  // `gparity collectives` counts 24 root / non-root pairs matched by the rooted rule: the view
  // marks one cell for each, on the non-reference ranks.
  EXPECT_EQ(count_status(t, "rooted"), 24U);
  EXPECT_EQ(count_status(t, "mismatch"), 0U);
  EXPECT_EQ(count_status(t, "differs"), 0U);

  CollectivesView view(std::move(data));
  view.resize(1280, 640);
  view.show();
  QApplication::processEvents();
  EXPECT_EQ(view.shown_stream(), 0);
  // A rooted cell, selected by its Flight Recorder seq.
  const auto& shown = view.data().streams[0];
  std::int64_t seq = -1;
  int row = -1;
  for (std::size_t i = 0; i < shown.columns[2].cells.size() && seq < 0; ++i)
    if (shown.columns[2].cells[i].status == "rooted") {
      seq = shown.columns[2].cells[i].seq;
      row = static_cast<int>(i);
    }
  ASSERT_GT(seq, 0);
  CauseRef cause;
  cause.kind = CauseRef::Kind::CollectiveEntry;
  cause.rank = 2;
  cause.group = "0";
  cause.seq = seq;
  ASSERT_TRUE(view.select_cause(cause));
  EXPECT_EQ(view.selection().rank, 2);
  EXPECT_EQ(view.selection().row, row);
  EXPECT_EQ(view.model().data(view.model().index(row, 2), CollectiveStreamModel::kStatusRole).toString(),
            QStringLiteral("rooted"));
  gparity::testing::screenshot(view, "view_collectives_rooted");
  cause.rank = 9;
  EXPECT_FALSE(view.select_cause(cause));
  cause.rank = 2;
  cause.group = "77";
  EXPECT_FALSE(view.select_cause(cause));
  EXPECT_TRUE(view.legend()->labels().contains(QStringLiteral("rooted")));

  CollectiveStreamModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_stream(&view.data().streams[0]);
  model.set_stream(nullptr);
}

TEST(CollectivesView, AgainstTheBaselineTheReportsFirstDivergenceIsSelected) {
  const auto dcp = gparity::testing::sample_folder("torch-2.11-dcp");
  if (dcp.empty()) GTEST_SKIP() << "shared samples not found";
  gparity::testing::app();
  const std::vector<std::string> cand = {(dcp / "fsdp2").string()}, base = {(dcp / "fsdp4").string()};
  const auto cli = collectives_cli_report(cand, base);
  const diff::Finding* first = nullptr;
  for (const auto& f : cli.findings)
    if (first == nullptr && f.severity == diff::Severity::Divergence) first = &f;
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->kind, "collective_changed") << first->message;
  CollectivesView view(load_collective_sequences(cand, base));
  view.resize(1280, 640);
  view.show();
  QApplication::processEvents();
  EXPECT_EQ(view.data().exit_code, 1);
  EXPECT_EQ(view.data().headline, cli.verdict.headline);
  const auto sel = view.selection();
  EXPECT_EQ(sel.stream, first->where.graph);
  EXPECT_EQ(sel.rank, *first->where.rank);
  EXPECT_FALSE(sel.baseline);
  EXPECT_EQ(sel.row, first->values["candidate_position"].get<int>() - 1);
  // Both sides of the change are marked: baseline ranks 0-3 first, then the candidate's.
  const auto& t = view.data().streams[static_cast<std::size_t>(view.shown_stream())];
  ASSERT_EQ(t.columns.size(), 6U);
  EXPECT_TRUE(t.columns[0].baseline);
  EXPECT_FALSE(t.columns[4].baseline);
  EXPECT_EQ(t.columns[4].cells[static_cast<std::size_t>(sel.row)].status, "changed");
  EXPECT_EQ(t.columns[0].cells[first->values["baseline_position"].get<std::size_t>() - 1].status, "changed");
  gparity::testing::screenshot(view, "view_collectives_baseline");
}

TEST(CollectivesView, ARealDeadlockMarksItsCycleAndTheInvertedCollectives) {
  // tests/data/collectives/fr_device/inversion_2r: rank 0 issued world #2 before tp #2, rank 1 the
  // other way round (real NCCL dumps, issue 34).
  gparity::testing::app();
  const std::vector<std::string> paths = {std::string(GPARITY_SOURCE_DIR) +
                                          "/tests/data/collectives/fr_device/inversion_2r"};
  CollectivesView view(load_collective_sequences(paths, {}));
  view.resize(1280, 640);
  view.show();
  QApplication::processEvents();
  EXPECT_EQ(view.data().exit_code, 1);
  const CollectiveFindingRef* deadlock = nullptr;
  for (const auto& f : view.data().findings)
    if (deadlock == nullptr && f.finding.kind == "collective_deadlock") deadlock = &f;
  ASSERT_NE(deadlock, nullptr);
  ASSERT_GE(deadlock->row, 0);  // the finding selects a collective of the cycle
  const auto& world = view.data().streams[static_cast<std::size_t>(deadlock->stream)];
  EXPECT_EQ(world.name, "pg 0 (default_pg)");
  // World #2 on both ranks: rank 0 blocks in it, rank 1 issued it behind its tp all_reduce.
  ASSERT_EQ(world.columns.size(), 2U);
  for (const auto& col : world.columns) {
    std::size_t n = 0;
    for (const auto& cell : col.cells) n += cell.status == "deadlock" && cell.seq == 2;
    EXPECT_EQ(n, 1U) << "rank " << col.rank;
  }
  std::size_t inverted = 0;
  for (const auto& t : view.data().streams) inverted += count_status(t, "inverted");
  EXPECT_GT(inverted, 0U);
}

TEST(CollectivesView, AFileThatIsNoCollectiveFormatIsRefusedNamingIt) {
  const std::string readme = std::string(GPARITY_SOURCE_DIR) + "/README.md";
  try {
    (void)load_collective_sequences({readme});
    ADD_FAILURE() << "README.md holds no collectives";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("README.md"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gparity::gui::views
