#pragma once
// Checkpoints view (issue 27): two checkpoints (DCP folders, safetensors files, run folders of
// step-<n> checkpoints) compared per parameter whatever their parallel layout, as `gparity
// compare` does (diff::compare_checkpoints: dtype, global shape, shard-invariant hash, full-tensor
// XXH3-64), one row per parameter with both sides' hashes and layouts, and for the selected
// parameter which shard of which file (rank) covers which part of the tensor on each side (the DCP
// .metadata chunks, model::read_dcp_metadata; a safetensors file holds the whole tensor).
//
// load_checkpoint_layouts runs off the GUI thread (no Qt) and throws model::InputError for input
// the CLI refuses.

#include <QAbstractTableModel>
#include <QWidget>
#include <cstdint>
#include <string>
#include <vector>

#include "gui/cause_ref.hpp"
#include "gui/legend.hpp"
#include "gui/views/source_table_model.hpp"

class QComboBox;
class QLabel;
class QTableView;

namespace gparity::gui::views {

struct CheckpointShard {
  std::string file;  // "__1_0.distcp", "step-3.safetensors"
  int rank = -1;     // from a DCP file name (__<rank>_<n>.distcp); -1 when it names none
  std::vector<std::int64_t> offsets, sizes;
  std::int64_t elements = 0;
};

struct CheckpointParamRow {
  std::string name;            // as the comparison names it (a common wrapper prefix dropped when needed)
  std::string status;          // "equal", "differs", "missing"
  std::string message;         // the comparison's sentence
  std::string type_a, type_b;  // "float32 [256, 128]"
  std::string xxh3_a, xxh3_b, shard_a, shard_b, layout_a, layout_b;  // "" on a side without it
  std::vector<CheckpointShard> shards_a, shards_b;
};

struct CheckpointStep {
  std::int64_t step = -1;  // -1: single checkpoints
  std::string path_a, path_b;
  std::vector<CheckpointParamRow> params;  // the comparison's order (registration order)
};

struct CheckpointLayouts {
  std::string baseline, candidate;
  std::vector<CheckpointStep> steps;
  std::string headline;  // the verdict, as the CLI prints it
  int exit_code = 0;
  [[nodiscard]] const CheckpointStep* step(std::int64_t s) const noexcept;
};

CheckpointLayouts load_checkpoint_layouts(const std::string& baseline, const std::string& candidate);

QColor checkpoint_status_colour(const std::string& status);

/// Parameters of one step. Columns: parameter, status, baseline type, xxh3 and shard hash of each
/// side, layout of each side. BackgroundRole colours the status.
class CheckpointParamModel final : public SourceTableModel<CheckpointStep> {
 public:
  enum Column { Param, Status, Type, XxhA, XxhB, ShardA, ShardB, LayoutA, LayoutB, ColumnCount };
  CheckpointParamModel();
  void set_step(const CheckpointStep* step) { show_source(step); }

 private:
  [[nodiscard]] int row_count(const CheckpointStep& step) const override;
  [[nodiscard]] QVariant cell(const CheckpointStep& step, int row, int column, int role) const override;
};

/// The shards of one parameter, baseline then candidate: side, file, rank, offsets, sizes, share
/// of the tensor's elements.
class CheckpointShardModel final : public SourceTableModel<CheckpointParamRow> {
 public:
  enum Column { Side, File, Rank, Offsets, Sizes, Share, ColumnCount };
  CheckpointShardModel();
  void set_param(const CheckpointParamRow* param) { show_source(param); }

 private:
  [[nodiscard]] int row_count(const CheckpointParamRow& param) const override;
  [[nodiscard]] QVariant cell(const CheckpointParamRow& param, int row, int column, int role) const override;
};

class CheckpointsView final : public QWidget {
 public:
  explicit CheckpointsView(CheckpointLayouts data, QWidget* parent = nullptr);
  ~CheckpointsView() override;

  /// CheckpointParam: the step (when >= 0, else the shown one) and the parameter named `param`
  /// (exactly, or the name with a wrapper prefix such as "model."); false when absent.
  bool select_cause(const CauseRef& cause);
  void show_step(std::int64_t step);

  [[nodiscard]] std::int64_t shown_step() const;
  [[nodiscard]] std::string selected_param() const;  // "" when none
  [[nodiscard]] const CheckpointLayouts& data() const noexcept { return data_; }
  [[nodiscard]] const CheckpointParamModel& params_model() const noexcept { return params_; }
  [[nodiscard]] const CheckpointShardModel& shards_model() const noexcept { return shards_; }
  [[nodiscard]] const Legend* legend() const noexcept { return legend_; }

 protected:
  /// Centres the selection once the table has its size.
  void showEvent(QShowEvent* event) override;

 private:
  void select_row(int row);

  CheckpointLayouts data_;
  CheckpointParamModel params_;
  CheckpointShardModel shards_;
  int shown_ = -1;
  QComboBox* step_box_ = nullptr;
  QTableView* table_ = nullptr;
  QTableView* shard_table_ = nullptr;
  Legend* legend_ = nullptr;
};

}  // namespace gparity::gui::views
