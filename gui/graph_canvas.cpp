#include "gui/graph_canvas.hpp"

#include <QApplication>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "gui/display_text.hpp"

namespace gparity::gui {
namespace {

constexpr float kMargin = 40;
constexpr float kMaxWidth = 260;  // widest box label_width() makes; bounds the row search
constexpr std::size_t kCollapseAbove = 3000;
const LayoutOptions kOptions{};

float pitch() {
  return kOptions.node_height + kOptions.layer_gap;
}

QColor kind_color(const model::Graph& g, const model::Node& n) {
  switch (n.kind) {
    case model::NodeKind::Placeholder: return {214, 240, 214};
    case model::NodeKind::Output: return {209, 224, 255};
    case model::NodeKind::GetAttr: return {232, 232, 232};
    case model::NodeKind::Opaque: return {255, 190, 190};  // a statement the reader did not model
    default: break;
  }
  if (model::is_functional_collective(g.str(n.target))) return {255, 205, 160};
  return {255, 247, 214};
}

const QColor kGroupColor(226, 216, 246);

// What the node fills mean (kind_color), first in every canvas legend.
std::vector<LegendEntry> kind_legend() {
  return {{QColor(214, 240, 214), QStringLiteral("input")},
          {QColor(255, 247, 214), QStringLiteral("op")},
          {QColor(255, 205, 160), QStringLiteral("collective")},
          {QColor(232, 232, 232), QStringLiteral("get_attr")},
          {QColor(209, 224, 255), QStringLiteral("output")},
          {QColor(255, 190, 190), QStringLiteral("unparsed")},
          {kGroupColor, QStringLiteral("group (collapsed)")}};
}

void render_overview(CanvasLayout& c) {
  const auto& r = c.result;
  const float cw = r.max_x - r.min_x + 2 * kMargin;
  const float ch = r.height + 2 * kMargin;
  c.overview_scale = std::min(1024.0f / cw, 4096.0f / ch);
  const int w = std::max(1, static_cast<int>(std::ceil(cw * c.overview_scale)));
  const int h = std::max(1, static_cast<int>(std::ceil(ch * c.overview_scale)));
  c.overview = QImage(w, h, QImage::Format_RGB32);
  c.overview.fill(Qt::white);
  QPainter p(&c.overview);
  p.scale(c.overview_scale, c.overview_scale);
  p.translate(-(r.min_x - kMargin), kMargin);
  p.setPen(Qt::NoPen);
  const float min_extent = 1.0f / c.overview_scale;  // at least one pixel
  for (std::size_t i = 0; i < c.view.items.size(); ++i) {
    const float w2 = c.view.input.widths[i] / 2;
    const float h2 = std::max(kOptions.node_height, min_extent) / 2;
    p.fillRect(QRectF(r.x[i] - w2, r.y[i] - h2, std::max(2 * w2, min_extent), 2 * h2),
               c.view.items[i].is_group ? QColor(150, 120, 210) : QColor(120, 120, 120));
  }
}

}  // namespace

std::shared_ptr<CanvasLayout> compute_canvas_layout(const model::Graph& g,
                                                    std::shared_ptr<const model::UseEdges> edges,
                                                    std::shared_ptr<const Grouping> grouping,
                                                    std::vector<char> collapsed,
                                                    const std::atomic<bool>* cancel) {
  auto c = std::make_shared<CanvasLayout>();
  c->edges = edges ? std::move(edges) : std::make_shared<const model::UseEdges>(g);
  c->grouping = grouping ? std::move(grouping) : std::make_shared<const Grouping>(group_nodes(g));
  if (collapsed.empty()) collapsed.assign(c->grouping->groups.size(), g.nodes.size() > kCollapseAbove);
  c->collapsed = std::move(collapsed);
  c->view = build_view(g, *c->edges, *c->grouping, c->collapsed);
  c->result = LayeredLayout().layout(c->view.input, kOptions, cancel);
  if (c->result.cancelled) return nullptr;
  // Frames around expanded groups.
  const auto& groups = c->grouping->groups;
  c->group_boxes.assign(groups.size(), {0, 0, -1, -1});
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    if (c->collapsed[gi]) continue;
    std::array<float, 4> box = {1e30f, 1e30f, -1e30f, -1e30f};
    float area = 0;
    for (auto n = groups[gi].first; n < groups[gi].first + groups[gi].count; ++n) {
      const auto item = c->view.item_of_node[n];
      const float w2 = c->view.input.widths[item] / 2, h2 = kOptions.node_height / 2;
      area += 4 * w2 * h2;
      box = {std::min(box[0], c->result.x[item] - w2), std::min(box[1], c->result.y[item] - h2),
             std::max(box[2], c->result.x[item] + w2), std::max(box[3], c->result.y[item] + h2)};
    }
    // A frame around members the layout scattered would cover unrelated nodes: only compact
    // groups get one.
    if ((box[2] - box[0]) * (box[3] - box[1]) <= 6 * area) c->group_boxes[gi] = box;
  }
  render_overview(*c);
  return c;
}

