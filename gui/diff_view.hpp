#pragma once
// Side-by-side diff of two graphs (issue 7, diff mode): graph A on the left canvas, graph B on the
// right, and the changes list beneath. All comparing is diff::diff_graphs (the graph-diff issue's
// alignment); this widget only colours and keeps the two sides in step through that alignment:
// - selecting a node on one side selects and centres its aligned node on the other (an added or
//   removed node leaves the other side's selection as it was);
// - panning or zooming one side moves the other to the same relative position and scale;
// - nodes are filled by change: removed (left) red, added (right) green, changed amber, moved
//   blue, moved and changed violet;
// - a row of the changes list selects its node on both sides.
// The DiffView holds the Documents it shows, so the graphs it points into stay alive.

#include <QAbstractTableModel>
#include <QColor>
#include <QWidget>
#include <memory>
#include <vector>

#include "diff/graphs/graph_diff.hpp"
#include "gui/document.hpp"

class QTableView;
class QLabel;

namespace gparity::gui {

class GraphCanvas;

/// Item data role of a changes row: the A-side NodeId (int, -1 for an added node).
inline constexpr int kLeftNodeRole = Qt::UserRole + 10;
/// Item data role of a changes row: the B-side NodeId (int, -1 for a removed node).
inline constexpr int kRightNodeRole = Qt::UserRole + 11;

/// "added", "removed", "moved", "changed", "moved, changed".
QString change_kind(const diff::NodeChange& c);
/// Fill colour of a change (also the canvas colour of its nodes).
QColor change_color(const diff::NodeChange& c);

/// One row per diff::NodeChange, in diff_graphs' order (A's order, then B's added nodes).
class DiffChangesModel final : public QAbstractTableModel {
 public:
  enum Column { Change, Left, Right, Target, Fields, ColumnCount };
  /// `a` and `b` must outlive the model's use of `r` (the DiffView keeps their Documents).
  void set_diff(const model::Graph* a, const model::Graph* b, std::shared_ptr<const diff::GraphDiffResult> r);
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  const model::Graph* a_ = nullptr;
  const model::Graph* b_ = nullptr;
  std::shared_ptr<const diff::GraphDiffResult> r_;
};

class DiffView final : public QWidget {
 public:
  explicit DiffView(QWidget* parent = nullptr);
  ~DiffView() override;

  /// Diffs graph `a` of `doc_a` against graph `b` of `doc_b` (the same Document is fine) and shows
  /// both. Each side's rank, when known, is its local device for diff/'s normalization.
  void set_graphs(std::shared_ptr<const Document> doc_a, std::size_t a, std::shared_ptr<const Document> doc_b,
                  std::size_t b);
  /// Spins the event loop until both canvases have adopted their layouts.
  bool wait_for_layout(int timeout_ms = 30000);

  [[nodiscard]] GraphCanvas* left() const { return left_; }
  [[nodiscard]] GraphCanvas* right() const { return right_; }
  [[nodiscard]] const DiffChangesModel* changes() const { return model_.get(); }
  [[nodiscard]] const diff::GraphDiffResult* result() const { return result_.get(); }
  /// Selects the nodes a changes row names on both sides (what a click on the row does).
  void jump_to_change(int row);

 private:
  void on_selected(bool from_left, model::NodeId id);
  void sync_viewport(bool from_left);
  void colour_nodes();

  std::shared_ptr<const Document> doc_a_, doc_b_;
  const GraphEntry* entry_a_ = nullptr;
  const GraphEntry* entry_b_ = nullptr;
  std::shared_ptr<const diff::GraphDiffResult> result_;
  std::unique_ptr<DiffChangesModel> model_;
  GraphCanvas* left_ = nullptr;
  GraphCanvas* right_ = nullptr;
  QLabel* left_title_ = nullptr;
  QLabel* right_title_ = nullptr;
  QLabel* summary_ = nullptr;
  QTableView* table_ = nullptr;
  bool syncing_ = false;  // one side is being moved to follow the other: do not echo back
};

}  // namespace gparity::gui
