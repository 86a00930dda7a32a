// VerdictGridView (gui/verdict_page.hpp): the verdict page's grid, painted from the verdict's
// cells (one image pixel a cell, scaled), with its legend, labels and tooltips.
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>

#include "gui/display_text.hpp"
#include "gui/legend.hpp"
#include "gui/verdict_page.hpp"

namespace gparity::gui {
namespace {

constexpr int kLegendTop = 2;
constexpr int kColumnLabels = 130;  // room for rotated column labels

std::vector<LegendEntry> legend_for(const JobVerdict& v) {
  // The states this kind of grid can hold: causes (origin, ...) only where the evidence gives them.
  using S = CellState;
  const std::vector<S> states =
      v.kind == JobVerdict::Kind::Ops || v.kind == JobVerdict::Kind::Replay
          ? std::vector<S>{S::Equal,    S::Origin,  S::Propagated, S::Received,
                           S::Diverged, S::Missing, S::NotCompared}
          : std::vector<S>{S::Equal, S::FirstDivergence, S::Diverged, S::Missing, S::NotCompared};
  std::vector<LegendEntry> out;
  for (const auto state : states) {
    LegendEntry e{cell_state_color(state), QString::fromLatin1(cell_state_name(state))};
    if (state == S::FirstDivergence || state == S::Origin) e.frame = QPen(Qt::black, 2);
    out.push_back(e);
  }
  out.push_back(
      {QColor(255, 255, 255), QStringLiteral("selected"), QString(), QPen(QColor(30, 100, 230), 3)});
  return out;
}

}  // namespace

VerdictGridView::VerdictGridView(QWidget* parent) : QAbstractScrollArea(parent) {
  viewport()->setMouseTracking(true);
  viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
}

QSize VerdictGridView::sizeHint() const {
  return {900, 420};
}

int VerdictGridView::top_margin() const {
  return kLegendTop + 2 * (fontMetrics().height() + 6) + kColumnLabels;
}

void VerdictGridView::set_verdict(std::shared_ptr<const JobVerdict> v) {
  v_ = std::move(v);
  selected_.reset();
  image_ = QImage();
  if (v_ && !v_->grid.rows.empty() && !v_->grid.columns.empty()) {
    const auto& g = v_->grid;
    image_ =
        QImage(static_cast<int>(g.columns.size()), static_cast<int>(g.rows.size()), QImage::Format_RGB32);
    std::array<QRgb, kCellStateCount> rgb{};
    for (int s = 0; s < kCellStateCount; ++s)
      rgb[static_cast<std::size_t>(s)] = cell_state_color(static_cast<CellState>(s)).rgb();
    for (std::size_t r = 0; r < g.rows.size(); ++r) {
      auto* line = reinterpret_cast<QRgb*>(image_.scanLine(static_cast<int>(r)));
      for (std::size_t c = 0; c < g.columns.size(); ++c) line[c] = rgb[static_cast<std::size_t>(g.at(r, c))];
    }
    // Row labels as wide as the longest one needs (up to a third of the view).
    int w = 60;
    for (std::size_t r = 0; r < std::min<std::size_t>(g.rows.size(), 2000); ++r)
      w = std::max(w, fontMetrics().horizontalAdvance(shown_text(g.rows[r])) + 12);
    w = std::max(w, fontMetrics().horizontalAdvance(QStringLiteral("%1 \\ %2")
                                                        .arg(QString::fromStdString(g.row_title),
                                                             QString::fromStdString(g.column_title))) +
                        12);
    left_ = std::min(w, 320);
  }
  update_scrollbars();
  viewport()->update();
}

void VerdictGridView::set_cell_size(double px) {
  cell_ = std::clamp(px, 1.0, 48.0);
  row_fit_ = 0;
  fitted_ = false;
  update_scrollbars();
  viewport()->update();
}

void VerdictGridView::zoom_by(double factor) {
  // A fitted small grid's cells may be larger than set_cell_size allows: zoom from where they are.
  const double limit = std::max(48.0, cell_);
  cell_ = std::clamp(cell_ * factor, 1.0, limit);
  row_fit_ = row_fit_ > 0 ? std::clamp(row_fit_ * factor, 1.0, std::max(48.0, row_fit_)) : 0;
  fitted_ = false;
  update_scrollbars();
  viewport()->update();
}

void VerdictGridView::fit_all() {
  if (!v_ || v_->grid.rows.empty() || v_->grid.columns.empty()) return;
  const double w = (viewport()->width() - left_ - 4) / static_cast<double>(v_->grid.columns.size());
  const double h = (viewport()->height() - top_margin() - 4) / static_cast<double>(v_->grid.rows.size());
  if (std::min(w, h) >= kStretchFrom) {
    // A few rows and columns (2 ranks x 2 steps): square cells would leave most of the page
    // empty; the columns take the width, the rows the height.
    cell_ = w;
    row_fit_ = h;
  } else {
    cell_ = std::clamp(std::min(w, h), 1.0, 48.0);
    row_fit_ = 0;
  }
  fitted_ = true;
  update_scrollbars();
  viewport()->update();
}

double VerdictGridView::row_height() const {
  // A few rows (ranks) against many columns (nodes, steps): fit-all makes the cells narrower than
  // a line of text, and only every k-th rank would be named. Such rows stay a line tall instead.
  const double h = row_fit_ > 0 ? row_fit_ : cell_;
  const bool few = v_ && v_->grid.rows.size() <= kLabelEveryRow;
  return few ? std::max(h, static_cast<double>(fontMetrics().height() + 2)) : h;
}

std::size_t VerdictGridView::row_label_stride() const {
  return static_cast<std::size_t>(std::max(1.0, std::ceil((fontMetrics().height() + 2) / row_height())));
}

std::size_t VerdictGridView::column_label_stride() const {
  return static_cast<std::size_t>(std::max(1.0, std::ceil((fontMetrics().height() + 2) / cell_)));
}

std::vector<std::size_t> VerdictGridView::labelled_rows() const {
  std::vector<std::size_t> out;
  if (!v_ || v_->grid.rows.empty()) return out;
  const double h = row_height();
  const int vs = verticalScrollBar()->value();
  const auto r0 = static_cast<std::size_t>(std::max(0.0, std::floor(vs / h)));
  const auto r1 =
      std::min(v_->grid.rows.size(),
               static_cast<std::size_t>(std::ceil((vs + viewport()->height() - top_margin()) / h)) + 1);
  const auto every = row_label_stride();
  for (auto r = r0 - r0 % every; r < r1; r += every) out.push_back(r);
  return out;
}

std::optional<std::size_t> VerdictGridView::row_at(int y) const {
  if (!v_ || y < top_margin()) return std::nullopt;
  const double r = (y - top_margin() + verticalScrollBar()->value()) / row_height();
  if (r < 0 || r >= static_cast<double>(v_->grid.rows.size())) return std::nullopt;
  return static_cast<std::size_t>(r);
}

std::optional<std::size_t> VerdictGridView::column_at(int x) const {
  if (!v_ || x < left_) return std::nullopt;
  const double c = (x - left_ + horizontalScrollBar()->value()) / cell_;
  if (c < 0 || c >= static_cast<double>(v_->grid.columns.size())) return std::nullopt;
  return static_cast<std::size_t>(c);
}

QString VerdictGridView::tooltip_at(QPoint p) const {
  if (!v_) return {};
  const auto& g = v_->grid;
  if (const auto cell = cell_at(p)) return shown_text(v_->tooltip(cell->first, cell->second));
  // The label column names every row, labelled or not (labels thin out on tall grids).
  if (p.x() < left_) {
    const auto row = row_at(p.y());
    return row ? shown_text(g.row_title + ": " + g.rows[*row]) : QString();
  }
  if (p.y() < top_margin() && p.y() >= top_margin() - kColumnLabels) {
    const auto column = column_at(p.x());
    return column ? shown_text(g.column_title + ": " + g.columns[*column]) : QString();
  }
  return {};
}

void VerdictGridView::pan_by(int dx, int dy) {
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() + dx);
  verticalScrollBar()->setValue(verticalScrollBar()->value() + dy);
}

