#pragma once
// gparity-view's run views over gui/run_models.hpp: a step x parameter heatmap painted from
// RunHeatmapModel (first divergence outlined), loss and grad-norm curves of baseline and
// candidate with the ULP distance per step beneath (Qt Charts, from RunCurvesModel), and
// RunViewsWidget, which holds a loaded RunPair, a rank selector and the views in tabs (a third,
// "Buckets", gui/bucket_view.hpp, when both run directories hold bucket plans).

#include <QWidget>
#include <memory>

#include "gui/cause_ref.hpp"
#include "gui/run_models.hpp"

class QAbstractItemModel;
class QChartView;
class QCheckBox;
class QComboBox;
class QLabel;
class QScrollArea;
class QTabWidget;

namespace gparity::diff {
struct BucketPlans;
}

namespace gparity::gui {

class BucketModel;
class BucketView;

/// Paints a RunHeatmapModel: one cell per (step, parameter) of one rank or of every rank (a line
/// between ranks), red = differs, green = equal, grey = not comparable, with a legend above; each
/// rank's first divergence gets a thick black frame and the selected cell (select_cell, a click)
/// a blue one. Each cell has a tooltip (step, rank, parameter, both hashes).
class RunHeatmapView final : public QWidget {
 public:
  explicit RunHeatmapView(QWidget* parent = nullptr);
  void set_model(const RunHeatmapModel* model);
  [[nodiscard]] QSize sizeHint() const override;
  /// Selects (row, column) of the model; (-1, -1) clears.
  void select_cell(int row, int column);
  [[nodiscard]] std::pair<int, int> selected_cell() const noexcept { return selected_; }
  /// The cell's rectangle in widget coordinates.
  [[nodiscard]] QRect cell_rect(int row, int column) const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  [[nodiscard]] std::pair<int, int> cell_at(QPoint p) const;
  void fit_row_labels();
  const RunHeatmapModel* model_ = nullptr;
  int left_ = 80;  // the row labels' width
  std::pair<int, int> selected_{-1, -1};
};

/// Loss, grad norm and their ULP distance per step, rebuilt whenever the model resets.
class RunCurvesView final : public QWidget {
 public:
  explicit RunCurvesView(QWidget* parent = nullptr);
  void set_model(const RunCurvesModel* model);
  void rebuild();

 private:
  const RunCurvesModel* model_ = nullptr;
  QChartView* loss_ = nullptr;
  QChartView* grad_ = nullptr;
  QChartView* ulp_ = nullptr;
};

/// The heatmap shows every rank at once (as the verdict page's rank x step grid does; "all
/// ranks" checked, the default) or the selected rank's steps; the rank selector chooses the rank
/// of the curves, the buckets and the summary line.
class RunViewsWidget final : public QWidget {
 public:
  explicit RunViewsWidget(RunPair runs, QWidget* parent = nullptr);
  ~RunViewsWidget() override;

  void set_rank_index(int index);
  /// Every rank's steps in the heatmap (true) or the selected rank's only.
  void set_all_ranks(bool all);
  /// A RunCell cause (gui/cause_ref.hpp): selects its rank and shows its step and parameter
  /// selected in the heatmap (the step's first differing parameter when it names none), among
  /// every rank's rows when all ranks are shown. False when the runs hold no such rank or step.
  bool select_cause(const CauseRef& cause);
  [[nodiscard]] const RunHeatmapView* heatmap() const noexcept { return heatmap_; }
  void show_heatmap();
  void show_curves();
  /// False when either run holds no bucket plan (no Buckets tab then).
  bool show_buckets();
  [[nodiscard]] const RunPair& runs() const noexcept { return *runs_; }
  [[nodiscard]] const RunHeatmapModel* heatmap_model() const noexcept { return heatmap_model_.get(); }
  [[nodiscard]] const RunCurvesModel* curves_model() const noexcept { return curves_model_.get(); }
  /// nullptr when either run holds no bucket plan.
  [[nodiscard]] const BucketModel* bucket_model() const noexcept { return bucket_model_.get(); }
  [[nodiscard]] QString summary() const;

 private:
  void update_summary();
  void add_buckets_tab();

  std::unique_ptr<RunPair> runs_;
  std::unique_ptr<RunHeatmapModel> heatmap_model_;
  std::unique_ptr<RunCurvesModel> curves_model_;
  std::unique_ptr<diff::BucketPlans> base_buckets_;
  std::unique_ptr<diff::BucketPlans> cand_buckets_;
  std::unique_ptr<BucketModel> bucket_model_;
  QComboBox* rank_ = nullptr;
  QCheckBox* all_ranks_ = nullptr;
  QLabel* summary_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  RunHeatmapView* heatmap_ = nullptr;
  QScrollArea* heatmap_scroll_ = nullptr;
  RunCurvesView* curves_ = nullptr;
  BucketView* buckets_ = nullptr;
  int buckets_tab_ = -1;
};

}  // namespace gparity::gui
