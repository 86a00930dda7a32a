#pragma once
// Replay records view (issue 27): the per-node verdicts of a `gparity replay --against` or
// `--coor` run directory, on every rank. The data is what `gparity replay` itself judged, judged
// again from the records through the same calls (diff::judge_replay_run for each rank's verdict
// and first divergent node; diff::compare_node_graph and diff::causality::classify for every
// node's cause, as judge_replay does on the ranks' exchanged records). Each node is equal, origin,
// propagated, received, input, unknown or unmatched; both sides' hashes are shown; N / P step to
// the next / previous divergent node; a rank selector shows every rank. Beneath the node table,
// side a's graph as the replay ran it (the run's graph JSON) on the graph canvas, nodes filled
// with their status colour; selection follows between table and canvas.
//
// load_replay_records runs off the GUI thread (no Qt) and throws model::InputError for a run it
// cannot use (not a replay run, records missing).

#include <QAbstractTableModel>
#include <QWidget>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gui/cause_ref.hpp"
#include "gui/legend.hpp"
#include "gui/views/source_table_model.hpp"

class QComboBox;
class QLabel;
class QTableView;

namespace gparity::gui {
struct Document;
class GraphCanvas;
}  // namespace gparity::gui

namespace gparity::gui::views {

struct ReplayNodeRow {
  std::string node;    // name in side a's graph ("own" for --coor)
  std::string node_b;  // its partner in side b's graph ("" when none)
  std::string op, source;
  /// "equal", "origin", "propagated", "received", "input", "unknown" (causality::cause_name), or
  /// "unmatched" (records on one side only).
  std::string status;
  std::string cause;  // the classification as one clause ("received at all_reduce (group ...)")
  std::string xxh3_a, xxh3_b, shard_a, shard_b;  // hex, of the first output ("" when none)
};

struct ReplayRankNodes {
  int rank = 0;
  std::string verdict;              // this rank's verdict, as `gparity replay` prints it
  std::string first_node;           // the verdict's first divergent node ("" when equal)
  std::vector<ReplayNodeRow> rows;  // walk order (topological order of side a)
  /// Side a's graph as replayed (the "graph" record's graph JSON, through load_document), for
  /// the canvas; null when the run names none or it cannot be read.
  std::shared_ptr<const Document> graph;
};

struct ReplayRecords {
  std::string run_dir;
  std::string mode;              // "coor" or "against"
  std::string label_a, label_b;  // "own"/"coor" or "a"/"b"
  std::string overall;           // every rank's verdict, origin ranks first
  int exit_code = 0;             // as `gparity replay` exits: 0 all equal, 1 a divergence
  std::vector<ReplayRankNodes> ranks;
  [[nodiscard]] const ReplayRankNodes* rank(int r) const noexcept;
};

/// Reads a replay run directory and judges it (see above). Throws model::InputError.
ReplayRecords load_replay_records(const std::string& run_dir);

/// The legend entries of node statuses (colour, label, meaning), in the model's colours.
QColor replay_status_colour(const std::string& status);

/// One rank's nodes. Columns: #, node, op, source, status, xxh3 a, xxh3 b, cause. BackgroundRole
/// colours the status cell (and the row, lighter); ToolTipRole holds both sides' hashes.
class ReplayNodeModel final : public SourceTableModel<ReplayRankNodes> {
 public:
  enum Column { Index, Node, Op, Source, Status, HashA, HashB, Cause, ColumnCount };
  ReplayNodeModel();
  void set_rank(const ReplayRankNodes* rank) { show_source(rank); }
  [[nodiscard]] const ReplayRankNodes* rank() const noexcept { return source(); }

 private:
  [[nodiscard]] int row_count(const ReplayRankNodes& rank) const override;
  [[nodiscard]] QVariant cell(const ReplayRankNodes& rank, int row, int column, int role) const override;
};

class ReplayRecordsView final : public QWidget {
 public:
  explicit ReplayRecordsView(ReplayRecords records, QWidget* parent = nullptr);
  ~ReplayRecordsView() override;

  /// ReplayNode / GraphNode: selects the rank (when given) and the node (by either side's name);
  /// false when no such rank or node.
  bool select_cause(const CauseRef& cause);
  void set_rank(int rank);
  /// Moves the selection to the next / previous divergent node of the shown rank (keys N / P);
  /// false when there is none.
  bool next_divergence();
  bool previous_divergence();

  [[nodiscard]] int shown_rank() const;
  [[nodiscard]] std::string selected_node() const;  // "" when nothing is selected
  [[nodiscard]] QString inspector_text() const;
  [[nodiscard]] const ReplayRecords& records() const noexcept { return records_; }
  [[nodiscard]] const ReplayNodeModel& model() const noexcept { return model_; }
  [[nodiscard]] const Legend* legend() const noexcept { return legend_; }
  [[nodiscard]] GraphCanvas* canvas() const noexcept { return canvas_; }

 protected:
  /// Centres the selection once the table has its size.
  void showEvent(QShowEvent* event) override;

 private:
  void select_row(int row);
  void update_inspector();
  bool step_divergence(int direction);

  ReplayRecords records_;
  ReplayNodeModel model_;
  QComboBox* rank_box_ = nullptr;
  QLabel* verdict_ = nullptr;
  QTableView* table_ = nullptr;
  QLabel* inspector_ = nullptr;
  GraphCanvas* canvas_ = nullptr;
  bool syncing_ = false;  // a selection being copied between table and canvas
  Legend* legend_ = nullptr;
};

}  // namespace gparity::gui::views