GraphCanvas::GraphCanvas(QWidget* parent)
    : QAbstractScrollArea(parent),
      watcher_(std::make_unique<QFutureWatcher<std::shared_ptr<CanvasLayout>>>()) {
  setFocusPolicy(Qt::StrongFocus);
  viewport()->setMouseTracking(false);
  connect(watcher_.get(), &QFutureWatcherBase::finished, this, [this] { adopt_layout(); });
}

GraphCanvas::~GraphCanvas() {
  if (cancel_) cancel_->store(true);
  watcher_->waitForFinished();
}

void GraphCanvas::set_graph(std::shared_ptr<const Document> doc, const model::Graph* graph) {
  doc_ = std::move(doc);
  graph_ = graph;
  layout_.reset();
  selected_ = model::kNoNode;
  matches_.clear();
  is_match_.clear();
  node_colors_.clear();
  fit_on_adopt_ = true;
  request_layout({});
  viewport()->update();
}

void GraphCanvas::request_layout(std::vector<char> collapsed) {
  if (cancel_) cancel_->store(true);
  if (!graph_) return;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  pending_ = true;
  auto edges = layout_ ? layout_->edges : nullptr;
  auto grouping = layout_ ? layout_->grouping : nullptr;
  watcher_->setFuture(QtConcurrent::run(
      [doc = doc_, g = graph_, edges, grouping, collapsed = std::move(collapsed), cancel = cancel_] {
        return compute_canvas_layout(*g, edges, grouping, collapsed, cancel.get());
      }));
}

void GraphCanvas::adopt_layout() {
  auto result = watcher_->result();
  if (!result) return;  // cancelled: a newer request is running
  pending_ = false;
  layout_ = std::move(result);
  update_scrollbars();
  if (fit_on_adopt_) fit();
  fit_on_adopt_ = false;
  if (center_on_adopt_ && selected_ != model::kNoNode) {
    center_on_adopt_ = false;
    select_node(selected_, true);
  }
  viewport()->update();
  emit layout_ready();
}

bool GraphCanvas::wait_for_layout(int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (pending_ && t.elapsed() < timeout_ms) {
    watcher_->waitForFinished();
    QCoreApplication::processEvents();
  }
  return !pending_;
}

QRectF GraphCanvas::content_rect() const {
  if (!layout_) return {};
  const auto& r = layout_->result;
  return {r.min_x - kMargin, -kMargin, r.max_x - r.min_x + 2 * kMargin, r.height + 2 * kMargin};
}

QPointF GraphCanvas::origin() const {
  const QRectF c = content_rect();
  const QSize v = viewport()->size();
  const double cw = c.width() * scale_, ch = c.height() * scale_;
  return {cw < v.width() ? -(v.width() - cw) / 2 : horizontalScrollBar()->value(),
          ch < v.height() ? -(v.height() - ch) / 2 : verticalScrollBar()->value()};
}

QPointF GraphCanvas::to_layout(QPointF view) const {
  return (view + origin()) / scale_ + content_rect().topLeft();
}

QPointF GraphCanvas::to_view(QPointF layout) const {
  return (layout - content_rect().topLeft()) * scale_ - origin();
}

