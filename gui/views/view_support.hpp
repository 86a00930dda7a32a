#pragma once
// Small helpers the views of gui/views share: multi-line text from an input shown line by line
// (each line escaped as display_text does, the line breaks kept), and table columns fitted to
// their contents without one long path or signature pushing the rest off screen, and a table's
// current row scrolled into view once its view is shown.

#include <QString>
#include <string_view>

class QTableView;

namespace gparity::gui::views {

/// Each '\n'-separated line through shown_text (gui/display_text.hpp), joined by real line breaks.
QString shown_lines(std::string_view text);

/// Resizes every column to its contents, at most `max_width` pixels, and rows to one text line.
void fit_columns(QTableView* table, int max_width = 320);

/// From a view's showEvent: scrolls the table's current index (if any) to the middle once the event
/// loop has laid the newly shown table out (a view opened at a row selected while it was hidden).
void center_current_when_shown(QTableView* table);

}  // namespace gparity::gui::views
