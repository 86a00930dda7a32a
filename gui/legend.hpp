#pragma once
// The colour legend of gparity-view (issue 27: colours were explained only in docs/gui.md), one
// implementation for every view that uses colour: a row of swatches with their meaning on a
// translucent panel. paint_legend draws it over a canvas (graph, verdict grid, bucket view);
// Legend is the same drawing as a widget beside a table (gui/views), each swatch's longer meaning
// as its tool tip. The entries are the ones the view colours its cells with, so legend and cells
// cannot disagree.

#include <QColor>
#include <QPen>
#include <QRect>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <vector>

class QPainter;
class QFontMetrics;

namespace gparity::gui {

struct LegendEntry {
  QColor fill;
  QString text;     // "origin"
  QString meaning;  // "its inputs were equal: the divergence starts here" (tool tip; may be empty)
  QPen frame = QPen(QColor(110, 110, 110), 1);
};

/// Where each entry goes when laid out from `top_left`, wrapping at `max_width`; `panel` holds
/// them all.
struct LegendLayout {
  std::vector<QRect> entries;
  QRect panel;
};
LegendLayout layout_legend(const QFontMetrics& fm, QPoint top_left, const std::vector<LegendEntry>& entries,
                           int max_width);

/// Paints the entries left to right from `top_left` (wrapping at `max_width`) and returns the
/// height used.
int paint_legend(QPainter& p, QPoint top_left, const std::vector<LegendEntry>& entries, int max_width);

/// The legend as a widget, named "legend" (tests find it by that name); hovering a swatch shows
/// its meaning.
class Legend final : public QWidget {
 public:
  explicit Legend(std::vector<LegendEntry> entries, QWidget* parent = nullptr);
  [[nodiscard]] const std::vector<LegendEntry>& entries() const noexcept { return entries_; }
  /// The labels, in order (tests compare them with the statuses a model colours).
  [[nodiscard]] QStringList labels() const;
  /// The meaning of the entry under `p` (widget coordinates), "" when none.
  [[nodiscard]] QString meaning_at(QPoint p) const;
  [[nodiscard]] QSize sizeHint() const override;
  [[nodiscard]] QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  std::vector<LegendEntry> entries_;
};

}  // namespace gparity::gui
