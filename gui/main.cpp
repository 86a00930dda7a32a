// gparity-view PATH [PATH]: opens on the verdict the CLI gives for the paths (two runs,
// checkpoints or op logs: `gparity compare`; Flight Recorder dumps: `gparity collectives`), with
// the run views for runs; graph inputs (TORCH_TRACE directory or log, FX text, .pt2, graph JSON)
// open in the graph views, two of them side by side.
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
  parser.setApplicationDescription(QStringLiteral(
      "Desktop viewer for gparity: graphs of TORCH_TRACE logs, FX print_readable text, .pt2 "
      "archives and graph JSON, with per-rank findings; two graph inputs open side by side in "
      "diff mode. The window opens on the verdict `gparity compare` gives for two runs, "
      "checkpoints or DebugMode op logs (baseline, candidate), or `gparity collectives` for "
      "Flight Recorder dumps or pickles, or `gparity replay` for a replay --against / --coor run "
      "directory, with a grid of the whole job and the view that shows each cause as a tab."));
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
  // The window opens on the verdict of what is opened (runs, checkpoints, op logs, Flight
  // Recorder dumps); inputs without one (graphs) open in the graph views.
  const QStringList args = parser.positionalArguments();
  if (!args.isEmpty()) window.open_inputs(args);
  return QApplication::exec();
}
