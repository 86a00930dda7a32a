// MainWindow (gui/main_window.hpp): the rank findings of the open trace (`gparity graph ranks`'
// facts, the shown graph classified across ranks), node findings of replay runs, the side-by-side
// diff window, and graph causes followed from the verdict page.
#include <QDockWidget>
#include <QFileInfo>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <algorithm>
#include <tuple>
#include <utility>

#include "gui/diff_view.hpp"
#include "gui/display_text.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/main_window.hpp"
#include "gui/models.hpp"
#include "gui/node_findings.hpp"

namespace gparity::gui {

bool MainWindow::select_graph_cause(const CauseRef& c) {
  // Graph nodes, replayed nodes, and collectives read from a graph (their stream is named
  // "<compile id> <kind>"): show that graph of that rank with the node selected.
  if (!doc_ || c.node.empty()) return false;
  const bool graph_kind = c.kind == CauseRef::Kind::GraphNode || c.kind == CauseRef::Kind::ReplayNode;
  if (!graph_kind && c.kind != CauseRef::Kind::CollectiveEntry) return false;
  const std::string& label = graph_kind ? c.graph : c.group;
  for (std::size_t i = 0; i < doc_->graphs.size(); ++i) {
    const auto& g = doc_->graphs[i];
    if (c.rank >= 0 && g.rank != c.rank) continue;
    const bool named = label.empty() || label == g.label || label == g.compile + " " + g.kind ||
                       label == g.kind || label == g.compile;
    if (!named) continue;
    const auto id = g.graph->find_node(c.node);
    if (id == model::kNoNode) continue;
    show_graph(static_cast<int>(i));
    canvas_->select_node(id);
    tabs_->setCurrentWidget(canvas_);
    return true;
  }
  return false;
}

void MainWindow::report_rank_facts() {
  if (!ranks_) {
    findings_model_->set_trace_facts({}, {});
    return;
  }
  const auto& r = *ranks_;
  findings_model_->set_trace_facts(r.findings, r.fact_groups);
  report(
      tr("Mesh: %1")
          .arg(r.mesh.empty() ? tr("none found (world-size factorizations are tried)") : shown_text(r.mesh)));
  // The reader's problems are listed already (Document::problems); the rest is new here.
  for (const auto& p : r.problems)
    if (std::find(doc_->problems.begin(), doc_->problems.end(), p) == doc_->problems.end())
      report(tr("Problem: %1").arg(shown_text(p)));
  for (const auto& fg : r.fact_groups)
    report(
        tr("%1: %n group(s) of ranks", nullptr, static_cast<int>(fg.groups.size())).arg(shown_text(fg.fact)));
  report(
      tr("%n trace-level finding(s) across ranks (compile ids, caches, collective schedules, tensor "
         "metadata, schedule vs output code)",
         nullptr, static_cast<int>(r.findings.size())));
}

void MainWindow::classify_current() {
  // Diff mode across ranks: diff/ classifies the shown graph against the same graph on every
  // rank, with the layout `gparity graph ranks` resolves (mesh coordinates, process groups); the
  // findings list (after the trace facts) and the node colours come from its result.
  const auto& e = doc_->graphs[static_cast<std::size_t>(current_)];
  const auto same = doc_->same_graph_on_ranks(e);
  if (same.size() < 2) {
    findings_model_->set_classification({});
    canvas_->set_legend({});
    return;
  }
  std::vector<diff::RankGraph> ranks;
  for (const auto* s : same) ranks.push_back({s->rank, s->graph});
  findings_model_->set_classification(
      diff::classify_ranks(ranks, diff::GraphNormalization{}, ranks_ ? ranks_->layout : diff::RankLayout{}));
  const auto& c = findings_model_->classification();
  std::vector<QColor> colors(e.graph->nodes.size());
  for (const auto& f : c.findings)
    if (const auto id = e.graph->find_node(f.node); id != model::kNoNode && !colors[id].isValid())
      colors[id] = finding_color(f.cls);
  canvas_->set_node_colors(std::move(colors));
  std::vector<LegendEntry> legend;
  for (const auto cls : {diff::FindingClass::DeviceParametric, diff::FindingClass::RankParametric,
                         diff::FindingClass::ProcessGroupParametric, diff::FindingClass::Divergent})
    legend.push_back({finding_color(cls),
                      QString::fromUtf8(diff::finding_class_name(cls).data(),
                                        static_cast<qsizetype>(diff::finding_class_name(cls).size()))});
  canvas_->set_legend(std::move(legend));
  findings_view_->resizeColumnsToContents();
  report(tr("%1 across %2 ranks: %3, %n finding(s)", nullptr, static_cast<int>(c.findings.size()))
             .arg(shown_text(e.kind))
             .arg(same.size())
             .arg(exact_text(diff::verdict_name(c.verdict))));
}

DiffView* MainWindow::show_diff(std::shared_ptr<const Document> other, int index) {
  if (!doc_ || current_ < 0 || !other || index < 0) return nullptr;
  if (!diff_view_) {
    diff_view_ = new DiffView(this);
    diff_view_->setWindowFlag(Qt::Window);
    diff_view_->resize(1500, 900);
  }
  diff_view_->set_graphs(doc_, static_cast<std::size_t>(current_), std::move(other),
                         static_cast<std::size_t>(index));
  diff_view_->show();
  diff_view_->raise();
  return diff_view_;
}

void MainWindow::jump_to_finding(int row) {
  if (!doc_ || current_ < 0 || row < 0 || row >= findings_model_->rowCount()) return;
  const auto& f = findings_model_->finding(row);
  if (row < findings_model_->trace_fact_rows() && !f.compile.empty() &&
      doc_->graphs[static_cast<std::size_t>(current_)].compile != f.compile) {
    // A trace fact: show a graph of its compile id, the shown rank's (same kind first) when it
    // has one. The trace rows stay where they are, so the row is selected again after the switch.
    const auto& shown = doc_->graphs[static_cast<std::size_t>(current_)];
    int pick = -1, score = -1;
    for (std::size_t i = 0; i < doc_->graphs.size(); ++i) {
      const auto& g = doc_->graphs[i];
      if (g.compile != f.compile) continue;
      const int s = (g.rank == shown.rank ? 2 : 0) + (g.kind == shown.kind ? 1 : 0);
      if (s > score) std::tie(pick, score) = std::pair{static_cast<int>(i), s};
    }
    if (pick < 0) {
      statusBar()->showMessage(tr("No graph was logged for compile %1").arg(shown_text(f.compile)));
      return;
    }
    show_graph(pick);
    findings_view_->setCurrentIndex(findings_model_->index(row, 0));
  }
  if (f.node.empty()) return;
  const auto* g = doc_->graphs[static_cast<std::size_t>(current_)].graph;
  if (const auto id = g->find_node(f.node); id != model::kNoNode) canvas_->select_node(id);
}

void MainWindow::set_node_findings(std::vector<diff::Finding> findings) {
  node_findings_model_->set_findings(std::move(findings));
  node_findings_view_->resizeColumnsToContents();
  report(tr("%n node finding(s) (first divergent nodes and origins)", nullptr,
            static_cast<int>(node_findings_model_->findings().size())));
  if (auto* dock = findChild<QDockWidget*>(QStringLiteral("node_findings_dock"))) dock->raise();
}

void MainWindow::jump_to_node_finding(int row) {
  const auto& all = node_findings_model_->findings();
  if (row < 0 || row >= static_cast<int>(all.size())) return;
  const auto& f = all[static_cast<std::size_t>(row)];
  const auto where = doc_ ? find_graph(*doc_, f) : std::nullopt;
  if (!where) {
    const auto path = f.values.find("graph_path");
    if (path == f.values.end() || !path->is_string()) {
      report(tr("No open graph is %1; open its graph source to see node %2")
                 .arg(shown_text(f.where.graph), shown_text(f.where.node)));
      return;
    }
    const QString source = QFileInfo(QString::fromStdString(path->get<std::string>())).absoluteFilePath();
    if (doc_ && QString::fromStdString(doc_->path) == source) {
      report(tr("%1 holds no graph %2").arg(source, shown_text(f.where.graph)));
      return;
    }
    pending_node_finding_ = row;  // adopt() comes back here
    open_path(source, true);
    return;
  }
  show_graph(static_cast<int>(*where));
  const auto* g = doc_->graphs[*where].graph;
  if (const auto id = g->find_node(f.where.node); id != model::kNoNode) canvas_->select_node(id);
}

bool MainWindow::jump_to_origin(int row) {
  const auto origin = node_findings_model_->origin_row(row);
  if (!origin) return false;
  node_findings_view_->setCurrentIndex(node_findings_model_->index(*origin, 0));  // shows it
  return true;
}

int MainWindow::current_node_finding() const {
  const auto i = node_findings_view_->currentIndex();
  return i.isValid() ? i.row() : -1;
}

}  // namespace gparity::gui