void VerdictGridView::update_scrollbars() {
  if (!v_) {
    horizontalScrollBar()->setRange(0, 0);
    verticalScrollBar()->setRange(0, 0);
    return;
  }
  const int content_w = static_cast<int>(std::ceil(static_cast<double>(v_->grid.columns.size()) * cell_));
  const int content_h = static_cast<int>(std::ceil(static_cast<double>(v_->grid.rows.size()) * row_height()));
  const int view_w = std::max(0, viewport()->width() - left_);
  const int view_h = std::max(0, viewport()->height() - top_margin());
  horizontalScrollBar()->setRange(0, std::max(0, content_w - view_w));
  verticalScrollBar()->setRange(0, std::max(0, content_h - view_h));
  horizontalScrollBar()->setPageStep(std::max(1, view_w));
  verticalScrollBar()->setPageStep(std::max(1, view_h));
  horizontalScrollBar()->setSingleStep(std::max(1, static_cast<int>(cell_)));
  verticalScrollBar()->setSingleStep(std::max(1, static_cast<int>(row_height())));
}

void VerdictGridView::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  // The page fits the grid when a verdict arrives, often before the window has its size.
  if (fitted_) fit_all();
  update_scrollbars();
}

void VerdictGridView::scrollContentsBy(int, int) {
  viewport()->update();
}

