#pragma once
// The gparity-view main window: graph selector, node table, canvas, node inspector with per-rank
// values, and a messages pane. Inputs are loaded on a worker thread (QtConcurrent) with a
// cancellable progress dialog; a load that fails shows its message in the window and leaves the
// previous document open. Recent files live in QSettings; files dropped on the window are opened.
// Rank-diff mode (a trace of two or more ranks): the loader thread also runs the trace-level part
// of `gparity graph ranks` (diff::classify_trace without graphs: the mesh read from DeviceMesh
// specs, the Flight Recorder pg_config or the manifest, else inferred; the process groups; the
// record facts); the shown graph is classified across ranks with that layout, and the findings
// list holds the trace facts first, then the graph's findings.
// The verdict page (gui/verdict_page.hpp) is the first tab: open_inputs computes, off the GUI
// thread, the verdict the CLI prints for one or two paths and opens the window on it; its
// findings and grid cells are followed through the window's CauseRegistry to the view that shows
// the cause (run heatmap, graph canvas, rank findings, and views registered later). The window
// sizes itself to the available screen the first time and remembers its geometry (QSettings).
// The evidence view of what was opened (gui/views: replay records, collectives, checkpoints, op
// alignment) is loaded on the same worker thread and joins as a tab; it is registered with the
// CauseRegistry, so following a finding selects its cause there. Paths in the title, the status
// bar and the Messages pane are shown relative to what was opened (full paths as tool tips).

#include <QMainWindow>
#include <QStringList>
#include <memory>

#include "diff/graphs/rank_classify.hpp"
#include "diff/report/finding.hpp"
#include "gui/document.hpp"
#include "gui/verdict_page.hpp"

class QComboBox;
class QLineEdit;
class QLabel;
class QTableView;
class QPlainTextEdit;
class QMenu;
class QSortFilterProxyModel;
class QTabWidget;

namespace gparity::gui {

class GraphCanvas;
class GraphListModel;
class NodeTableModel;
class NodeInspectorModel;
class FindingsModel;
class RunViewsWidget;
class DiffView;
class NodeFindingsModel;
namespace views {
class ReplayRecordsView;
}
struct EvidenceData;  // main_window_loads.cpp

class MainWindow final : public QMainWindow {
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Starts loading `path` in the background (progress dialog unless `quiet`).
  void open_path(const QString& path, bool quiet = false);
  /// `gparity-view PATH [PATH]`: computes the verdict of the paths in the background and opens
  /// the window on it (gui/verdict.hpp), then the views of what they hold: run views for runs,
  /// graphs for graph inputs. Paths that have no verdict open as graphs (open_path, open_diff).
  void open_inputs(const QStringList& paths);
  [[nodiscard]] VerdictPage* verdict_page() const { return verdict_page_; }
  /// Views that select causes: each is offered every followed cause (gui/cause_ref.hpp).
  void register_cause_view(CauseRegistry::Handler handler) { causes_.add(std::move(handler)); }
  /// Offers `cause` to every registered view; true when one selected it.
  bool follow_cause(const CauseRef& cause);
  [[nodiscard]] QTabWidget* tabs() const { return tabs_; }
  /// The device mesh for rank facts and rank diffs of documents opened from now on, instead of
  /// the one read from the trace (`gparity-view --mesh`, as `gparity graph ranks --mesh`).
  void set_mesh_override(const diff::RankLayout& layout) { layout_ = layout; }
  /// Spins the event loop until no load is running (tests, screenshots).
  bool wait_idle(int timeout_ms = 60000);
  /// Shows graph `index` of the current document.
  void show_graph(int index);
  void select_node(model::NodeId id);
  /// Loads a baseline and a candidate run (any format model::open_run reads) in the background
  /// and shows the run views in their own window; errors go to the messages pane.
  void open_runs(const QString& baseline, const QString& candidate);
  /// True when `path` opens as a run (gparity-view BASELINE CANDIDATE opens the run views).
  [[nodiscard]] static bool is_run(const QString& path);
  [[nodiscard]] RunViewsWidget* run_views() const { return run_views_.get(); }
  /// The tab of the evidence view of what was opened (gui/views), null when it has none.
  [[nodiscard]] QWidget* evidence_view() const { return evidence_view_; }
  /// The evidence view when it is the replay records view, else null.
  [[nodiscard]] views::ReplayRecordsView* replay_view() const;
  /// `path` as the window shows it: relative to the parent of what was opened when it lies
  /// under it (gui/verdict.hpp shown_path), else as it is.
  [[nodiscard]] QString shown_input(const QString& path) const;

