#pragma once
// gparity-view's bucket-order view over diff/runs/buckets.hpp: BucketModel lists every member of one
// rank's bucket plan in the baseline and the candidate (bucket, payload position, byte offset on
// each side) and flags the members report_buckets finds moved; BucketView paints the baseline's
// members on the left and the candidate's on the right in payload order, joining each parameter
// across, moved members highlighted. The comparison itself is diff::report_buckets'.

#include <QAbstractItemModel>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diff/runs/buckets.hpp"

namespace gparity::gui {

/// One parameter of the shown plans; a side that lacks it has no bucket / position.
struct BucketRow {
  std::string fqn;
  std::optional<std::size_t> base_bucket, cand_bucket;  // index into the plan's buckets
  std::optional<std::size_t> base_pos, cand_pos;        // 0-based payload position
  std::int64_t base_offset = 0, cand_offset = 0;
  std::int64_t size_bytes = 0;
  bool moved = false;  // report_buckets: bucket_member_moved
};

/// Flat table, one row per parameter: baseline payload order first, then candidate-only members.
/// Empty cells where a side lacks the member. kMovedRole (bool); BackgroundRole marks moved rows.
class BucketModel final : public QAbstractItemModel {
 public:
  enum Column { Parameter, BaseBucket, BaseOffset, CandBucket, CandOffset, Size, Count };
  static constexpr int kMovedRole = Qt::UserRole + 1;

  explicit BucketModel(QObject* parent = nullptr);
  /// Both must outlive the model (or be replaced first); nullptr clears it.
  void set_plans(const diff::BucketPlans* baseline, const diff::BucketPlans* candidate);
  /// Shows the plans of `rank` (each side's first plan when it has none of that rank).
  void set_rank(int rank);

  [[nodiscard]] const std::vector<BucketRow>& rows() const noexcept { return rows_; }
  [[nodiscard]] const diff::BucketPlan* baseline_plan() const noexcept { return base_; }
  [[nodiscard]] const diff::BucketPlan* candidate_plan() const noexcept { return cand_; }
  [[nodiscard]] int moved_count() const noexcept;
  /// report_buckets' verdict headline for the shown plans.
  [[nodiscard]] const std::string& headline() const noexcept { return headline_; }

  [[nodiscard]] QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  [[nodiscard]] QModelIndex parent(const QModelIndex& child) const override;
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  void rebuild();

  const diff::BucketPlans* base_plans_ = nullptr;
  const diff::BucketPlans* cand_plans_ = nullptr;
  int rank_ = 0;
  const diff::BucketPlan* base_ = nullptr;
  const diff::BucketPlan* cand_ = nullptr;
  std::vector<BucketRow> rows_;
  std::string headline_;
};

/// Baseline boxes left, candidate boxes right, each labelled "name @ byte N" under its bucket;
/// a line joins the same parameter on both sides, thick and red (boxes orange) when moved.
class BucketView final : public QWidget {
 public:
  explicit BucketView(QWidget* parent = nullptr);
  void set_model(const BucketModel* model);
  [[nodiscard]] QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  const BucketModel* model_ = nullptr;
};

}  // namespace gparity::gui
