#pragma once
// Op alignment view (issues 23, 27): the eager and compiled op columns of a pair of PyTorch
// DebugMode op-log runs, aligned as `gparity compare EAGER COMPILED` aligns them
// (diff::ops::judge_op_logs over diff::ops::align_slices, the report from
// diff::ops::compare_op_logs): per rank and step, one row per eager op with its first compiled
// counterpart, further counterparts (a decomposition's ops) on the rows beneath it, and compiled
// records without an eager partner in their place between. Each eager op shows its value status
// (matched, weakly matched, divergent, unobserved, unhashed), module and source line, how it was
// paired; the first divergent op of the step is marked with its cause and selected. A rank and a
// step selector show every rank.
//
// When either side's records show Inductor kernel launches (issue 32), a kernel table under the
// op table lists the shown rank-step's launches (op_kernel_rows.hpp): two compiled runs judged
// launch by launch as `gparity compare` judges them, the step's first divergent launch selected;
// the selected launch's output-code line, nodes, ATen ops and source lines in a line beneath.
// The headline and exit code are the CLI's (diff::kernels::compare_runs_with_kernels); with two
// compiled runs the view opens where the kernel verdict leads.
//
// load_op_alignment runs off the GUI thread (no Qt) and throws model::InputError for input the
// CLI refuses. Rows hold their text, so the value type does not keep the logs alive.

#include <QAbstractTableModel>
#include <QWidget>
#include <cstdint>
#include <string>
#include <vector>

#include "gui/cause_ref.hpp"
#include "gui/legend.hpp"
#include "gui/views/op_kernel_model.hpp"
#include "gui/views/op_kernel_rows.hpp"
#include "gui/views/source_table_model.hpp"

class QComboBox;
class QVBoxLayout;
class QLabel;
class QTableView;

namespace gparity::gui::views {

struct OpAlignRow {
  /// "matched", "weakly matched", "divergent", "unobserved", "unhashed" (the eager op's value
  /// status), "first divergence" (the step's first divergent op), "counterpart" (a further
  /// compiled counterpart of the eager op above), "compiled only".
  std::string status;
  std::int64_t eager_index = -1;  // OpRecord::index of the eager op, -1 on compiled-only rows
  std::int64_t eager_line = 0;    // its line in the eager log
  std::string eager_op, module, source, phase, paired_by;
  std::int64_t compiled_index = -1;
  std::int64_t compiled_line = 0;
  std::string compiled_op, compiled_source;
};

struct OpAlignStep {
  std::int64_t step = 0;
  std::string eager_log, compiled_log;  // file names
  std::vector<OpAlignRow> rows;
  int first_row = -1;       // the first divergent op's row
  std::string first_text;   // "aten::gelu: origin"
  std::string first_cause;  // "origin", "received", ... (diff::ops::op_cause_name)
};

struct OpAlignRank {
  int rank = 0;
  std::vector<OpAlignStep> steps;
  int first_step = -1;  // index into steps of the rank's first divergent step
};

struct OpAlignment {
  std::string eager_path, compiled_path;
  std::string headline;  // the verdict's headline, as the CLI prints it
  int exit_code = 0;
  std::string hashes;  // the deciding hash functions ("hash_tensor")
  std::vector<OpAlignRank> ranks;
  OpKernels kernels;  // the kernel launches, when either side's records show any
};

OpAlignment load_op_alignment(const std::string& eager, const std::string& compiled);

QColor op_status_colour(const std::string& status);

/// One rank-step. Columns: eager #, eager op, status, module, source, paired by, compiled #,
/// compiled op, compiled source.
class OpAlignmentModel final : public SourceTableModel<OpAlignStep> {
 public:
  enum Column {
    EagerIndex,
    EagerOp,
    Status,
    Module,
    Source,
    PairedBy,
    CompiledIndex,
    CompiledOp,
    CompiledSource,
    ColumnCount
  };
  OpAlignmentModel();
  void set_step(const OpAlignStep* step) { show_source(step); }

 private:
  [[nodiscard]] int row_count(const OpAlignStep& step) const override;
  [[nodiscard]] QVariant cell(const OpAlignStep& step, int row, int column, int role) const override;
};

class OpAlignmentView final : public QWidget {
 public:
  explicit OpAlignmentView(OpAlignment data, QWidget* parent = nullptr);
  ~OpAlignmentView() override;

  /// Op: the rank, the step (when >= 0, else the rank's first divergent step, else its first),
  /// and the eager op whose record index is op_index (when >= 0; else the step's first
  /// divergence; then the step's first divergent kernel launch too); false when absent.
  bool select_cause(const CauseRef& cause);
  void show_rank_step(int rank, std::int64_t step);

  [[nodiscard]] int shown_rank() const;
  [[nodiscard]] std::int64_t shown_step() const;
  [[nodiscard]] const OpAlignRow* selected_row() const;
  [[nodiscard]] const OpAlignment& data() const noexcept { return data_; }
  [[nodiscard]] const OpAlignmentModel& model() const noexcept { return model_; }
  [[nodiscard]] const Legend* legend() const noexcept { return legend_; }
  /// The kernel table (hidden when neither side shows kernel launches), its selected launch and
  /// the line that details it.
  [[nodiscard]] const OpKernelModel& kernel_model() const noexcept { return kernel_model_; }
  [[nodiscard]] const OpKernelRow* selected_kernel() const;
  [[nodiscard]] QString kernel_detail() const;
  [[nodiscard]] bool shows_kernels() const;
  /// Selects the shown step's kernel row `row`; false when absent.
  bool select_kernel_row(int row);

 protected:
  /// Centres the selection once the table has its size.
  void showEvent(QShowEvent* event) override;

 private:
  void fill_steps();
  void show_step_index(int index);
  void select_row(int row);
  void add_kernel_table(QVBoxLayout* layout);
  void show_kernels_of_step();
  void show_kernel_detail();

  OpAlignment data_;
  OpAlignmentModel model_;
  OpKernelModel kernel_model_;
  int rank_ = -1, step_ = -1;  // indices into data_.ranks and its steps
  QComboBox* rank_box_ = nullptr;
  QComboBox* step_box_ = nullptr;
  QLabel* step_line_ = nullptr;
  QTableView* table_ = nullptr;
  Legend* legend_ = nullptr;
  QWidget* kernel_box_ = nullptr;
  QTableView* kernel_table_ = nullptr;
  QLabel* kernel_detail_ = nullptr;
};

}  // namespace gparity::gui::views