void GraphCanvas::update_scrollbars() {
  const QRectF c = content_rect();
  const QSize v = viewport()->size();
  horizontalScrollBar()->setRange(0, std::max(0, static_cast<int>(c.width() * scale_) - v.width()));
  verticalScrollBar()->setRange(0, std::max(0, static_cast<int>(c.height() * scale_) - v.height()));
  horizontalScrollBar()->setPageStep(v.width());
  verticalScrollBar()->setPageStep(v.height());
  horizontalScrollBar()->setSingleStep(20);
  verticalScrollBar()->setSingleStep(20);
}

void GraphCanvas::fit() {
  if (!layout_) return;
  const QRectF c = content_rect();
  const QSize v = viewport()->size();
  scale_ = std::clamp(std::min(v.width() / c.width(), v.height() / c.height()), 1e-4, 1.0);
  // A tall graph fitted whole is unreadable: fit the width, start at the top.
  if (c.height() * scale_ < v.height() / 4.0 || scale_ < 0.05)
    scale_ = std::clamp(v.width() / c.width(), 0.05, 1.0);
  update_scrollbars();
  horizontalScrollBar()->setValue(0);
  verticalScrollBar()->setValue(0);
  viewport()->update();
  emit viewport_changed();
}

void GraphCanvas::zoom_by(double factor, QPointF anchor_view) {
  if (!layout_) return;
  if (anchor_view.x() < 0) anchor_view = QPointF(viewport()->width() / 2.0, viewport()->height() / 2.0);
  const QPointF anchor = to_layout(anchor_view);
  scale_ = std::clamp(scale_ * factor, 1e-4, 8.0);
  update_scrollbars();
  const QPointF moved = (anchor - content_rect().topLeft()) * scale_ - anchor_view;
  horizontalScrollBar()->setValue(static_cast<int>(moved.x()));
  verticalScrollBar()->setValue(static_cast<int>(moved.y()));
  viewport()->update();
  emit viewport_changed();
}

void GraphCanvas::pan_by(int dx, int dy) {
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() + dx);
  verticalScrollBar()->setValue(verticalScrollBar()->value() + dy);
}

void GraphCanvas::center_on_layout(QPointF p) {
  const QPointF target = (p - content_rect().topLeft()) * scale_ -
                         QPointF(viewport()->width() / 2.0, viewport()->height() / 2.0);
  horizontalScrollBar()->setValue(static_cast<int>(target.x()));
  verticalScrollBar()->setValue(static_cast<int>(target.y()));
  viewport()->update();
}

QRectF GraphCanvas::item_rect(std::uint32_t item) const {
  const auto& r = layout_->result;
  const float w = layout_->view.input.widths[item];
  return {r.x[item] - w / 2, r.y[item] - kOptions.node_height / 2, w, kOptions.node_height};
}

std::int64_t GraphCanvas::item_at(QPointF view) const {
  if (!layout_) return -1;
  const QPointF l = to_layout(view);
  const auto layer = static_cast<std::int64_t>(std::floor(l.y() / pitch()));
  const auto& order = layout_->result.order;
  if (layer < 0 || layer >= static_cast<std::int64_t>(order.size())) return -1;
  for (auto item : order[static_cast<std::size_t>(layer)])
    if (item_rect(item).contains(l)) return item;
  return -1;
}

model::NodeId GraphCanvas::representative(std::uint32_t item) const {
  const auto& v = layout_->view.items[item];
  return v.is_group ? layout_->grouping->groups[v.index].first : v.index;
}

QRect GraphCanvas::minimap_rect() const {
  if (!layout_ || layout_->overview.isNull()) return {};
  const QSize img = layout_->overview.size();
  const int w = std::min(180, viewport()->width() / 4);
  const int h = std::clamp(w * img.height() / std::max(1, img.width()), 30, viewport()->height() / 3);
  return {viewport()->width() - w - 8, viewport()->height() - h - 8, w, h};
}

