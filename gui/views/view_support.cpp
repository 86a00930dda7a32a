#include "gui/views/view_support.hpp"

#include <QHeaderView>
#include <QTableView>
#include <QTimer>

#include "gui/display_text.hpp"

namespace gparity::gui::views {

QString shown_lines(std::string_view text) {
  QString out;
  std::size_t start = 0;
  while (true) {
    const auto end = text.find('\n', start);
    out +=
        shown_text(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    out += QLatin1Char('\n');
    start = end + 1;
  }
  return out;
}

void fit_columns(QTableView* table, int max_width) {
  table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 8);
  table->resizeColumnsToContents();
  auto* h = table->horizontalHeader();
  for (int c = 0; c < h->count(); ++c)
    if (h->sectionSize(c) > max_width) h->resizeSection(c, max_width);
}

void center_current_when_shown(QTableView* table) {
  QTimer::singleShot(0, table, [table] {
    const QModelIndex cur = table->selectionModel()->currentIndex();
    if (cur.isValid()) table->scrollTo(cur, QAbstractItemView::PositionAtCenter);
  });
}

}  // namespace gparity::gui::views
