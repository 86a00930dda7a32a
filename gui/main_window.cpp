#include "gui/main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressDialog>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <exception>
#include <functional>
#include <tuple>
#include <utility>

#include "gui/diff_view.hpp"
#include "gui/display_text.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/models.hpp"
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
          if (is_replay_run_path(*it))
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

constexpr int kMaxRecent = 8;

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

QTableView* make_table(QWidget* parent) {
  auto* t = new QTableView(parent);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->verticalHeader()->setDefaultSectionSize(20);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setWordWrap(false);
  return t;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      graphs_model_(std::make_unique<GraphListModel>()),
      table_model_(std::make_unique<NodeTableModel>()),
      table_proxy_(std::make_unique<QSortFilterProxyModel>()),
      inspector_model_(std::make_unique<NodeInspectorModel>()),
      findings_model_(std::make_unique<FindingsModel>()),
      node_findings_model_(std::make_unique<NodeFindingsModel>()) {
  setWindowTitle(QStringLiteral("gparity-view"));
  setAcceptDrops(true);

  // The verdict first, the graph beside it; run views join as a tab when runs are open.
  tabs_ = new QTabWidget(this);
  verdict_page_ = new VerdictPage(tabs_);
  canvas_ = new GraphCanvas(tabs_);
  tabs_->addTab(verdict_page_, tr("Verdict"));
  tabs_->addTab(canvas_, tr("Graph"));
  setCentralWidget(tabs_);
  verdict_page_->on_cause = [this](const CauseRef& c) { return follow_cause(c); };
  register_cause_view([this](const CauseRef& c) {
    if (!run_views_ || !run_views_->select_cause(c)) return false;
    tabs_->setCurrentWidget(run_views_.get());
    return true;
  });
  register_cause_view([this](const CauseRef& c) { return select_graph_cause(c); });
  // The evidence view of what was opened (replay records, collectives, ...), once it is loaded.
  register_cause_view([this](const CauseRef& c) {
    if (!evidence_view_ || !select_in_evidence_ || !select_in_evidence_(c)) return false;
    tabs_->setCurrentWidget(evidence_view_);
    return true;
  });

  // Left: graph selector, search, node table.
  auto* left = new QWidget(this);
  auto* lv = new QVBoxLayout(left);
  lv->setContentsMargins(4, 4, 4, 4);
  selector_ = new QComboBox(left);
  selector_->setModel(graphs_model_.get());
  selector_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  lv->addWidget(selector_);
  auto* search_row = new QHBoxLayout();
  search_ = new QLineEdit(left);
  search_->setPlaceholderText(tr("Search name or target (Enter)"));
  auto* prev = new QPushButton(QStringLiteral("◀"), left);
  auto* next = new QPushButton(QStringLiteral("▶"), left);
  prev->setMaximumWidth(28);
  next->setMaximumWidth(28);
  search_row->addWidget(search_);
  search_row->addWidget(prev);
  search_row->addWidget(next);
  lv->addLayout(search_row);
  search_status_ = new QLabel(left);
  lv->addWidget(search_status_);
  table_ = make_table(left);
  table_proxy_->setSourceModel(table_model_.get());
  table_proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  table_proxy_->setFilterKeyColumn(-1);
  table_->setModel(table_proxy_.get());
  table_->setSortingEnabled(true);
  table_->setObjectName(QStringLiteral("node_table"));
  table_->verticalHeader()->hide();  // the "#" column is the node's index, filtered or sorted
  table_->sortByColumn(NodeTableModel::Index, Qt::AscendingOrder);
  lv->addWidget(table_);
  auto* left_dock = new QDockWidget(tr("Graph"), this);
  left_dock->setObjectName(QStringLiteral("graph_dock"));
  left_dock->setWidget(left);
  addDockWidget(Qt::LeftDockWidgetArea, left_dock);

  inspector_view_ = make_table(this);
  inspector_view_->setModel(inspector_model_.get());
  inspector_view_->setWordWrap(true);
  inspector_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  inspector_view_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* right_dock = new QDockWidget(tr("Node inspector"), this);
  right_dock->setObjectName(QStringLiteral("inspector_dock"));
  right_dock->setWidget(inspector_view_);
  addDockWidget(Qt::RightDockWidgetArea, right_dock);

  findings_view_ = make_table(this);
  findings_view_->setModel(findings_model_.get());
  auto* findings_dock = new QDockWidget(tr("Rank findings"), this);
  findings_dock->setObjectName(QStringLiteral("findings_dock"));
  findings_dock->setWidget(findings_view_);
  addDockWidget(Qt::BottomDockWidgetArea, findings_dock);
  connect(findings_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) jump_to_finding(current.row());
          });

  node_findings_view_ = make_table(this);
  node_findings_view_->setModel(node_findings_model_.get());
  auto* node_dock = new QDockWidget(tr("Node findings"), this);
  node_dock->setObjectName(QStringLiteral("node_findings_dock"));
  node_dock->setWidget(node_findings_view_);
  addDockWidget(Qt::BottomDockWidgetArea, node_dock);
  connect(node_findings_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) jump_to_node_finding(current.row());
          });
  connect(node_findings_view_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    if (index.isValid()) jump_to_origin(index.row());
  });

  messages_ = new QPlainTextEdit(this);
  messages_->setReadOnly(true);
  messages_->setMaximumBlockCount(2000);
  auto* bottom_dock = new QDockWidget(tr("Messages"), this);
  bottom_dock->setObjectName(QStringLiteral("messages_dock"));
  bottom_dock->setWidget(messages_);
  addDockWidget(Qt::BottomDockWidgetArea, bottom_dock);
  resizeDocks({left_dock, right_dock}, {380, 380}, Qt::Horizontal);
  tabifyDockWidget(findings_dock, bottom_dock);
  tabifyDockWidget(findings_dock, node_dock);
  findings_dock->raise();
  resizeDocks({bottom_dock}, {150}, Qt::Vertical);

  connect(selector_, &QComboBox::currentIndexChanged, this, [this](int i) { show_graph(i); });
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    const int n = canvas_->search(search_->text());
    table_proxy_->setFilterFixedString(search_->text());
    search_status_->setText(search_->text().isEmpty() ? QString() : tr("%n match(es)", nullptr, n));
  });
  connect(next, &QPushButton::clicked, canvas_, &GraphCanvas::next_match);
  connect(prev, &QPushButton::clicked, canvas_, &GraphCanvas::previous_match);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (!current.isValid()) return;
            const auto id = static_cast<model::NodeId>(current.data(kNodeIdRole).toInt());
            if (id != canvas_->selected()) canvas_->select_node(id);
          });
  connect(canvas_, &GraphCanvas::node_selected, this, [this](quint32 id) { on_node_selected(id); });
  build_menus();
  statusBar()->showMessage(
      tr("Open a TORCH_TRACE directory or an FX text file (File > Open, or drop it here)"));
  // The geometry of the last window, else most of the available screen, centred.
  const QSettings settings;
  if (!restoreGeometry(settings.value(QStringLiteral("geometry")).toByteArray())) {
    const QRect avail = screen() ? screen()->availableGeometry() : QRect(0, 0, 1400, 860);
    const QSize size(avail.width() * 9 / 10, avail.height() * 9 / 10);
    setGeometry(QStyle::alignedRect(Qt::LeftToRight, Qt::AlignCenter, size, avail));
  }
  restoreState(settings.value(QStringLiteral("window_state")).toByteArray());
  // The graph docks stay out of the way until a graph is open (adopt shows them).
  for (auto* dock : findChildren<QDockWidget*>())
    if (dock->objectName() != QStringLiteral("messages_dock")) dock->hide();
}

