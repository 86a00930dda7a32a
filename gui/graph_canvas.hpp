#pragma once
// The graph canvas: paints a laid-out graph from a spatial index instead of one scene item per
// node, so 100,000-node graphs pan at frame rate. Layout (gui/layout) runs on a worker thread
// whenever the graph or the set of collapsed groups changes; the result is adopted on the GUI
// thread only if no newer request superseded it. Visible nodes are found per layer by binary
// search on x (layers are rows, nodes in a row are sorted by x); when boxes would be smaller than a
// few pixels the canvas blits a pre-rendered overview image instead (also the minimap).
// Interaction: drag to pan, wheel to zoom around the cursor, click to select, double-click on a
// group box to expand it (on a grouped node to collapse its group); keys: Up/Down follow the
// first input / first user edge, Left/Right move along the layer, F fits, +/- zoom.

#include <QAbstractScrollArea>
#include <QColor>
#include <QImage>
#include <QString>
#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "gui/document.hpp"
#include "gui/layout/view_graph.hpp"
#include "gui/legend.hpp"

template <typename T>
class QFutureWatcher;

namespace gparity::gui {

/// One finished layout: a value built on a worker thread and handed to the canvas.
struct CanvasLayout {
  std::shared_ptr<const model::UseEdges> edges;
  std::shared_ptr<const Grouping> grouping;
  std::vector<char> collapsed;  // per group
  ViewGraph view;
  LayoutResult result;
  std::vector<std::array<float, 4>> group_boxes;  // expanded groups: left, top, right, bottom
  QImage overview;                                // the whole layout, for LOD and the minimap
  float overview_scale = 1;                       // image pixels per layout unit
};

/// Builds a CanvasLayout (no widget involved: tests and the bench call it directly).
/// `collapsed` empty: the default (every group collapsed when the graph has > 3000 nodes).
std::shared_ptr<CanvasLayout> compute_canvas_layout(const model::Graph& g,
                                                    std::shared_ptr<const model::UseEdges> edges,
                                                    std::shared_ptr<const Grouping> grouping,
                                                    std::vector<char> collapsed,
                                                    const std::atomic<bool>* cancel);

class GraphCanvas final : public QAbstractScrollArea {
  Q_OBJECT

 public:
  explicit GraphCanvas(QWidget* parent = nullptr);
  ~GraphCanvas() override;

  void set_graph(std::shared_ptr<const Document> doc, const model::Graph* graph);
  [[nodiscard]] const model::Graph* graph() const { return graph_; }
  [[nodiscard]] bool layout_pending() const { return pending_; }
  /// Spins the event loop until the pending layout is adopted (tests, bench, screenshots).
  bool wait_for_layout(int timeout_ms = 30000);
  [[nodiscard]] const CanvasLayout* current_layout() const { return layout_.get(); }

  void select_node(model::NodeId id, bool center = true);
  [[nodiscard]] model::NodeId selected() const { return selected_; }
  /// Per-node fill colours (diff mode); an invalid QColor keeps the default.
  void set_node_colors(std::vector<QColor> colors);
  /// What those colours mean, listed in the legend after the node kinds (empty: kinds only).
  void set_legend(std::vector<LegendEntry> entries);
  [[nodiscard]] const std::vector<LegendEntry>& legend() const { return legend_; }
  /// Labels drawn at the last paint where boxes were too small for their text: group frames'
  /// labels and node names at screen size, where they overlap no other label (level of detail;
  /// tests check fit-all is readable).
  [[nodiscard]] const std::vector<QString>& lod_labels() const { return lod_text_; }

  /// Case-insensitive substring search in names and targets; selects the first match.
  int search(const QString& text);
  void next_match();
  void previous_match();
  [[nodiscard]] int match_count() const { return static_cast<int>(matches_.size()); }

  void set_group_collapsed(std::uint32_t group, bool collapsed);
  /// Collapses (true) or expands (false) every group at once.
  void set_all_groups_collapsed(bool collapsed);
  void fit();
  void zoom_by(double factor, QPointF anchor_view = QPointF(-1, -1));
  [[nodiscard]] double scale() const { return scale_; }
  void pan_by(int dx, int dy);
  void center_on_layout(QPointF p);
  /// Centre of the viewport and extent of the drawn content, in layout units (diff mode syncs
  /// two canvases through them).
  [[nodiscard]] QPointF view_center() const;
  [[nodiscard]] QRectF layout_bounds() const { return content_rect(); }
  /// Boxes painted by the last paint event (tests check the spatial query, the bench reports it).
  [[nodiscard]] std::size_t painted_items() const { return painted_items_; }

 signals:
  void node_selected(quint32 node);
  void layout_ready();
  /// Scroll position or scale changed.
  void viewport_changed();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void request_layout(std::vector<char> collapsed);
  void adopt_layout();
  void update_scrollbars();
  [[nodiscard]] QRectF content_rect() const;  // layout units, with margin
  [[nodiscard]] QPointF origin() const;       // view pixel offset of content_rect().topLeft()
  [[nodiscard]] QPointF to_layout(QPointF view) const;
  [[nodiscard]] QPointF to_view(QPointF layout) const;
  [[nodiscard]] QRectF item_rect(std::uint32_t item) const;
  [[nodiscard]] std::int64_t item_at(QPointF view) const;  // -1 when none
  [[nodiscard]] QRect minimap_rect() const;
  [[nodiscard]] model::NodeId representative(std::uint32_t item) const;
  void paint_graph(QPainter& p, const QRectF& visible);
  void move_selection(int key);

  std::shared_ptr<const Document> doc_;
  const model::Graph* graph_ = nullptr;
  std::shared_ptr<CanvasLayout> layout_;
  std::unique_ptr<QFutureWatcher<std::shared_ptr<CanvasLayout>>> watcher_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  bool pending_ = false;
  bool fit_on_adopt_ = true;
  double scale_ = 1.0;
  model::NodeId selected_ = model::kNoNode;
  bool center_on_adopt_ = false;
  std::vector<QColor> node_colors_;
  std::vector<LegendEntry> legend_;
  struct LodCandidate {
    QRectF anchor;  // the box or group frame, view coordinates
    QString text;
    bool group = false;
  };
  std::vector<LodCandidate> lod_candidates_;
  std::vector<QRectF> lod_rects_;  // the labels placed at the last paint, view coordinates
  std::vector<QString> lod_text_;
  std::vector<char> lod_is_group_;
  std::vector<model::NodeId> matches_;
  std::vector<char> is_match_;
  int match_pos_ = -1;
  QPoint drag_start_;
  QPoint drag_last_;
  bool dragging_ = false;
  std::size_t painted_items_ = 0;
};

}  // namespace gparity::gui