QRect VerdictGridView::cell_rect(std::size_t row, std::size_t column) const {
  const double x = left_ + static_cast<double>(column) * cell_ - horizontalScrollBar()->value();
  const double y = top_margin() + static_cast<double>(row) * row_height() - verticalScrollBar()->value();
  return QRectF(x, y, cell_, row_height()).toAlignedRect();
}

std::optional<std::pair<std::size_t, std::size_t>> VerdictGridView::cell_at(QPoint p) const {
  if (!v_ || p.x() < left_ || p.y() < top_margin()) return std::nullopt;
  const auto r = row_at(p.y());
  const auto c = column_at(p.x());
  if (!r || !c) return std::nullopt;
  return std::pair{*r, *c};
}

void VerdictGridView::select_cell(std::size_t row, std::size_t column) {
  selected_ = std::pair{row, column};
  // Scroll it into view, with some room around it.
  const QRect r = cell_rect(row, column);
  const QRect area(left_, top_margin(), viewport()->width() - left_, viewport()->height() - top_margin());
  if (!area.contains(r)) {
    horizontalScrollBar()->setValue(static_cast<int>(static_cast<double>(column) * cell_) - area.width() / 3);
    verticalScrollBar()->setValue(static_cast<int>(static_cast<double>(row) * row_height()) -
                                  area.height() / 3);
  }
  viewport()->update();
}

bool VerdictGridView::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip && v_) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = tooltip_at(help->pos());
    if (text.isEmpty())
      QToolTip::hideText();
    else if (const auto cell = cell_at(help->pos()))
      QToolTip::showText(help->globalPos(), text, viewport(), cell_rect(cell->first, cell->second));
    else
      QToolTip::showText(help->globalPos(), text, viewport());
    return true;
  }
  return QAbstractScrollArea::viewportEvent(event);
}

void VerdictGridView::mousePressEvent(QMouseEvent* event) {
  const auto cell = cell_at(event->position().toPoint());
  if (!cell) return;
  select_cell(cell->first, cell->second);
  if (on_cell_clicked) on_cell_clicked(cell->first, cell->second);
}

void VerdictGridView::wheelEvent(QWheelEvent* event) {
  if (event->modifiers() & Qt::ControlModifier) {
    zoom_by(event->angleDelta().y() > 0 ? 1.25 : 0.8);
    return;
  }
  QAbstractScrollArea::wheelEvent(event);
}

