#include "gui/legend.hpp"

#include <QEvent>
#include <QFontMetrics>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace gparity::gui {
namespace {

int row_height(const QFontMetrics& fm) {
  return std::max(16, fm.height() + 4);
}

}  // namespace

LegendLayout layout_legend(const QFontMetrics& fm, QPoint top_left, const std::vector<LegendEntry>& entries,
                           int max_width) {
  LegendLayout out;
  if (entries.empty()) return out;
  const int row_h = row_height(fm);
  int x = top_left.x() + 6, y = top_left.y() + 3, right = x;
  for (const auto& e : entries) {
    const int w = 14 + 4 + fm.horizontalAdvance(e.text) + 12;
    if (x + w > top_left.x() + max_width && x > top_left.x() + 6) {
      x = top_left.x() + 6;
      y += row_h;
    }
    out.entries.emplace_back(x, y, w, row_h);
    x += w;
    right = std::max(right, x);
  }
  out.panel = QRect(top_left, QPoint(right, y + row_h + 3));
  return out;
}

int paint_legend(QPainter& p, QPoint top_left, const std::vector<LegendEntry>& entries, int max_width) {
  if (entries.empty()) return 0;
  p.save();
  const QFontMetrics fm = p.fontMetrics();
  const int row_h = row_height(fm);
  const LegendLayout placed = layout_legend(fm, top_left, entries, max_width);
  p.setPen(QPen(QColor(180, 180, 180), 1));
  p.setBrush(QColor(255, 255, 255, 225));
  p.drawRect(placed.panel.adjusted(0, 0, -1, -1));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const QRect& r = placed.entries[i];
    const QRect box(r.left(), r.top() + (row_h - 12) / 2, 12, 12);
    p.setBrush(entries[i].fill);
    p.setPen(entries[i].frame);
    p.drawRect(box);
    p.setPen(Qt::black);
    p.drawText(QRect(box.right() + 5, r.top(), r.width() - 18, row_h), Qt::AlignVCenter | Qt::AlignLeft,
               entries[i].text);
  }
  p.restore();
  return placed.panel.height();
}

Legend::Legend(std::vector<LegendEntry> entries, QWidget* parent)
    : QWidget(parent), entries_(std::move(entries)) {
  setObjectName(QStringLiteral("legend"));
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

QStringList Legend::labels() const {
  QStringList out;
  for (const auto& e : entries_) out << e.text;
  return out;
}

QString Legend::meaning_at(QPoint p) const {
  const LegendLayout placed = layout_legend(fontMetrics(), {0, 0}, entries_, std::max(width(), 80));
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (placed.entries[i].contains(p)) return entries_[i].meaning;
  return {};
}

QSize Legend::sizeHint() const {
  const LegendLayout placed = layout_legend(fontMetrics(), {0, 0}, entries_, std::max(width(), 400));
  return placed.panel.size() + QSize(1, 1);
}

QSize Legend::minimumSizeHint() const {
  return {80, row_height(fontMetrics()) + 6};
}

void Legend::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paint_legend(p, {0, 0}, entries_, width());
}

bool Legend::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    const auto* help = static_cast<QHelpEvent*>(event);
    const QString meaning = meaning_at(help->pos());
    if (meaning.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), meaning, this);
    return true;
  }
  return QWidget::event(event);
}

void Legend::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  // Wrapping changes with the width: the height follows.
  const int h = layout_legend(fontMetrics(), {0, 0}, entries_, std::max(width(), 80)).panel.height() + 1;
  if (h != height()) setFixedHeight(h);
}

}  // namespace gparity::gui