MainWindow::~MainWindow() {
  save_geometry();
}

void MainWindow::save_geometry() const {
  QSettings settings;
  settings.setValue(QStringLiteral("geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window_state"), saveState());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  save_geometry();
  QMainWindow::closeEvent(event);
}

bool MainWindow::follow_cause(const CauseRef& cause) {
  return causes_.follow(cause);
}

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

void MainWindow::build_menus() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open_file = file->addAction(tr("&Open file…"), this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, tr("Open a trace log or FX text"));
    if (!p.isEmpty()) open_path(p);
  });
  open_file->setShortcut(QKeySequence::Open);
  file->addAction(tr("Open &directory…"), this, [this] {
    const QString p = QFileDialog::getExistingDirectory(
        this, tr("Open a TORCH_TRACE directory, a run with Flight Recorder dumps"));
    if (!p.isEmpty()) open_inputs({p});
  });
  file->addAction(tr("Open r&uns (baseline, candidate)…"), this, [this] {
    const QString b = QFileDialog::getExistingDirectory(this, tr("Baseline run"));
    if (b.isEmpty()) return;
    const QString c = QFileDialog::getExistingDirectory(this, tr("Candidate run"));
    if (!c.isEmpty()) open_inputs({b, c});
  });
  file->addAction(tr("&Diff with graph…"), this, [this] {
    if (!doc_ || current_ < 0) return;
    QStringList labels;
    for (const auto& e : doc_->graphs) labels << shown_text(e.label);
    bool ok = false;
    const QString pick =
        QInputDialog::getItem(this, tr("Diff with"), tr("Right-hand graph:"), labels, current_, false, &ok);
    if (ok) show_diff(doc_, static_cast<int>(labels.indexOf(pick)));
  });
  recent_menu_ = file->addMenu(tr("Open &recent"));
  refresh_recent_menu();
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::quit);

  auto* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("&Fit"), QKeySequence(Qt::Key_F), canvas_, &GraphCanvas::fit);
  view->addAction(tr("Zoom &in"), QKeySequence::ZoomIn, this, [this] { canvas_->zoom_by(1.25); });
  view->addAction(tr("Zoom &out"), QKeySequence::ZoomOut, this, [this] { canvas_->zoom_by(0.8); });
  view->addAction(tr("Find &next"), QKeySequence::FindNext, canvas_, &GraphCanvas::next_match);
  view->addAction(tr("Find &previous"), QKeySequence::FindPrevious, canvas_, &GraphCanvas::previous_match);
  view->addAction(tr("&Search"), QKeySequence::Find, this, [this] { search_->setFocus(); });
}

