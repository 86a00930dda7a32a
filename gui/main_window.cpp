#include "gui/main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <utility>

#include "gui/display_text.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/models.hpp"
#include "gui/node_findings.hpp"
#include "gui/run_views.hpp"
#include "gui/verdict.hpp"

namespace gparity::gui {

namespace {

constexpr int kMaxRecent = 8;

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

}  // namespace gparity::gui
