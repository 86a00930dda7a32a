// gparity-view PATH [PATH]: opens each path (TORCH_TRACE directory or log, FX text file).
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
  for (const QString& path : args) window.open_path(path);
  return QApplication::exec();
}
