// MainWindow (gui/main_window.hpp): loading what is opened off the GUI thread (documents, run
// pairs, the verdict with the evidence view of what was opened) and adopting the results.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QPlainTextEdit>
#include <QProgressDialog>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <exception>
#include <utility>

#include "diff/resolve/inputs.hpp"
#include "gui/display_text.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/main_window.hpp"
#include "gui/node_findings.hpp"
#include "gui/run_views.hpp"
#include "gui/verdict.hpp"
#include "gui/views/checkpoints_view.hpp"
#include "gui/views/collectives_view.hpp"
#include "gui/views/op_alignment_view.hpp"
#include "gui/views/replay_view.hpp"

namespace gparity::gui {

/// The data of the evidence view of what was opened, loaded off the GUI thread (at most one set).
struct EvidenceData {
  std::shared_ptr<const views::ReplayRecords> replay;
  std::shared_ptr<views::CollectiveSequences> collectives;
  std::shared_ptr<views::CheckpointLayouts> checkpoints;
  std::shared_ptr<views::OpAlignment> ops;
  QString problem;  // the view's loader refused the input (the verdict still stands)
};

namespace {

/// The evidence view's data for `verdict` of `paths` (absolute), on a worker thread.
EvidenceData load_evidence(const JobVerdict& verdict, const std::vector<std::string>& paths) {
  EvidenceData d;
  try {
    switch (verdict.kind) {
      case JobVerdict::Kind::Replay: d.replay = verdict.replay; break;
      case JobVerdict::Kind::Runs:
        // A pair of replay runs: the candidate's records (else the baseline's).
        for (auto it = paths.rbegin(); it != paths.rend() && !d.replay; ++it)
          if (diff::is_replay_run(*it))
            d.replay = std::make_shared<const views::ReplayRecords>(views::load_replay_records(*it));
        break;
      case JobVerdict::Kind::Collectives:
        d.collectives = std::make_shared<views::CollectiveSequences>(views::load_collective_sequences(
            {paths.back()},
            paths.size() == 2 ? std::vector<std::string>{paths.front()} : std::vector<std::string>{}));
        break;
      case JobVerdict::Kind::Checkpoints:
        d.checkpoints =
            std::make_shared<views::CheckpointLayouts>(views::load_checkpoint_layouts(paths[0], paths[1]));
        break;
      case JobVerdict::Kind::Ops:
        d.ops = std::make_shared<views::OpAlignment>(views::load_op_alignment(paths[0], paths[1]));
        break;
    }
  } catch (const std::exception& e) {
    d = EvidenceData{};
    d.problem = shown_text(e.what());
  }
  return d;
}

struct LoadOutcome {
  std::shared_ptr<const Document> doc;
  QString error;
  std::shared_ptr<const diff::TraceRanksReport> ranks;
};

LoadOutcome load(const QString& path, const diff::RankLayout& layout) {
  try {
    LoadOutcome out{load_document(path.toStdString()), {}, {}};
    // The trace-level part of `gparity graph ranks`, on this worker thread: the same code.
    if (const auto& trace = out.doc->collection.trace; trace && trace->ranks.size() > 1)
      out.ranks = std::make_shared<const diff::TraceRanksReport>(
          diff::classify_trace(*trace, diff::GraphNormalization{}, layout, false));
    return out;
  } catch (const std::exception& e) {
    return {nullptr, shown_text(e.what()), {}};
  }
}

}  // namespace

void MainWindow::open_path(const QString& path, bool quiet) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  // What the user opened (not a graph source the window opens for itself, quietly): paths are
  // shown relative to it.
  if ((!quiet || opened_.isEmpty()) && !opened_.contains(abs)) opened_ = QStringList{abs};
  const int generation = ++load_generation_;
  ++loads_running_;
  statusBar()->showMessage(tr("Loading %1…").arg(shown_input(abs)));
  auto* watcher = new QFutureWatcher<LoadOutcome>(this);
  QProgressDialog* progress = nullptr;
  if (!quiet) {
    progress =
        new QProgressDialog(tr("Reading %1…").arg(QFileInfo(abs).fileName()), tr("Cancel"), 0, 0, this);
    progress->setWindowModality(Qt::WindowModal);
    progress->setMinimumDuration(300);
    // Cancelling abandons the result: the reader cannot be interrupted, but its output is dropped
    // and the window stays usable at once.
    connect(progress, &QProgressDialog::canceled, this, [this, abs, generation] {
      if (generation == load_generation_) ++load_generation_;
      report(tr("Cancelled loading %1").arg(abs));
    });
  }
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, progress, abs, generation] {
    --loads_running_;
    if (progress) {
      progress->reset();
      progress->deleteLater();
    }
    const LoadOutcome out = watcher->result();
    watcher->deleteLater();
    if (generation != load_generation_) return;  // cancelled or superseded
    if (!out.doc) {
      report(tr("Cannot open %1: %2").arg(abs, out.error));
      statusBar()->showMessage(tr("Failed to open %1").arg(shown_input(abs)));
      return;
    }
    add_recent(abs);
    adopt(out.doc, out.ranks);
  });
  watcher->setFuture(QtConcurrent::run([abs, layout = layout_] { return load(abs, layout); }));
}