void VerdictGridView::paintEvent(QPaintEvent*) {
  QPainter p(viewport());
  p.fillRect(viewport()->rect(), Qt::white);
  if (!v_ || image_.isNull()) {
    p.drawText(viewport()->rect(), Qt::AlignCenter, tr("Nothing to show"));
    return;
  }
  const auto& g = v_->grid;
  const int top = top_margin();
  const int hs = horizontalScrollBar()->value();
  const int vs = verticalScrollBar()->value();
  const int vw = viewport()->width();
  const int vh = viewport()->height();
  const auto cols = g.columns.size();
  const auto rows = g.rows.size();
  const double row_h = row_height();
  const auto c0 = static_cast<std::size_t>(std::max(0.0, std::floor(hs / cell_)));
  const auto r0 = static_cast<std::size_t>(std::max(0.0, std::floor(vs / row_h)));
  const auto c1 = std::min(cols, static_cast<std::size_t>(std::ceil((hs + vw - left_) / cell_)) + 1);
  const auto r1 = std::min(rows, static_cast<std::size_t>(std::ceil((vs + vh - top) / row_h)) + 1);
  const QRect area(left_, top, vw - left_, vh - top);
  p.save();
  p.setClipRect(area);
  if (c0 < c1 && r0 < r1) {
    // Cells: the visible part of the one-pixel-a-cell image, scaled without smoothing.
    const QRectF source(static_cast<double>(c0), static_cast<double>(r0), static_cast<double>(c1 - c0),
                        static_cast<double>(r1 - r0));
    const QRectF target(left_ + static_cast<double>(c0) * cell_ - hs,
                        top + static_cast<double>(r0) * row_h - vs, static_cast<double>(c1 - c0) * cell_,
                        static_cast<double>(r1 - r0) * row_h);
    p.drawImage(target, image_, source);
    // White gaps between rows (columns) where they are 6 px or more apart.
    p.setPen(QPen(Qt::white, 1));
    if (row_h >= 6)
      for (auto r = r0; r <= r1; ++r) {
        const double y = top + static_cast<double>(r) * row_h - vs;
        p.drawLine(QPointF(target.left(), y), QPointF(target.right(), y));
      }
    if (cell_ >= 6) {
      // Column gaps, and the frames of first divergences and origins.
      for (auto c = c0; c <= c1; ++c) {
        const double x = left_ + static_cast<double>(c) * cell_ - hs;
        p.drawLine(QPointF(x, target.top()), QPointF(x, target.bottom()));
      }
      p.setPen(QPen(Qt::black, 2));
      p.setBrush(Qt::NoBrush);
      for (auto r = r0; r < r1; ++r)
        for (auto c = c0; c < c1; ++c)
          if (const auto s = g.at(r, c); s == CellState::FirstDivergence || s == CellState::Origin)
            p.drawRect(cell_rect(r, c).adjusted(1, 1, -1, -1));
    }
  }
  if (selected_) {
    p.setPen(QPen(QColor(30, 100, 230), 3));
    p.setBrush(Qt::NoBrush);
    p.drawRect(cell_rect(selected_->first, selected_->second).adjusted(-1, -1, 1, 1));
  }
  p.restore();

  // Labels: every row of a short grid; every k-th row (column) when one a cell would overlap
  // (level of detail), the label column's tooltip naming the others.
  const QFontMetrics fm = fontMetrics();
  p.setPen(Qt::black);
  p.save();
  p.setClipRect(QRect(0, top, left_, vh - top));
  const bool fits = row_h >= fm.height();
  for (const auto r : labelled_rows()) {
    const QRect label(2, cell_rect(r, 0).top(), left_ - 8, std::max(static_cast<int>(row_h), fm.height()));
    p.drawText(label, Qt::AlignRight | (fits ? Qt::AlignVCenter : Qt::AlignTop),
               fm.elidedText(shown_text(g.rows[r]), Qt::ElideLeft, label.width()));
  }
  p.restore();
  p.save();
  p.setClipRect(QRect(left_, top - kColumnLabels, vw - left_, kColumnLabels));
  const auto every = column_label_stride();
  for (auto c = c0 - c0 % every; c < c1; c += every) {
    const QRect cell = cell_rect(0, c);
    p.save();
    p.translate(cell.left() + std::min(static_cast<int>(cell_), fm.height()) / 2 + fm.ascent() / 2, top - 4);
    p.rotate(-60);
    p.drawText(
        0, 0,
        fm.elidedText(shown_text(g.columns[c]), Qt::ElideMiddle, static_cast<int>(kColumnLabels * 1.15)));
    p.restore();
  }
  p.restore();
  // Axis names in the corner, the legend across the top.
  p.drawText(QRect(2, top - fm.height() - 4, left_ - 6, fm.height()), Qt::AlignRight,
             QStringLiteral("%1 \\ %2")
                 .arg(QString::fromStdString(g.row_title), QString::fromStdString(g.column_title)));
  paint_legend(p, QPoint(2, kLegendTop), legend_for(*v_), vw - 8);
}

}  // namespace gparity::gui
