// The verdict page's grid labels (gui/verdict_page.hpp, VerdictGridView) on grids made in
// memory: a few ranks against hundreds of nodes keeps every row labelled at fit-all (its rows
// stay a line of text tall however narrow the columns), and a grid too tall to label every row
// names each one, labelled or not, when the label column is hovered.
#include <gtest/gtest.h>

#include <QApplication>
#include <algorithm>
#include <memory>
#include <string>

#include "gui/verdict_page.hpp"
#include "tests/support/qt_test_app.hpp"

namespace gparity::gui {
namespace {

using gparity::testing::app;

std::shared_ptr<const JobVerdict> grid_of(std::size_t ranks, std::size_t nodes) {
  auto v = std::make_shared<JobVerdict>();
  v->kind = JobVerdict::Kind::Collectives;  // a grid only: no evidence behind the tooltips
  v->grid.row_title = "rank";
  v->grid.column_title = "node";
  for (std::size_t r = 0; r < ranks; ++r) v->grid.rows.push_back("rank " + std::to_string(r));
  for (std::size_t n = 0; n < nodes; ++n) v->grid.columns.push_back("node_" + std::to_string(n));
  v->grid.cells.assign(ranks * nodes, CellState::Equal);
  v->grid.cells[1 * nodes + 7] = CellState::FirstDivergence;
  v->grid.finding_of_cell.assign(ranks * nodes, -1);
  return v;
}

// The viewport point at the middle of row `row`'s label.
QPoint label_point(const VerdictGridView& grid, std::size_t row) {
  return {4, grid.cell_rect(row, 0).center().y()};
}

class VerdictGridLabelsTest : public ::testing::Test {
 protected:
  // A ranks x nodes grid shown at `size`, fitted in the window as the page opens it.
  void show_fitted(std::size_t ranks, std::size_t nodes, QSize size) {
    grid_.resize(size);
    grid_.show();
    grid_.set_verdict(grid_of(ranks, nodes));
    grid_.fit_all();
  }

  // The application first: members are built before SetUp, and a widget needs it (ctest runs
  // each test in a process of its own).
  QApplication& app_ = app();
  VerdictGridView grid_;
};

TEST_F(VerdictGridLabelsTest, FewRanksAgainstHundredsOfNodesLabelEveryRankAtFitAll) {
  show_fitted(4, 600, QSize(900, 420));
  auto& grid = grid_;
  const int line = grid.fontMetrics().height();
  // The cells are narrower than a line of text (600 columns in ~800 px) ...
  ASSERT_LT(grid.cell_size(), line);
  // ... but the rows are a line tall, so each rank is named.
  EXPECT_GE(grid.row_height(), line);
  EXPECT_EQ(grid.labelled_rows(), (std::vector<std::size_t>{0, 1, 2, 3}));
  for (std::size_t r = 0; r < 4; ++r) {
    const QRect cell = grid.cell_rect(r, 0);
    EXPECT_GE(cell.height(), line) << r;
    EXPECT_TRUE(grid.viewport()->rect().contains(cell.center())) << r << " is off screen";
    // Clicking in a row's band reaches that row's cells.
    const auto clicked = grid.cell_at(grid.cell_rect(r, 10).center());
    ASSERT_TRUE(clicked.has_value()) << r;
    EXPECT_EQ(clicked->first, r);
    EXPECT_EQ(grid.tooltip_at(label_point(grid, r)), QStringLiteral("rank: rank %1").arg(r));
  }
  EXPECT_FALSE(grid.grab().isNull());
  // Zoomed in as far as it goes the rows follow the cells again.
  grid.set_cell_size(40);
  EXPECT_EQ(grid.row_height(), 40);
}

TEST_F(VerdictGridLabelsTest, TallGridsThinOutTheirLabelsAndHoverNamesEveryRow) {
  show_fitted(256, 1000, QSize(900, 700));
  auto& grid = grid_;
  ASSERT_LT(grid.row_height(), grid.fontMetrics().height());  // 256 rows at fit-all: ~2 px each
  const auto labelled = grid.labelled_rows();
  ASSERT_GE(labelled.size(), 2U);
  EXPECT_LT(labelled.size(), 256U);
  EXPECT_EQ(labelled.front(), 0U);
  // Drawn labels do not overlap.
  for (std::size_t i = 1; i < labelled.size(); ++i)
    EXPECT_GE(grid.cell_rect(labelled[i], 0).top() - grid.cell_rect(labelled[i - 1], 0).top(),
              grid.fontMetrics().height());
  // Every row is named on hover, the unlabelled ones included; so is every column.
  for (const std::size_t r : {std::size_t{1}, std::size_t{2}, std::size_t{127}, std::size_t{255}}) {
    EXPECT_EQ(std::count(labelled.begin(), labelled.end(), r) == 0, r % (labelled[1] - labelled[0]) != 0);
    EXPECT_EQ(grid.tooltip_at(label_point(grid, r)), QStringLiteral("rank: rank %1").arg(r));
  }
  const QRect column_7 = grid.cell_rect(0, 7);
  EXPECT_EQ(grid.tooltip_at(QPoint(column_7.center().x(), column_7.top() - 20)),
            QStringLiteral("node: node_7"));
  // A cell's tooltip is the cell's.
  EXPECT_TRUE(
      grid.tooltip_at(grid.cell_rect(1, 7).center()).startsWith(QStringLiteral("rank 1 · node_7: first")));
  EXPECT_FALSE(grid.grab().isNull());
}

}  // namespace
}  // namespace gparity::gui
