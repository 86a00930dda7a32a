// gparity-view PATH [PATH]: opens each path (TORCH_TRACE directory or log, FX text file); two
// run directories open the run views (baseline, candidate), two graph inputs the side-by-side diff.
#include <QApplication>
#include <QStringList>

#include "gui/main_window.hpp"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("gparity"));
  QApplication::setApplicationName(QStringLiteral("gparity-view"));
  gparity::gui::MainWindow window;
  window.show();
  const QStringList args = QApplication::arguments().mid(1);
  // Two run directories open the run views; two graph inputs open side by side in diff mode;
  // anything else opens path by path.
  if (args.size() == 2 && gparity::gui::MainWindow::is_run(args[0]) &&
      gparity::gui::MainWindow::is_run(args[1]))
    window.open_runs(args[0], args[1]);
  else if (args.size() == 2)
    window.open_diff(args[0], args[1]);
  else
    for (const QString& path : args) window.open_path(path);
  return QApplication::exec();
}
