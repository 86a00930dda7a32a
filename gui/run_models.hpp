#pragma once
// The run views' data: a baseline and a candidate run (model::open_run, any format it reads)
// loaded rank by rank, and two item models over them. RunHeatmapModel is the step x parameter
// table of one rank: a cell differs when any per-parameter hash array both runs recorded for that
// step holds different values (bitwise; the values are read, not recomputed). Columns follow the
// baseline's registration order; candidate parameters are matched by name. RunCurvesModel holds
// loss and grad norm of both runs per step with diff::ulp_distance between them. No Qt widgets
// here; load_run_pair throws model::InputError for input it cannot use.

#include <QAbstractTableModel>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model/run/trace_schema.hpp"
#include "diff/report/finding.hpp"

namespace gparity::gui {

/// One rank of both runs, aligned by step number (steps present in both, ascending).
struct RankPair {
  int rank = 0;
  std::vector<std::int64_t> steps;
  /// differs[s][p]: parameter p (baseline registration order) differs at steps[s].
  std::vector<std::vector<bool>> differs;
  /// missing[s][p]: no common hash array holds parameter p at steps[s] (not comparable).
  std::vector<std::vector<bool>> missing;
  /// hashes[s][p]: parameter p's value in the first hash array both runs hold at steps[s]
  /// (baseline, candidate), for tooltips; 0 when none holds it.
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> hashes;
  std::vector<std::optional<model::TraceScalar>> base_loss, cand_loss, base_grad, cand_grad;
  /// First (step row, parameter column) that differs, in step then registration order.
  std::optional<std::pair<int, int>> first_divergence;
  /// Peak device memory of this rank in each run ("device_memory" events), when recorded.
  std::optional<model::DeviceMemoryPeaks> base_memory, cand_memory;
};

struct RunPair {
  std::string baseline_path;
  std::string candidate_path;
  std::vector<std::string> params;  // baseline registration order
  std::vector<RankPair> ranks;      // ranks present in both runs
  std::vector<std::string> problems;
  /// diff::compare_runs' verdict on the pair, as `gparity compare` gives it: headline, exit code,
  /// and the missing evidence it names (failure events, killed or missing ranks, declared steps
  /// not recorded; rank -1: the whole run), so no view is green on missing evidence.
  std::string verdict;
  int exit_code = 0;
  std::vector<std::pair<int, std::string>> missing_evidence;
  /// Everything compare_runs reported (header, findings, checks, verdict): the verdict page.
  std::shared_ptr<const diff::CollectingConsumer> report;
};

/// Opens both runs, aligns every rank both hold and keeps the engine's verdict. Throws
/// model::InputError.
RunPair load_run_pair(const std::string& baseline, const std::string& candidate);

/// Rows: steps of one rank, or (set_all_ranks) every rank's steps one rank after the other
/// ("rank 2 · step 3"), so the whole job is in one table as on the verdict page's rank x step
/// grid; columns: parameters. DisplayRole "≠" / "" / "?", ToolTipRole names the cell,
/// BackgroundRole colours it, kDiffersRole (bool) and kFirstDivergenceRole (bool: the row's rank
/// first left parity here) for views.
class RunHeatmapModel final : public QAbstractTableModel {
 public:
  static constexpr int kDiffersRole = Qt::UserRole + 1;
  static constexpr int kFirstDivergenceRole = Qt::UserRole + 2;
  static constexpr int kMissingRole = Qt::UserRole + 3;

  explicit RunHeatmapModel(QObject* parent = nullptr);
  void set_runs(const RunPair* runs);  // not owned; nullptr clears
  void set_rank_index(int index);      // index into RunPair::ranks
  [[nodiscard]] int rank_index() const noexcept { return rank_; }
  /// Rows of every rank (true) or of the rank set_rank_index chose (false, the default).
  void set_all_ranks(bool all);
  [[nodiscard]] bool all_ranks() const noexcept { return all_; }
  /// The selected rank (set_rank_index), whichever rows are shown.
  [[nodiscard]] const RankPair* current() const noexcept;
  /// The rank (index into RunPair::ranks) and its step row a model row shows.
  [[nodiscard]] std::optional<std::pair<int, int>> rank_step(int row) const;
  /// The model row of rank `rank_index`'s step row `step_row`; -1 when not shown.
  [[nodiscard]] int row_of(int rank_index, int step_row) const;
  /// Parameters that differ at model row `row`.
  [[nodiscard]] int differing_in_row(int row) const;

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  void rebuild_rows();
  const RunPair* runs_ = nullptr;
  int rank_ = 0;
  bool all_ = false;
  std::vector<std::pair<int, int>> rows_;  // (rank index, step row) of each model row
};

/// Rows: steps. Columns: step, baseline loss, candidate loss, loss ULP, baseline grad norm,
/// candidate grad norm, grad norm ULP. Values are doubles (EditRole) or empty when absent.
class RunCurvesModel final : public QAbstractTableModel {
 public:
  enum Column : std::uint8_t { Step, BaseLoss, CandLoss, LossUlp, BaseGrad, CandGrad, GradUlp, Count };

  explicit RunCurvesModel(QObject* parent = nullptr);
  void set_runs(const RunPair* runs);
  void set_rank_index(int index);
  [[nodiscard]] const RankPair* current() const noexcept;

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  const RunPair* runs_ = nullptr;
  int rank_ = 0;
};

}  // namespace gparity::gui
