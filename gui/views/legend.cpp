#include "gui/views/legend.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPixmap>

namespace gparity::gui::views {

Legend::Legend(std::vector<LegendEntry> entries, QWidget* parent)
    : QWidget(parent), entries_(std::move(entries)) {
  setObjectName(QStringLiteral("legend"));
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(4, 2, 4, 2);
  row->setSpacing(12);
  auto* title = new QLabel(tr("Legend:"), this);
  row->addWidget(title);
  for (const auto& e : entries_) {
    QPixmap swatch(14, 14);
    swatch.fill(e.colour);
    {
      QPainter p(&swatch);
      p.setPen(QColor(90, 90, 90));
      p.drawRect(0, 0, 13, 13);
    }
    auto* box = new QWidget(this);
    auto* h = new QHBoxLayout(box);
    h->setContentsMargins(0, 0, 0, 0);
    h->setSpacing(4);
    auto* icon = new QLabel(box);
    icon->setPixmap(swatch);
    auto* text = new QLabel(e.label, box);
    h->addWidget(icon);
    h->addWidget(text);
    box->setToolTip(e.meaning);
    row->addWidget(box);
  }
  row->addStretch(1);
}

QStringList Legend::labels() const {
  QStringList out;
  for (const auto& e : entries_) out << e.label;
  return out;
}

}  // namespace gparity::gui::views
