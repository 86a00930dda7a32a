#pragma once
// The colour legend every gparity-view view that uses colour draws over itself (issue 27: colours
// were explained only in docs/gui.md): one row of swatches with their meaning, on a translucent
// panel so it stays readable over a graph.

#include <QColor>
#include <QPainter>
#include <QPen>
#include <QString>
#include <vector>

namespace gparity::gui {

struct LegendEntry {
  QColor fill;
  QString text;
  QPen frame = QPen(QColor(110, 110, 110), 1);
};

/// Paints the entries left to right from `top_left` (wrapping at `max_width`) and returns the
/// height used.
inline int paint_legend(QPainter& p, QPoint top_left, const std::vector<LegendEntry>& entries,
                        int max_width) {
  if (entries.empty()) return 0;
  p.save();
  const QFontMetrics fm = p.fontMetrics();
  const int row_h = std::max(16, fm.height() + 4);
  int x = top_left.x() + 6, y = top_left.y() + 3, right = x;
  std::vector<std::pair<QRect, const LegendEntry*>> placed;
  for (const auto& e : entries) {
    const int w = 14 + 4 + fm.horizontalAdvance(e.text) + 12;
    if (x + w > top_left.x() + max_width && x > top_left.x() + 6) {
      x = top_left.x() + 6;
      y += row_h;
    }
    placed.emplace_back(QRect(x, y, w, row_h), &e);
    x += w;
    right = std::max(right, x);
  }
  const QRect panel(top_left, QPoint(right, y + row_h + 3));
  p.setPen(QPen(QColor(180, 180, 180), 1));
  p.setBrush(QColor(255, 255, 255, 225));
  p.drawRect(panel.adjusted(0, 0, -1, -1));
  for (const auto& [r, e] : placed) {
    const QRect box(r.left(), r.top() + (row_h - 12) / 2, 12, 12);
    p.setBrush(e->fill);
    p.setPen(e->frame);
    p.drawRect(box);
    p.setPen(Qt::black);
    p.drawText(QRect(box.right() + 5, r.top(), r.width() - 18, row_h), Qt::AlignVCenter | Qt::AlignLeft,
               e->text);
  }
  p.restore();
  return panel.height();
}

}  // namespace gparity::gui