void GraphCanvas::paintEvent(QPaintEvent*) {
  QPainter p(viewport());
  p.fillRect(viewport()->rect(), Qt::white);
  painted_items_ = 0;
  if (!layout_) {
    p.drawText(
        viewport()->rect(), Qt::AlignCenter,
        graph_ ? tr("Laying out %1 nodes…").arg(graph_->nodes.size()) : tr("Open a graph (File > Open)"));
    return;
  }
  const QRectF visible(to_layout(QPointF(0, 0)),
                       to_layout(QPointF(viewport()->width(), viewport()->height())));
  lod_rects_.clear();
  lod_text_.clear();
  lod_is_group_.clear();
  lod_candidates_.clear();
  if (kOptions.node_height * scale_ < 10) {
    // Group frames large enough on screen get their label (the layer or module they hold).
    const auto& c = *layout_;
    for (std::size_t gi = 0; gi < c.group_boxes.size(); ++gi) {
      const auto& box = c.group_boxes[gi];
      if (box[2] < box[0]) continue;
      const QRectF rect(QPointF(box[0] - 6, box[1] - 6), QPointF(box[2] + 6, box[3] + 6));
      if (!rect.intersects(visible)) continue;
      const QRectF on_screen(to_view(rect.topLeft()), to_view(rect.bottomRight()));
      if (on_screen.height() < 8) continue;
      lod_candidates_.push_back({on_screen, shown_text(c.grouping->groups[gi].label), true});
    }
  }
  p.save();
  p.translate(-origin());
  p.scale(scale_, scale_);
  p.translate(-content_rect().topLeft());
  if (kOptions.node_height * scale_ < 3.0) {
    // Boxes would be under three pixels: the overview image carries the same picture.
    p.drawImage(content_rect(), layout_->overview);
  } else {
    paint_graph(p, visible);
  }
  p.restore();
  // Level of detail: where boxes are too small for their text at this scale, their names in a
  // smaller font and the group frames' labels, drawn at screen size so they stay readable.
  if (!lod_candidates_.empty()) {
    // Greedy placement: group labels first (a tab above the frame), then node names centred on
    // their box, each kept only where it overlaps no label already placed; so what is drawn is
    // readable at any zoom.
    QFont small = font();
    small.setPixelSize(10);
    p.setFont(small);
    const QFontMetrics fm = p.fontMetrics();
    const QRectF view(viewport()->rect());
    std::stable_partition(lod_candidates_.begin(), lod_candidates_.end(),
                          [](const LodCandidate& l) { return l.group; });
    for (const auto& l : lod_candidates_) {
      const double w = std::min(fm.horizontalAdvance(l.text) + 6, 240);
      const QRectF r = l.group ? QRectF(l.anchor.left(), l.anchor.top() - 13, w, 13)
                               : QRectF(l.anchor.center().x() - w / 2, l.anchor.center().y() - 6.5, w, 13);
      if (!view.intersects(r)) continue;
      if (std::any_of(lod_rects_.begin(), lod_rects_.end(),
                      [&](const QRectF& o) { return o.adjusted(-2, -1, 2, 1).intersects(r); }))
        continue;
      lod_rects_.push_back(r);
      lod_text_.push_back(l.text);
      lod_is_group_.push_back(l.group ? 1 : 0);
      if (lod_rects_.size() >= 400) break;
    }
    for (std::size_t i = 0; i < lod_rects_.size(); ++i) {
      const QRectF& r = lod_rects_[i];
      const bool group = lod_is_group_[i] != 0;
      p.fillRect(r, QColor(255, 255, 255, 215));
      p.setPen(group ? QColor(90, 60, 160) : Qt::black);
      p.drawText(r.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 fm.elidedText(lod_text_[i], Qt::ElideRight, static_cast<int>(r.width() - 6)));
    }
    p.setFont(font());
  }
  {
    // The kinds' fills only while some node still shows one: a view that colours every node
    // (the replay records view, by status) brings its own legend, and the kinds would mislead.
    const bool all_coloured =
        !legend_.empty() && !node_colors_.empty() &&
        std::all_of(node_colors_.begin(), node_colors_.end(), [](const QColor& c) { return c.isValid(); });
    std::vector<LegendEntry> entries = all_coloured ? std::vector<LegendEntry>{} : kind_legend();
    entries.insert(entries.end(), legend_.begin(), legend_.end());
    paint_legend(p, QPoint(6, 6), entries, viewport()->width() - 12);
  }

  // Minimap with the visible area.
  const QRect mm = minimap_rect();
  if (!mm.isEmpty()) {
    p.setOpacity(0.9);
    p.fillRect(mm.adjusted(-1, -1, 1, 1), QColor(90, 90, 90));
    p.drawImage(mm, layout_->overview);
    p.setOpacity(1);
    const QRectF c = content_rect();
    const QRectF rel((visible.left() - c.left()) / c.width(), (visible.top() - c.top()) / c.height(),
                     visible.width() / c.width(), visible.height() / c.height());
    p.setPen(QPen(QColor(220, 40, 40), 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRectF(mm.left() + rel.left() * mm.width(), mm.top() + rel.top() * mm.height(),
                      std::max(2.0, rel.width() * mm.width()), std::max(2.0, rel.height() * mm.height()))
                   .intersected(QRectF(mm)));
  }
}

void GraphCanvas::paint_graph(QPainter& p, const QRectF& visible) {
  const auto& c = *layout_;
  const auto& r = c.result;
  const float h2 = kOptions.node_height / 2;
  // Group frames first, behind everything.
  p.setPen(QPen(QColor(170, 150, 220), 0));
  p.setBrush(QColor(246, 242, 255));
  for (const auto& box : c.group_boxes) {
    if (box[2] < box[0]) continue;
    const QRectF rect(QPointF(box[0] - 6, box[1] - 6), QPointF(box[2] + 6, box[3] + 6));
    if (rect.intersects(visible)) p.drawRect(rect);
  }
  // Edges: bounding-box test on every edge (a few ns each), drawn in one call.
  const bool detailed = scale_ >= 0.15;
  if (detailed) {
    QVector<QLineF> lines;
    for (const auto& e : c.view.input.edges) {
      const QPointF a(r.x[e.from], r.y[e.from] + h2), b(r.x[e.to], r.y[e.to] - h2);
      if (std::max(a.x(), b.x()) < visible.left() || std::min(a.x(), b.x()) > visible.right() ||
          std::max(a.y(), b.y()) < visible.top() || std::min(a.y(), b.y()) > visible.bottom())
        continue;
      lines.push_back(QLineF(a, b));
    }
    p.setPen(QPen(QColor(150, 150, 150), 0));
    p.drawLines(lines);
  }
  // Nodes: rows in the visible band, binary search on x.
  const auto first_layer = static_cast<std::int64_t>(std::floor(visible.top() / pitch()));
  const auto last_layer = static_cast<std::int64_t>(std::floor(visible.bottom() / pitch()));
  const bool text = kOptions.node_height * scale_ >= 10;
  QFont name_font = font();
  name_font.setPointSizeF(9);
  QFont target_font = name_font;
  target_font.setPointSizeF(7);
  const QPen border(QColor(110, 110, 110), 0);
  const QPen selected_pen(QColor(220, 30, 30), 3);
  const QPen match_pen(QColor(230, 170, 0), 3);
  const auto sel_item = selected_ != model::kNoNode && selected_ < c.view.item_of_node.size()
                            ? static_cast<std::int64_t>(c.view.item_of_node[selected_])
                            : -1;
  for (auto l = std::max<std::int64_t>(first_layer, 0);
       l <= last_layer && l < static_cast<std::int64_t>(r.order.size()); ++l) {
    const auto& row = r.order[static_cast<std::size_t>(l)];
    auto it = std::lower_bound(row.begin(), row.end(), visible.left() - kMaxWidth / 2,
                               [&](std::uint32_t item, double x) { return r.x[item] < x; });
    for (; it != row.end() && r.x[*it] <= visible.right() + kMaxWidth / 2; ++it) {
      const auto item = *it;
      const QRectF rect = item_rect(item);
      if (!rect.intersects(visible)) continue;
      ++painted_items_;
      const auto& vi = c.view.items[item];
      const auto node = representative(item);
      QColor fill = vi.is_group ? kGroupColor : kind_color(*graph_, graph_->node(node));
      if (!vi.is_group && node < node_colors_.size() && node_colors_[node].isValid())
        fill = node_colors_[node];
      p.setBrush(fill);
      p.setPen(static_cast<std::int64_t>(item) == sel_item                    ? selected_pen
               : (!vi.is_group && node < is_match_.size() && is_match_[node]) ? match_pen
                                                                              : border);
      p.drawRect(rect);
      if (!text) {
        // Too small for the 9 pt name and target: the name alone, at screen size, when it fits.
        if (lod_candidates_.size() < 3000)
          lod_candidates_.push_back({QRectF(to_view(rect.topLeft()), to_view(rect.bottomRight())),
                                     vi.is_group ? shown_text(c.grouping->groups[vi.index].label)
                                                 : shown_text(graph_->str(graph_->node(node).name)),
                                     false});
        continue;
      }
      p.setPen(Qt::black);
      const QRectF inner = rect.adjusted(4, 1, -4, -1);
      if (vi.is_group) {
        const auto& grp = c.grouping->groups[vi.index];
        p.setFont(name_font);
        p.drawText(inner, Qt::AlignCenter,
                   QStringLiteral("▸ %1 (%2)").arg(shown_text(grp.label)).arg(grp.count));
        continue;
      }
      const auto& n = graph_->node(node);
      p.setFont(name_font);
      const auto name = graph_->str(n.name);
      p.drawText(QRectF(inner.left(), inner.top(), inner.width(), inner.height() * 0.55),
                 Qt::AlignHCenter | Qt::AlignBottom, shown_text(name));
      p.setFont(target_font);
      p.setPen(QColor(80, 80, 80));
      const auto target = graph_->str(n.target);
      p.drawText(
          QRectF(inner.left(), inner.top() + inner.height() * 0.55, inner.width(), inner.height() * 0.45),
          Qt::AlignHCenter | Qt::AlignTop, shown_text(target));
    }
  }
}

void GraphCanvas::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  update_scrollbars();
}