bool MainWindow::is_run(const QString& path) {
  // Only directories: a TORCH_TRACE .log file would pass as a console log.
  if (!QFileInfo(path).isDir()) return false;
  return diff::is_run_input(path.toStdString());
}

void MainWindow::open_runs(const QString& baseline, const QString& candidate) {
  struct Outcome {
    std::shared_ptr<RunPair> runs;
    QString error;
    std::vector<diff::Finding> nodes;
  };
  ++loads_running_;
  statusBar()->showMessage(tr("Loading runs %1 and %2…").arg(baseline, candidate));
  auto* watcher = new QFutureWatcher<Outcome>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
    --loads_running_;
    const Outcome out = watcher->result();
    watcher->deleteLater();
    if (!out.runs) {
      report(tr("Cannot open runs: %1").arg(out.error));
      statusBar()->showMessage(tr("Failed to open runs"));
      return;
    }
    for (const auto& p : out.runs->problems) report(shown_text(p));
    if (!out.nodes.empty()) set_node_findings(out.nodes);
    adopt_verdict(std::make_shared<const JobVerdict>(run_verdict(out.runs)));
    show_run_views(*out.runs);
  });
  watcher->setFuture(QtConcurrent::run([b = baseline.toStdString(), c = candidate.toStdString()] {
    try {
      Outcome o{std::make_shared<RunPair>(load_run_pair(b, c)), {}, {}};
      o.nodes = compute_node_findings(b, c);
      return o;
    } catch (const std::exception& e) {
      return Outcome{nullptr, shown_text(e.what())};
    }
  }));
}

void MainWindow::show_run_views(RunPair runs) {
  run_views_ = std::make_unique<RunViewsWidget>(std::move(runs));
  tabs_->addTab(run_views_.get(), tr("Runs"));
  statusBar()->showMessage(run_views_->summary());
}

void MainWindow::adopt_verdict(std::shared_ptr<const JobVerdict> verdict) {
  verdict_page_->set_verdict(std::move(verdict));
  tabs_->setCurrentWidget(verdict_page_);
  const auto& v = *verdict_page_->verdict();
  QStringList shown;
  for (const auto& p : v.paths) shown << shown_input(shown_text(p));
  setWindowTitle(QStringLiteral("gparity-view — %1").arg(shown.join(QStringLiteral(" vs "))));
  report(tr("%1: %2").arg(shown_text(v.command), shown_text(v.verdict.headline)));
  statusBar()->showMessage(shown_text(v.verdict.headline));
}

void MainWindow::open_inputs(const QStringList& paths) {
  struct Outcome {
    std::shared_ptr<const JobVerdict> verdict;
    QString error;
    std::vector<diff::Finding> nodes;
    EvidenceData evidence;
  };
  if (paths.isEmpty() || paths.size() > 2) {
    for (const QString& p : paths) open_path(p);
    return;
  }
  opened_.clear();
  for (const QString& p : paths) opened_ << QFileInfo(p).absoluteFilePath();
  messages_->setToolTip(opened_.join(QLatin1Char('\n')));
  ++loads_running_;
  QStringList shown;
  for (const QString& p : opened_) shown << shown_input(p);
  statusBar()->showMessage(tr("Computing the verdict of %1…").arg(shown.join(QStringLiteral(", "))));
  auto* watcher = new QFutureWatcher<Outcome>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, paths] {
    --loads_running_;
    const Outcome out = watcher->result();
    watcher->deleteLater();
    if (!out.verdict) {
      // Not a kind with a verdict (a graph, two graphs): the graph views, as before. The page
      // names the inputs by file name (no absolute path on screen), the messages keep it all.
      report(tr("No verdict: %1").arg(out.error));
      QString why = out.error;
      for (const QString& p : paths) {
        const QFileInfo info(p);
        why.replace(info.absoluteFilePath(), info.fileName());
      }
      verdict_page_->clear(tr("No verdict for this input: %1").arg(why));
      show_evidence_view({});  // the last input's view would answer causes it no longer holds
      if (paths.size() == 2)
        open_diff(paths[0], paths[1]);
      else
        open_path(paths[0]);
      return;
    }
    if (!out.nodes.empty()) set_node_findings(out.nodes);
    adopt_verdict(out.verdict);
    const auto& v = *out.verdict;
    if (v.runs) {
      for (const auto& p : v.runs->problems) report(shown_text(p));
      show_run_views(*v.runs);
    }
    show_evidence_view(out.evidence);
    // Collectives read from graphs (TORCH_TRACE): open the graphs too, so their nodes can be
    // shown; two traces side by side, as before.
    if (v.kind == JobVerdict::Kind::Collectives &&
        std::any_of(v.grid.columns.begin(), v.grid.columns.end(),
                    [](const std::string& s) { return !s.starts_with("pg "); })) {
      if (paths.size() == 2)
        open_diff(paths[0], paths[1]);
      else
        open_path(paths.back(), true);
    }
  });
  std::vector<std::string> args;
  for (const QString& p : paths) args.push_back(QFileInfo(p).absoluteFilePath().toStdString());
  watcher->setFuture(QtConcurrent::run([args] {
    Outcome o;
    try {
      o.verdict = std::make_shared<const JobVerdict>(compute_verdict(args));
      if (o.verdict->runs) o.nodes = compute_node_findings(args[0], args[1]);
      o.evidence = load_evidence(*o.verdict, args);
    } catch (const std::exception& e) {
      o.verdict.reset();
      o.error = shown_text(e.what());
    }
    return o;
  }));
}

