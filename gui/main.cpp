// gparity-view PATH [PATH]: opens each path (TORCH_TRACE directory or log, FX text, .pt2, graph
// JSON); two run directories open the run views (baseline, candidate), two graph inputs the
// side-by-side diff.
#include <QApplication>
#include <QCommandLineParser>
#include <QStringList>
#include <cstdio>

#include "core/model/base/input_error.hpp"
#include "diff/graphs/rank_classify.hpp"
#include "gui/main_window.hpp"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("gparity"));
  QApplication::setApplicationName(QStringLiteral("gparity-view"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Desktop viewer for gparity: graphs of TORCH_TRACE logs, FX print_readable text, .pt2 "
                     "archives and graph JSON, with per-rank findings; two graph inputs open side by side in "
                     "diff mode; two run directories (baseline, candidate) open the run views."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("PATH"), QStringLiteral("Inputs to open (zero, one or two)."),
                               QStringLiteral("[PATH [PATH]]"));
  const QCommandLineOption mesh(
      QStringLiteral("mesh"),
      QStringLiteral("Device mesh for the rank facts and rank diffs, instead of the one read from the trace: "
                     "sizes like 2x4, or dp=2,tp=4 (as `gparity graph ranks --mesh`)."),
      QStringLiteral("SPEC"));
  parser.addOption(mesh);
  parser.process(app);  // --help / --version print and exit here

  gparity::gui::MainWindow window;
  if (parser.isSet(mesh)) {
    try {
      window.set_mesh_override(gparity::diff::mesh_override_layout(parser.value(mesh).toStdString()));
    } catch (const gparity::model::InputError& e) {
      std::fprintf(stderr, "gparity-view: error: %s\n", e.what());
      return 2;
    }
  }
  window.show();
  const QStringList args = parser.positionalArguments();
  if (args.size() == 2 && gparity::gui::MainWindow::is_run(args[0]) &&
      gparity::gui::MainWindow::is_run(args[1]))
    window.open_runs(args[0], args[1]);
  else if (args.size() == 2)
    window.open_diff(args[0], args[1]);
  else
    for (const QString& path : args) window.open_path(path);
  return QApplication::exec();
}
