#pragma once
// The verdict page gparity-view opens on (issue 27): the verdict the CLI prints for what was
// opened (gui/verdict.hpp: headline, summary, checks, findings) and a grid of the whole job
// (rank x step, parameter x layout, rank x stream). Clicking a finding or a cell selects its cell
// and hands its CauseRef to the cause handler (MainWindow's registry of views, CauseRegistry),
// which shows the cause in the view that holds it.
// - VerdictGridModel / VerdictFindingsModel: QAbstractItemModel adapters over a JobVerdict
//   (tooltips, colours, kCellStateRole), tested with QAbstractItemModelTester.
// - VerdictGridView (gui/verdict_grid_view.cpp): paints the grid from the verdict directly (one
//   image pixel a cell, scaled: 256 x 1,000 cells pan at screen rate), a legend, row and column
//   labels at a level of detail that keeps them readable, tooltips per cell. A grid of at most kLabelEveryRow
//   rows (a few ranks x hundreds of nodes) keeps its rows one text line tall, however narrow its columns, so
//   every row is labelled; a taller one labels every k-th row when they would overlap, and hovering the label
//   column (or the column labels) names the row (column) under the cursor.

#include <QAbstractScrollArea>
#include <QAbstractTableModel>
#include <QImage>
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "gui/cause_ref.hpp"
#include "gui/verdict.hpp"

class QLabel;
class QTableView;

namespace gparity::gui {

/// Views that select causes, offered every cause in turn (views added later register here).
class CauseRegistry {
 public:
  using Handler = std::function<bool(const CauseRef&)>;
  void add(Handler h) { handlers_.push_back(std::move(h)); }
  /// Offers `c` to every handler; true when any selected it.
  bool follow(const CauseRef& c) const {
    bool taken = false;
    for (const auto& h : handlers_) taken = h(c) || taken;
    return taken;
  }
  [[nodiscard]] std::size_t size() const noexcept { return handlers_.size(); }

 private:
  std::vector<Handler> handlers_;
};

QColor cell_state_color(CellState s);

class VerdictGridModel final : public QAbstractTableModel {
 public:
  static constexpr int kCellStateRole = Qt::UserRole + 1;  // int(CellState)
  void set_verdict(std::shared_ptr<const JobVerdict> v);
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::shared_ptr<const JobVerdict> v_;
};

/// The findings the CLI prints (severity warning and up), in its order.
class VerdictFindingsModel final : public QAbstractTableModel {
 public:
  enum Column { Severity, Where, Message, ColumnCount };
  static constexpr int kFindingIndexRole = Qt::UserRole + 1;  // index into JobVerdict::findings
  void set_verdict(std::shared_ptr<const JobVerdict> v);
  [[nodiscard]] std::size_t finding_index(int row) const { return rows_[static_cast<std::size_t>(row)]; }
  [[nodiscard]] int row_of(std::size_t finding) const;
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::shared_ptr<const JobVerdict> v_;
  std::vector<std::size_t> rows_;
};

class VerdictGridView final : public QAbstractScrollArea {
 public:
  explicit VerdictGridView(QWidget* parent = nullptr);
  void set_verdict(std::shared_ptr<const JobVerdict> v);
  void select_cell(std::size_t row, std::size_t column);
  [[nodiscard]] std::optional<std::pair<std::size_t, std::size_t>> selected_cell() const { return selected_; }
  /// Called with a clicked cell.
  std::function<void(std::size_t, std::size_t)> on_cell_clicked;
  void set_cell_size(double px);
  [[nodiscard]] double cell_size() const noexcept { return cell_; }
  void zoom_by(double factor);
  /// The whole grid in the viewport (cells down to one pixel). A grid of a few rows and columns
  /// (square cells of kStretchFrom px or more would fit) uses the page: its columns share the
  /// width and its rows the height. Until the cells are sized otherwise, a resize fits again.
  void fit_all();
  static constexpr double kStretchFrom = 32;
  void pan_by(int dx, int dy);
  /// The cell under a viewport point.
  [[nodiscard]] std::optional<std::pair<std::size_t, std::size_t>> cell_at(QPoint p) const;
  [[nodiscard]] QRect cell_rect(std::size_t row, std::size_t column) const;  // viewport coordinates
  /// Rows up to this many are never thinner than a line of text: each one is labelled.
  static constexpr std::size_t kLabelEveryRow = 64;
  /// A row's height on screen: the cell size (a fitted small grid: its share of the height), or
  /// a text line for grids of few rows.
  [[nodiscard]] double row_height() const;
  /// The rows whose labels are drawn at the current zoom and scroll position, top to bottom.
  [[nodiscard]] std::vector<std::size_t> labelled_rows() const;
  /// What hovering a viewport point shows: the cell's tooltip over a cell, the full row (column)
  /// name over the label column (the column labels); "" elsewhere.
  [[nodiscard]] QString tooltip_at(QPoint p) const;
  [[nodiscard]] QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  bool viewportEvent(QEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  void update_scrollbars();
  [[nodiscard]] int top_margin() const;
  /// The row / column under a viewport coordinate, anywhere beside the grid's other axis.
  [[nodiscard]] std::optional<std::size_t> row_at(int y) const;
  [[nodiscard]] std::optional<std::size_t> column_at(int x) const;
  /// Labels are drawn for every k-th row (column), k this.
  [[nodiscard]] std::size_t row_label_stride() const;
  [[nodiscard]] std::size_t column_label_stride() const;
  std::shared_ptr<const JobVerdict> v_;
  QImage image_;         // one pixel a cell
  double cell_ = 16;     // a column's width (and a row's height, unless row_fit_)
  double row_fit_ = 0;   // a small grid fitted to the page: its rows' height; 0: the cells'
  bool fitted_ = false;  // sized by fit_all: a resize fits again
  int left_ = 110;
  std::optional<std::pair<std::size_t, std::size_t>> selected_;
};

class VerdictPage final : public QWidget {
 public:
  explicit VerdictPage(QWidget* parent = nullptr);
  void set_verdict(std::shared_ptr<const JobVerdict> v);
  void clear(const QString& message);
  [[nodiscard]] std::shared_ptr<const JobVerdict> verdict() const { return v_; }
  /// Where a followed cause goes (MainWindow: its CauseRegistry).
  std::function<bool(const CauseRef&)> on_cause;
  /// Selects finding row `row` (of findings()): its cell in the grid, then on_cause.
  bool follow_finding(int row);
  bool follow_cell(std::size_t row, std::size_t column);
  /// The first divergence as the page names it ("" when none): the first-cause finding's place
  /// and message.
  [[nodiscard]] QString first_divergence() const;
  [[nodiscard]] QString headline() const;
  [[nodiscard]] const VerdictFindingsModel* findings() const { return findings_model_.get(); }
  [[nodiscard]] const VerdictGridModel* grid_model() const { return grid_model_.get(); }
  [[nodiscard]] VerdictGridView* grid() const { return grid_; }
  [[nodiscard]] QLabel* paths_label() const { return paths_; }

 private:
  std::shared_ptr<const JobVerdict> v_;
  std::unique_ptr<VerdictGridModel> grid_model_;
  std::unique_ptr<VerdictFindingsModel> findings_model_;
  QLabel* headline_ = nullptr;
  QLabel* paths_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* first_ = nullptr;
  QTableView* findings_view_ = nullptr;
  VerdictGridView* grid_ = nullptr;
};

}  // namespace gparity::gui
