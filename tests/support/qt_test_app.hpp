#pragma once
// The QApplication of a GUI test executable: created on first use (offscreen unless
// QT_QPA_PLATFORM says otherwise, recent files in Qt's test location) and destroyed by a gtest
// environment before static destruction, since Qt crashes when it is torn down from an exit
// handler.

class QApplication;
class QWidget;

namespace gparity::testing {

QApplication& app();

/// Saves w as <$GPARITY_GUI_SCREENSHOTS>/<name>.png when that variable is set (docs/img).
void screenshot(QWidget& w, const char* name);

}  // namespace gparity::testing