  [[nodiscard]] std::shared_ptr<const Document> document() const { return doc_; }
  [[nodiscard]] GraphCanvas* canvas() const { return canvas_; }
  [[nodiscard]] QComboBox* graph_selector() const { return selector_; }
  [[nodiscard]] const NodeTableModel* node_table() const { return table_model_.get(); }
  [[nodiscard]] const NodeInspectorModel* inspector() const { return inspector_model_.get(); }
  [[nodiscard]] const FindingsModel* findings() const { return findings_model_.get(); }
  /// The trace-level rank report of the open document (null unless it is a multi-rank trace).
  [[nodiscard]] std::shared_ptr<const diff::TraceRanksReport> rank_report() const { return ranks_; }
  /// Selects the node a findings row names (what a click on the row does); a trace fact first
  /// shows a graph of its compile id (the shown rank's when it has one).
  void jump_to_finding(int row);
  [[nodiscard]] QString messages() const;
  [[nodiscard]] int current_graph() const { return current_; }
  /// Side-by-side diff of the shown graph (left) with graph `index` of `other` (right), in a
  /// window of its own (gui/diff_view.hpp).
  DiffView* show_diff(std::shared_ptr<const Document> other, int index);
  /// `gparity-view A B`: loads both in the background, shows A and diffs its graph with the same
  /// kind of graph in B. Falls back to opening each path when either is not a graph input.
  void open_diff(const QString& a, const QString& b);
  [[nodiscard]] DiffView* diff_view() const { return diff_view_; }
  /// Node findings of two replay runs (gui/node_findings.hpp): listed in the "Node findings"
  /// dock; open_runs fills them. Selecting a row shows its graph and selects the node, opening
  /// the graph source the run names when no open graph matches.
  void set_node_findings(std::vector<diff::Finding> findings);
  [[nodiscard]] const NodeFindingsModel* node_findings() const { return node_findings_model_.get(); }
  /// Selects the node finding where row `row`'s divergence started (a received finding's origin
  /// on another rank), which shows it; false when it has none listed. Double-clicking a row does it.
  bool jump_to_origin(int row);
  [[nodiscard]] int current_node_finding() const;
  void jump_to_node_finding(int row);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void build_menus();
  void add_recent(const QString& path);
  void refresh_recent_menu();
  void adopt(std::shared_ptr<const Document> doc, std::shared_ptr<const diff::TraceRanksReport> ranks);
  void report(const QString& text);
  void on_node_selected(model::NodeId id);
  void classify_current();
  void report_rank_facts();
  void adopt_verdict(std::shared_ptr<const JobVerdict> verdict);
  void show_run_views(RunPair runs);
  bool select_graph_cause(const CauseRef& cause);
  void save_geometry() const;
  void show_evidence_view(const EvidenceData& data);
  /// `text` with the opened inputs' parent folders taken out of every path in it.
  [[nodiscard]] QString relative_text(QString text) const;

  std::shared_ptr<const Document> doc_;
  std::shared_ptr<const diff::TraceRanksReport> ranks_;  // trace-level rank facts of doc_
  diff::RankLayout layout_;                              // --mesh, or empty: read from the trace
  int current_ = -1;
  GraphCanvas* canvas_ = nullptr;
  QComboBox* selector_ = nullptr;
  QLineEdit* search_ = nullptr;
  QLabel* search_status_ = nullptr;
  QTableView* table_ = nullptr;
  QTableView* inspector_view_ = nullptr;
  QPlainTextEdit* messages_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  std::unique_ptr<GraphListModel> graphs_model_;
  std::unique_ptr<NodeTableModel> table_model_;
  std::unique_ptr<QSortFilterProxyModel> table_proxy_;
  std::unique_ptr<NodeInspectorModel> inspector_model_;
  std::unique_ptr<FindingsModel> findings_model_;
  QTableView* findings_view_ = nullptr;
  std::unique_ptr<RunViewsWidget> run_views_;  // a tab of tabs_ while open
  QTabWidget* tabs_ = nullptr;
  VerdictPage* verdict_page_ = nullptr;
  CauseRegistry causes_;
  QWidget* evidence_view_ = nullptr;  // a tab of tabs_ while open
  std::function<bool(const CauseRef&)> select_in_evidence_;
  QStringList opened_;             // absolute paths of what was opened last
  DiffView* diff_view_ = nullptr;  // a child window, made on first use
  std::unique_ptr<NodeFindingsModel> node_findings_model_;
  QTableView* node_findings_view_ = nullptr;
  int pending_node_finding_ = -1;  // a row to jump to once the graph it names is open
  int loads_running_ = 0;
  int load_generation_ = 0;
};

}  // namespace gparity::gui
