#pragma once
// Collectives view (issue 27): the per-rank collective sequences of each process group (or graph)
// side by side, as `gparity collectives` reads and judges them (diff::load_collectives,
// diff::report_collectives): one column per rank (and, with a baseline, one per baseline rank
// first), one row per position in the stream. A cell is coloured by what the report says of it:
// the first place a rank departs from the stream's reference rank (mismatch), a root / non-root
// pair that differs by design and matches by the rooted rule (diff::rooted_records_match),
// against the baseline reordered, changed, added or removed, point-to-point, or absent; across
// process groups (issue 34) in a deadlock's wait-for cycle, in an order inversion between two
// ranks, or moved across another group's collective against the baseline. The
// report's findings are listed beneath; a row selects its cell.
//
// load_collective_sequences runs off the GUI thread (no Qt) and throws model::InputError for
// input the CLI refuses.

#include <QAbstractTableModel>
#include <QWidget>
#include <cstdint>
#include <string>
#include <vector>

#include "diff/report/finding.hpp"
#include "gui/cause_ref.hpp"
#include "gui/legend.hpp"
#include "gui/views/source_table_model.hpp"

class QComboBox;
class QLabel;
class QListWidget;
class QTableView;

namespace gparity::gui::views {

struct CollectiveCell {
  /// "same", "mismatch", "differs" (after a rank's first mismatch), "rooted", "reordered",
  /// "changed", "added", "removed", "p2p", "deadlock", "inverted", "moved", "none" (the rank has
  /// no collective here).
  std::string status = "none";
  std::string text;      // "all_gather [1] int64 → [4, 1] int64"
  std::string detail;    // every field, for the tool tip and the inspector
  std::int64_t seq = 0;  // Flight Recorder collective_seq_id (0 for graphs)
  std::string where;     // the record's place: "record N" of a dump, the graph node (findings' node)
};

struct CollectiveColumn {
  bool baseline = false;
  int rank = 0;
  std::vector<CollectiveCell> cells;  // by position; shorter columns are padded with "none"
};

struct CollectiveStreamTable {
  std::string name;  // "pg 0 (default_pg)", "0/0 aot_joint_graph"
  std::vector<CollectiveColumn> columns;
  std::size_t rows = 0;
};

/// Where a finding points: its stream, column and row (-1 when it names no cell).
struct CollectiveFindingRef {
  diff::Finding finding;
  int stream = -1, column = -1, row = -1;
};

struct CollectiveSequences {
  std::vector<std::string> paths, baseline_paths;
  std::vector<CollectiveStreamTable> streams;
  std::vector<CollectiveFindingRef> findings;  // the report's, Info left out, in report order
  std::string headline;                        // the verdict's headline, as the CLI prints it
  int exit_code = 0;
  std::vector<std::string> problems;  // readers' damage
};

CollectiveSequences load_collective_sequences(const std::vector<std::string>& paths,
                                              const std::vector<std::string>& baseline_paths = {});

QColor collective_status_colour(const std::string& status);

/// One stream: rows are positions, columns ranks (baseline ranks first). BackgroundRole by status,
/// ToolTipRole the detail, kStatusRole the status.
class CollectiveStreamModel final : public SourceTableModel<CollectiveStreamTable> {
 public:
  static constexpr int kStatusRole = Qt::UserRole + 1;
  void set_stream(const CollectiveStreamTable* stream) { show_source(stream); }
  /// Ranks across, positions (1-based, as the report names them) down.
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  [[nodiscard]] int row_count(const CollectiveStreamTable& stream) const override;
  [[nodiscard]] int column_count(const CollectiveStreamTable& stream) const override;
  [[nodiscard]] QVariant cell(const CollectiveStreamTable& stream, int row, int column,
                              int role) const override;
};

class CollectivesView final : public QWidget {
 public:
  explicit CollectivesView(CollectiveSequences data, QWidget* parent = nullptr);
  ~CollectivesView() override;

  /// CollectiveEntry: the stream named `group` (exactly, or the stream whose name starts with
  /// "pg <group> " / equals "pg <group>"), the rank's column (the baseline's when side is "base"),
  /// the row whose record is `node` (its place, as a finding's where.node names it), else whose
  /// Flight Recorder seq is `seq` (a graph stream: the 1-based position). False when any is
  /// missing.
  bool select_cause(const CauseRef& cause);
  void show_stream(int index);
  /// Selects the cell a finding of `findings` points to; false when it names none.
  bool select_finding(int index);

  [[nodiscard]] int shown_stream() const noexcept { return shown_; }
  /// The selected cell: stream name, column (rank, baseline) and row; row -1 when none.
  struct Selection {
    std::string stream;
    int rank = -1;
    bool baseline = false;
    int row = -1;
  };
  [[nodiscard]] Selection selection() const;
  [[nodiscard]] const CollectiveSequences& data() const noexcept { return data_; }
  [[nodiscard]] const CollectiveStreamModel& model() const noexcept { return model_; }
  [[nodiscard]] const Legend* legend() const noexcept { return legend_; }

 protected:
  /// Centres the selection once the table has its size.
  void showEvent(QShowEvent* event) override;

 private:
  void select_cell(int column, int row);
  void update_inspector();

  CollectiveSequences data_;
  CollectiveStreamModel model_;
  int shown_ = -1;
  QComboBox* stream_box_ = nullptr;
  QTableView* table_ = nullptr;
  QLabel* inspector_ = nullptr;
  QListWidget* findings_ = nullptr;
  Legend* legend_ = nullptr;
};

}  // namespace gparity::gui::views