void MainWindow::refresh_recent_menu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value(QStringLiteral("recent")).toStringList();
  for (const QString& p : recent) recent_menu_->addAction(p, this, [this, p] { open_path(p); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::add_recent(const QString& path) {
  QSettings s;
  QStringList recent = s.value(QStringLiteral("recent")).toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  s.setValue(QStringLiteral("recent"), recent);
  refresh_recent_menu();
}

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
  return is_run_path(path.toStdString());
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

void MainWindow::adopt(std::shared_ptr<const Document> doc,
                       std::shared_ptr<const diff::TraceRanksReport> ranks) {
  doc_ = std::move(doc);
  ranks_ = std::move(ranks);
  current_ = -1;
  const QString shown = shown_input(shown_text(doc_->path));
  setWindowTitle(QStringLiteral("gparity-view — %1").arg(shown));
  setWindowFilePath(QString::fromStdString(doc_->path));
  report(tr("Opened %1 (%2, %n graph(s))", nullptr, static_cast<int>(doc_->graphs.size()))
             .arg(shown, shown_text(doc_->format)));
  for (const auto& p : doc_->problems) report(tr("Problem: %1").arg(shown_text(p)));
  report_rank_facts();
  graphs_model_->set_document(doc_);
  // Start on the first joint graph when there is one: it is the largest and most telling.
  int first = 0;
  for (std::size_t i = 0; i < doc_->graphs.size(); ++i)
    if (doc_->graphs[i].kind == "aot_joint_graph") {
      first = static_cast<int>(i);
      break;
    }
  selector_->setCurrentIndex(first);
  show_graph(first);
  if (!verdict_page_->verdict()) tabs_->setCurrentWidget(canvas_);
  for (auto* dock : findChildren<QDockWidget*>()) dock->show();
  statusBar()->showMessage(tr("%1 graphs").arg(doc_->graphs.size()));
  if (const int row = std::exchange(pending_node_finding_, -1); row >= 0) jump_to_node_finding(row);
}

void MainWindow::show_graph(int index) {
  if (!doc_ || index < 0 || index >= static_cast<int>(doc_->graphs.size()) || index == current_) return;
  current_ = index;
  if (selector_->currentIndex() != index) selector_->setCurrentIndex(index);
  const auto& e = doc_->graphs[static_cast<std::size_t>(index)];
  table_model_->set_graph(doc_, e.graph);
  inspector_model_->clear();
  canvas_->set_graph(doc_, e.graph);
  search_status_->clear();
  classify_current();
}

void MainWindow::select_node(model::NodeId id) {
  canvas_->select_node(id);
}

void MainWindow::on_node_selected(model::NodeId id) {
  if (!doc_ || current_ < 0) return;
  const auto& e = doc_->graphs[static_cast<std::size_t>(current_)];
  inspector_model_->set_node(doc_, doc_->same_graph_on_ranks(e), std::string(e.graph->node_name(id)));
  const QModelIndex src = table_model_->index(static_cast<int>(id), 0);
  const QModelIndex proxied = table_proxy_->mapFromSource(src);
  if (proxied.isValid() && table_->currentIndex().row() != proxied.row()) {
    table_->setCurrentIndex(proxied);
    table_->scrollTo(proxied);
  }
  const int differing = inspector_model_->differing_rows();
  statusBar()->showMessage(tr("%1: %2").arg(
      shown_text(e.graph->node_name(id)),
      differing ? tr("%n field(s) differ across ranks", nullptr, differing) : tr("same on every rank")));
}

QString MainWindow::messages() const {
  return messages_->toPlainText();
}

void MainWindow::report(const QString& text) {
  messages_->appendPlainText(relative_text(text));
}

QString MainWindow::shown_input(const QString& path) const {
  if (opened_.isEmpty()) return QFileInfo(path).fileName().isEmpty() ? path : QFileInfo(path).fileName();
  std::vector<std::string> bases;
  for (const QString& p : opened_) bases.push_back(p.toStdString());
  return QString::fromStdString(shown_path(QFileInfo(path).absoluteFilePath().toStdString(), bases));
}

QString MainWindow::relative_text(QString text) const {
  // The parent folder of each opened input, longest first, out of every path the text holds.
  QStringList parents;
  for (const QString& p : opened_) {
    const QString parent = QFileInfo(p).absolutePath();
    if (parent != QStringLiteral("/") && !parents.contains(parent)) parents << parent;
  }
  std::sort(parents.begin(), parents.end(),
            [](const QString& a, const QString& b) { return a.size() > b.size(); });
  for (const QString& parent : parents) text.replace(parent + QLatin1Char('/'), QString());
  return text;
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
  QString title;
  if (data.replay) {
    auto* view = new views::ReplayRecordsView(*data.replay, tabs_);
    select_in_evidence_ = [view](const CauseRef& c) { return view->select_cause(c); };
    evidence_view_ = view;
    title = tr("Replay records");
  } else if (data.collectives) {
    auto* view = new views::CollectivesView(*data.collectives, tabs_);
    select_in_evidence_ = [view](const CauseRef& c) { return view->select_cause(c); };
    evidence_view_ = view;
    title = tr("Collectives");
  } else if (data.checkpoints) {
    auto* view = new views::CheckpointsView(*data.checkpoints, tabs_);
    select_in_evidence_ = [view](const CauseRef& c) { return view->select_cause(c); };
    evidence_view_ = view;
    title = tr("Checkpoints");
  } else if (data.ops) {
    auto* view = new views::OpAlignmentView(*data.ops, tabs_);
    select_in_evidence_ = [view](const CauseRef& c) { return view->select_cause(c); };
    evidence_view_ = view;
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

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (paths.size() <= 2)
    open_inputs(paths);
  else
    for (const QString& p : paths) open_path(p);
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
             .arg(QString::fromUtf8(diff::verdict_name(c.verdict).data())));
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