void GraphCanvas::scrollContentsBy(int, int) {
  viewport()->update();
  emit viewport_changed();
}

QPointF GraphCanvas::view_center() const {
  return to_layout(QPointF(viewport()->width() / 2.0, viewport()->height() / 2.0));
}

void GraphCanvas::mousePressEvent(QMouseEvent* event) {
  setFocus();
  const QPoint pos = event->position().toPoint();
  if (minimap_rect().contains(pos)) {
    const QRect mm = minimap_rect();
    const QRectF c = content_rect();
    center_on_layout(QPointF(c.left() + (pos.x() - mm.left()) * c.width() / mm.width(),
                             c.top() + (pos.y() - mm.top()) * c.height() / mm.height()));
    return;
  }
  drag_start_ = drag_last_ = pos;
  dragging_ = true;
}

void GraphCanvas::mouseMoveEvent(QMouseEvent* event) {
  if (!dragging_) return;
  const QPoint pos = event->position().toPoint();
  pan_by(drag_last_.x() - pos.x(), drag_last_.y() - pos.y());
  drag_last_ = pos;
}

void GraphCanvas::mouseReleaseEvent(QMouseEvent* event) {
  if (!dragging_) return;
  dragging_ = false;
  const QPoint pos = event->position().toPoint();
  if ((pos - drag_start_).manhattanLength() > 3) return;
  const auto item = item_at(pos);
  if (item >= 0) select_node(representative(static_cast<std::uint32_t>(item)), false);
}