bool MainWindow::wait_idle(int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (loads_running_ > 0 && t.elapsed() < timeout_ms)
    QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
  return loads_running_ == 0 && canvas_->wait_for_layout(timeout_ms);
}

views::ReplayRecordsView* MainWindow::replay_view() const {
  return dynamic_cast<views::ReplayRecordsView*>(evidence_view_);
}

void MainWindow::show_evidence_view(const EvidenceData& data) {
  if (evidence_view_) {
    tabs_->removeTab(tabs_->indexOf(evidence_view_));
    delete evidence_view_;
    evidence_view_ = nullptr;
    select_in_evidence_ = nullptr;
  }
  if (!data.problem.isEmpty()) report(tr("No evidence view: %1").arg(data.problem));
  // Every view answers select_cause; the window keeps it as the view's handler.
  const auto install = [this](auto* view) {
    select_in_evidence_ = [view](const CauseRef& c) { return view->select_cause(c); };
    evidence_view_ = view;
  };
  QString title;
  if (data.replay) {
    install(new views::ReplayRecordsView(*data.replay, tabs_));
    title = tr("Replay records");
  } else if (data.collectives) {
    install(new views::CollectivesView(*data.collectives, tabs_));
    title = tr("Collectives");
  } else if (data.checkpoints) {
    install(new views::CheckpointsView(*data.checkpoints, tabs_));
    title = tr("Checkpoints");
  } else if (data.ops) {
    install(new views::OpAlignmentView(*data.ops, tabs_));
    title = tr("Op alignment");
  } else {
    return;
  }
  evidence_view_->setObjectName(QStringLiteral("evidence_view"));
  tabs_->addTab(evidence_view_, title);
  // The view opens where the page does: on the first cause, without leaving the page.
  if (const auto v = verdict_page_->verdict(); v && v->first_cause)
    select_in_evidence_(v->cause_of(v->findings[*v->first_cause]));
}

void MainWindow::open_diff(const QString& a, const QString& b) {
  ++loads_running_;
  auto* watcher = new QFutureWatcher<std::pair<LoadOutcome, LoadOutcome>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, a, b] {
    --loads_running_;
    const auto [oa, ob] = watcher->result();
    watcher->deleteLater();
    if (!oa.doc || !ob.doc) {
      open_path(a);
      open_path(b);
      return;
    }
    adopt(oa.doc, oa.ranks);
    const auto& shown = doc_->graphs[static_cast<std::size_t>(current_)];
    auto pick = ob.doc->find(shown.rank, shown.kind);
    for (std::size_t i = 0; !pick && i < ob.doc->graphs.size(); ++i)
      if (ob.doc->graphs[i].kind == shown.kind) pick = i;
    report(tr("Diff with %1").arg(shown_text(ob.doc->path)));
    show_diff(ob.doc, static_cast<int>(pick.value_or(0)));
  });
  watcher->setFuture(QtConcurrent::run([a, b, layout = layout_] {
    return std::pair{load(QFileInfo(a).absoluteFilePath(), layout),
                     load(QFileInfo(b).absoluteFilePath(), layout)};
  }));
}

}  // namespace gparity::gui