void GraphCanvas::mouseDoubleClickEvent(QMouseEvent* event) {
  const auto item = item_at(event->position());
  if (item < 0) return;
  const auto& vi = layout_->view.items[static_cast<std::size_t>(item)];
  if (vi.is_group) {
    set_group_collapsed(vi.index, false);
  } else if (const auto grp = layout_->grouping->group_of[vi.index]; grp != kNoGroup) {
    set_group_collapsed(grp, true);
  }
}

void GraphCanvas::wheelEvent(QWheelEvent* event) {
  zoom_by(std::pow(1.0015, event->angleDelta().y()), event->position());
}

void GraphCanvas::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Up:
    case Qt::Key_Down:
    case Qt::Key_Left:
    case Qt::Key_Right: move_selection(event->key()); return;
    case Qt::Key_F: fit(); return;
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoom_by(1.25); return;
    case Qt::Key_Minus: zoom_by(0.8); return;
    default: QAbstractScrollArea::keyPressEvent(event);
  }
}

void GraphCanvas::move_selection(int key) {
  if (!layout_ || selected_ == model::kNoNode) return;
  const auto& edges = *layout_->edges;
  if (key == Qt::Key_Up || key == Qt::Key_Down) {
    const auto next = key == Qt::Key_Up ? edges.inputs(selected_) : edges.users(selected_);
    if (!next.empty()) select_node(next.front());
    return;
  }
  const auto item = layout_->view.item_of_node[selected_];
  const auto& row = layout_->result.order[layout_->result.layer[item]];
  const auto it = std::find(row.begin(), row.end(), item);
  if (key == Qt::Key_Left && it != row.begin()) select_node(representative(*(it - 1)));
  if (key == Qt::Key_Right && it + 1 != row.end()) select_node(representative(*(it + 1)));
}

void GraphCanvas::select_node(model::NodeId id, bool center) {
  if (!graph_ || id >= graph_->nodes.size()) return;
  const bool changed = id != selected_;
  selected_ = id;
  if (center && layout_) {
    const auto item = layout_->view.item_of_node[id];
    center_on_layout(QPointF(layout_->result.x[item], layout_->result.y[item]));
  }
  if (center && pending_) center_on_adopt_ = true;
  viewport()->update();
  if (changed) emit node_selected(id);
}

void GraphCanvas::set_legend(std::vector<LegendEntry> entries) {
  legend_ = std::move(entries);
  viewport()->update();
}

void GraphCanvas::set_node_colors(std::vector<QColor> colors) {
  node_colors_ = std::move(colors);
  viewport()->update();
}

int GraphCanvas::search(const QString& text) {
  matches_.clear();
  match_pos_ = -1;
  is_match_.assign(graph_ ? graph_->nodes.size() : 0, 0);
  if (!graph_ || text.isEmpty()) {
    viewport()->update();
    return 0;
  }
  const QByteArray needle = text.toUtf8().toLower();
  const std::string_view nd(needle.constData(), static_cast<std::size_t>(needle.size()));
  auto contains = [&](std::string_view hay) {
    return std::search(hay.begin(), hay.end(), nd.begin(), nd.end(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           }) != hay.end();
  };
  for (model::NodeId i = 0; i < graph_->nodes.size(); ++i) {
    const auto& n = graph_->nodes[i];
    if (contains(graph_->str(n.name)) || contains(graph_->str(n.target))) {
      matches_.push_back(i);
      is_match_[i] = 1;
    }
  }
  if (!matches_.empty()) next_match();
  viewport()->update();
  return match_count();
}

void GraphCanvas::next_match() {
  if (matches_.empty()) return;
  match_pos_ = (match_pos_ + 1) % match_count();
  const auto id = matches_[static_cast<std::size_t>(match_pos_)];
  // A match hidden in a collapsed group opens that group.
  if (layout_) {
    if (const auto grp = layout_->grouping->group_of[id]; grp != kNoGroup && layout_->collapsed[grp])
      set_group_collapsed(grp, false);
  }
  select_node(id, true);
}

void GraphCanvas::previous_match() {
  if (matches_.empty()) return;
  match_pos_ = (match_pos_ + match_count() - 2 + match_count()) % match_count();
  next_match();
}

void GraphCanvas::set_group_collapsed(std::uint32_t group, bool collapsed) {
  if (!layout_ || group >= layout_->collapsed.size() ||
      layout_->collapsed[group] == static_cast<char>(collapsed))
    return;
  auto flags = layout_->collapsed;
  flags[group] = collapsed;
  center_on_adopt_ = selected_ != model::kNoNode;
  request_layout(std::move(flags));
}

}  // namespace gparity::gui

namespace gparity::gui {

void GraphCanvas::set_all_groups_collapsed(bool collapsed) {
  if (!layout_) return;
  center_on_adopt_ = selected_ != model::kNoNode;
  request_layout(std::vector<char>(layout_->collapsed.size(), collapsed ? 1 : 0));
}

}  // namespace gparity::gui
