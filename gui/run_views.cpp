#include "gui/run_views.hpp"

#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QLineSeries>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QPen>
#include <QScrollArea>
#include <QTabWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "core/model/base/input_error.hpp"
#include "diff/runs/buckets.hpp"
#include "gui/bucket_view.hpp"
#include "gui/display_text.hpp"
#include "gui/legend.hpp"
#include "gui/verdict.hpp"

namespace gparity::gui {
namespace {

constexpr int kCellW = 26;
constexpr int kCellH = 20;
constexpr int kMinLeft = 80;
constexpr int kTop = 210;

// One chart of `columns` against the step column; empty cells leave gaps out of the series.
// `counts` charts (ULP distances) get an integer axis from 0.
QChart* make_chart(const RunCurvesModel& m, const QString& title,
                   std::initializer_list<std::pair<int, QColor>> columns, bool counts = false) {
  auto* chart = new QChart;  // owned by the QChartView it is set on
  chart->setTitle(title);
  double lo = std::numeric_limits<double>::max();
  double hi = std::numeric_limits<double>::lowest();
  double x_lo = lo;
  double x_hi = hi;
  for (const auto& [column, colour] : columns) {
    auto* series = new QLineSeries(chart);
    series->setName(m.headerData(column, Qt::Horizontal, Qt::DisplayRole).toString());
    // The first series is drawn wide and the second thin and dashed, so equal curves both show.
    const bool first = chart->series().isEmpty();
    series->setPen(QPen(colour, first ? 4.0 : 1.5, first ? Qt::SolidLine : Qt::DashLine));
    for (int row = 0; row < m.rowCount(); ++row) {
      const QVariant v = m.data(m.index(row, column), Qt::EditRole);
      if (!v.isValid()) continue;
      const double x = m.data(m.index(row, RunCurvesModel::Step), Qt::EditRole).toDouble();
      const double y = v.toDouble();
      series->append(x, y);
      lo = std::min(lo, y);
      hi = std::max(hi, y);
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
    }
    chart->addSeries(series);
  }
  auto* x_axis = new QValueAxis(chart);
  auto* y_axis = new QValueAxis(chart);
  x_axis->setTitleText(QStringLiteral("step"));
  x_axis->setLabelFormat(QStringLiteral("%d"));
  if (x_lo <= x_hi) {
    x_axis->setRange(x_lo, std::max(x_hi, x_lo + 1));
    // One tick per step while they fit, so each label names a step.
    if (x_hi - x_lo <= 20) x_axis->setTickCount(static_cast<int>(std::max(x_hi, x_lo + 1) - x_lo) + 1);
  }
  if (counts) {
    const double top = std::max(1.0, std::ceil(lo <= hi ? hi : 0.0));
    y_axis->setRange(0, top);
    y_axis->setLabelFormat(QStringLiteral("%d"));
    if (top <= 10) y_axis->setTickCount(static_cast<int>(top) + 1);
  } else if (lo <= hi) {
    const double pad = hi > lo ? (hi - lo) * 0.05 : std::max(1.0, std::abs(hi) * 0.05);
    y_axis->setRange(lo - pad, hi + pad);
  }
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);
  for (auto* s : chart->series()) {
    s->attachAxis(x_axis);
    s->attachAxis(y_axis);
  }
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

// QChartView::setChart takes the new chart and only releases the one it replaces (Qt's
// documentation: "the ownership of the previous chart is released"), so every rebuild (each rank
// switch) leaked three charts with their series and axes. The old one is deleted here.
void replace_chart(QChartView& view, QChart* chart) {
  const std::unique_ptr<QChart> previous(view.chart());
  view.setChart(chart);
}

}  // namespace

// ---- RunHeatmapView ----

RunHeatmapView::RunHeatmapView(QWidget* parent) : QWidget(parent) {}

void RunHeatmapView::set_model(const RunHeatmapModel* model) {
  model_ = model;
  if (model_ != nullptr)
    connect(model_, &QAbstractItemModel::modelReset, this, [this] {
      selected_ = {-1, -1};
      fit_row_labels();
      updateGeometry();
      update();
    });
  fit_row_labels();
  updateGeometry();
  update();
}

void RunHeatmapView::fit_row_labels() {
  // As wide as the longest row label ("rank 12 · step 1000" with every rank shown): a rank's
  // last step has its longest label, so one label a rank is measured.
  left_ = kMinLeft;
  if (model_ == nullptr) return;
  const int rows = model_->rowCount();
  for (int r = 0; r < rows; ++r) {
    const auto here = model_->rank_step(r);
    const auto next = model_->rank_step(r + 1);
    if (next && here && next->first == here->first) continue;
    left_ = std::max(left_, fontMetrics().horizontalAdvance(
                                model_->headerData(r, Qt::Vertical, Qt::DisplayRole).toString()) +
                                12);
  }
}

QSize RunHeatmapView::sizeHint() const {
  if (model_ == nullptr) return {400, 300};
  return {left_ + model_->columnCount() * kCellW + 20, kTop + model_->rowCount() * kCellH + 20};
}

QRect RunHeatmapView::cell_rect(int row, int column) const {
  return {left_ + column * kCellW, kTop + row * kCellH, kCellW - 1, kCellH - 1};
}

std::pair<int, int> RunHeatmapView::cell_at(QPoint pt) const {
  if (model_ == nullptr || pt.x() < left_ || pt.y() < kTop) return {-1, -1};
  const int c = (pt.x() - left_) / kCellW;
  const int r = (pt.y() - kTop) / kCellH;
  if (r >= model_->rowCount() || c >= model_->columnCount()) return {-1, -1};
  return {r, c};
}

void RunHeatmapView::select_cell(int row, int column) {
  selected_ = {row, column};
  update();
}

bool RunHeatmapView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip && model_ != nullptr) {
    auto* help = static_cast<QHelpEvent*>(e);
    const auto [r, c] = cell_at(help->pos());
    if (r >= 0)
      QToolTip::showText(help->globalPos(), model_->data(model_->index(r, c), Qt::ToolTipRole).toString(),
                         this, cell_rect(r, c));
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

void RunHeatmapView::mousePressEvent(QMouseEvent* e) {
  const auto [r, c] = cell_at(e->position().toPoint());
  if (r >= 0) select_cell(r, c);
}

void RunHeatmapView::paintEvent(QPaintEvent* event) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (model_ == nullptr) return;
  // The legend: what each colour and frame means, so no one needs docs/gui.md to read it.
  paint_legend(
      p, QPoint(2, 2),
      {{QColor(76, 175, 80), tr("equal"), tr("both runs hash this parameter the same"), QPen(Qt::NoPen)},
       {QColor(214, 69, 65), tr("differs"), tr("the hashes differ"), QPen(Qt::NoPen)},
       {QColor(200, 200, 200), tr("no common hash"), tr("no hash recorded by both runs"), QPen(Qt::NoPen)},
       {QColor(214, 69, 65), tr("first divergence"), tr("where the rank first left parity"),
        QPen(Qt::black, 3)},
       {palette().base().color(), tr("selected"), QString(), QPen(QColor(30, 100, 230), 3)}},
      width() - 4);
  p.setPen(palette().text().color());
  for (int c = 0; c < model_->columnCount(); ++c) {
    // Parameter names stand rotated above their column so 21+ columns stay narrow.
    p.save();
    p.translate(left_ + c * kCellW + kCellW / 2 + 4, kTop - 6);
    p.rotate(-60);
    p.drawText(0, 0, model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
    p.restore();
  }
  // Only the rows and columns the scroll area exposes: every rank's steps can be many rows.
  const QRect exposed = event->rect();
  const int r0 = std::max(0, (exposed.top() - kTop) / kCellH);
  const int r1 = std::min(model_->rowCount(), std::max(0, (exposed.bottom() - kTop) / kCellH + 1));
  const int c0 = std::max(0, (exposed.left() - left_) / kCellW);
  const int c1 = std::min(model_->columnCount(), std::max(0, (exposed.right() - left_) / kCellW + 1));
  std::vector<QRect> firsts;
  for (int r = r0; r < r1; ++r) {
    const QRect label(0, kTop + r * kCellH, left_ - 6, kCellH);
    p.setPen(palette().text().color());
    p.drawText(label, Qt::AlignRight | Qt::AlignVCenter,
               model_->headerData(r, Qt::Vertical, Qt::DisplayRole).toString());
    for (int c = c0; c < c1; ++c) {
      const QModelIndex i = model_->index(r, c);
      const QRect cell(left_ + c * kCellW, kTop + r * kCellH, kCellW - 1, kCellH - 1);
      p.fillRect(cell, model_->data(i, Qt::BackgroundRole).value<QBrush>());
      if (model_->data(i, RunHeatmapModel::kFirstDivergenceRole).toBool()) firsts.push_back(cell);
    }
    // With every rank shown, a line where the next rank's steps start.
    const auto at = model_->rank_step(r);
    if (r > 0 && at && at->second == 0) {
      p.setPen(QPen(palette().text().color(), 1));
      p.drawLine(0, (kTop + r * kCellH) - 1, left_ + model_->columnCount() * kCellW, (kTop + r * kCellH) - 1);
    }
  }
  // Each rank's first divergence (one per rank shown).
  p.setPen(QPen(Qt::black, 3));
  p.setBrush(Qt::NoBrush);
  for (const QRect& first : firsts) p.drawRect(first.adjusted(1, 1, -1, -1));
  if (selected_.first >= 0 && selected_.first < model_->rowCount() &&
      selected_.second < model_->columnCount()) {
    p.setPen(QPen(QColor(30, 100, 230), 3));
    p.setBrush(Qt::NoBrush);
    p.drawRect(cell_rect(selected_.first, selected_.second).adjusted(-1, -1, 1, 1));
  }
}

// ---- RunCurvesView ----

RunCurvesView::RunCurvesView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  loss_ = new QChartView(this);
  grad_ = new QChartView(this);
  ulp_ = new QChartView(this);
  for (auto* v : {loss_, grad_, ulp_}) v->setRenderHint(QPainter::Antialiasing);
  top->addWidget(loss_);
  top->addWidget(grad_);
  layout->addLayout(top, 3);
  layout->addWidget(ulp_, 2);
}

void RunCurvesView::set_model(const RunCurvesModel* model) {
  model_ = model;
  if (model_ != nullptr) connect(model_, &QAbstractItemModel::modelReset, this, &RunCurvesView::rebuild);
  rebuild();
}

void RunCurvesView::rebuild() {
  if (model_ == nullptr) return;
  const QColor base(33, 102, 172);
  const QColor cand(214, 96, 77);
  replace_chart(*loss_, make_chart(*model_, tr("Loss"),
                                   {{RunCurvesModel::BaseLoss, base}, {RunCurvesModel::CandLoss, cand}}));
  replace_chart(*grad_, make_chart(*model_, tr("Grad norm"),
                                   {{RunCurvesModel::BaseGrad, base}, {RunCurvesModel::CandGrad, cand}}));
  replace_chart(*ulp_, make_chart(*model_, tr("ULP distance, candidate vs baseline"),
                                  {{RunCurvesModel::LossUlp, base}, {RunCurvesModel::GradUlp, cand}}, true));
}

// ---- RunViewsWidget ----

RunViewsWidget::RunViewsWidget(RunPair runs, QWidget* parent)
    : QWidget(parent),
      runs_(std::make_unique<RunPair>(std::move(runs))),
      heatmap_model_(std::make_unique<RunHeatmapModel>()),
      curves_model_(std::make_unique<RunCurvesModel>()) {
  setWindowTitle(tr("gparity-view · runs"));
  heatmap_model_->set_runs(runs_.get());
  curves_model_->set_runs(runs_.get());

  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Rank:"), this));
  rank_ = new QComboBox(this);
  for (const auto& r : runs_->ranks) rank_->addItem(tr("rank %1").arg(r.rank));
  bar->addWidget(rank_);
  all_ranks_ = new QCheckBox(tr("All ranks in the heatmap"), this);
  all_ranks_->setToolTip(tr("Every rank's steps one under the other, as the verdict page's grid shows them"));
  bar->addWidget(all_ranks_);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  bar->addWidget(summary_, 1);
  layout->addLayout(bar);

  tabs_ = new QTabWidget(this);
  heatmap_ = new RunHeatmapView;
  heatmap_->set_model(heatmap_model_.get());
  heatmap_scroll_ = new QScrollArea;
  heatmap_scroll_->setWidget(heatmap_);
  heatmap_scroll_->setWidgetResizable(true);
  tabs_->addTab(heatmap_scroll_, tr("Hash heatmap"));
  curves_ = new RunCurvesView;
  curves_->set_model(curves_model_.get());
  tabs_->addTab(curves_, tr("Loss and grad norm"));
  add_buckets_tab();
  layout->addWidget(tabs_, 1);

  connect(rank_, &QComboBox::currentIndexChanged, this, [this](int i) { set_rank_index(i); });
  connect(all_ranks_, &QCheckBox::toggled, this, [this](bool all) { set_all_ranks(all); });
  // Every rank at once when there are several, as long as their rows fit in one widget.
  std::size_t rows = 0;
  for (const auto& r : runs_->ranks) rows += r.steps.size();
  set_all_ranks(runs_->ranks.size() > 1 && rows < static_cast<std::size_t>(QWIDGETSIZE_MAX / kCellH) - 64);
  update_summary();
}

RunViewsWidget::~RunViewsWidget() = default;

void RunViewsWidget::set_rank_index(int index) {
  heatmap_model_->set_rank_index(index);
  curves_model_->set_rank_index(index);
  if (bucket_model_ && index >= 0 && index < static_cast<int>(runs_->ranks.size()))
    bucket_model_->set_rank(runs_->ranks[static_cast<std::size_t>(index)].rank);
  if (rank_->currentIndex() != index) rank_->setCurrentIndex(index);
  update_summary();
}

void RunViewsWidget::set_all_ranks(bool all) {
  heatmap_model_->set_all_ranks(all);
  if (all_ranks_->isChecked() != all) all_ranks_->setChecked(all);
}

bool RunViewsWidget::select_cause(const CauseRef& cause) {
  if (cause.kind != CauseRef::Kind::RunCell) return false;
  for (std::size_t i = 0; i < runs_->ranks.size(); ++i) {
    const RankPair& r = runs_->ranks[i];
    if (r.rank != cause.rank) continue;
    const auto step = std::find(r.steps.begin(), r.steps.end(), cause.step);
    if (step == r.steps.end()) return false;
    const auto row = static_cast<std::size_t>(step - r.steps.begin());
    auto column = static_cast<std::size_t>(
        std::find(runs_->params.begin(), runs_->params.end(), cause.param) - runs_->params.begin());
    if (column == runs_->params.size()) {
      const auto& d = r.differs[row];
      column = static_cast<std::size_t>(std::find(d.begin(), d.end(), true) - d.begin());
      if (column == d.size()) column = 0;
    }
    set_rank_index(static_cast<int>(i));
    show_heatmap();
    const int model_row = heatmap_model_->row_of(static_cast<int>(i), static_cast<int>(row));
    heatmap_->select_cell(model_row, static_cast<int>(column));
    const QRect cell = heatmap_->cell_rect(model_row, static_cast<int>(column));
    heatmap_scroll_->ensureVisible(cell.center().x(), cell.center().y(), 120, 80);
    return true;
  }
  return false;
}

void RunViewsWidget::show_heatmap() {
  tabs_->setCurrentIndex(0);
}
void RunViewsWidget::show_curves() {
  tabs_->setCurrentIndex(1);
}

bool RunViewsWidget::show_buckets() {
  if (buckets_tab_ < 0) return false;
  tabs_->setCurrentIndex(buckets_tab_);
  return true;
}

void RunViewsWidget::add_buckets_tab() {
  // A run without bucket records is normal (the tab is simply absent); load_bucket_plans says so
  // with an InputError.
  try {
    base_buckets_ = std::make_unique<diff::BucketPlans>(diff::load_bucket_plans(runs_->baseline_path));
    cand_buckets_ = std::make_unique<diff::BucketPlans>(diff::load_bucket_plans(runs_->candidate_path));
  } catch (const model::InputError&) {
    base_buckets_.reset();
    cand_buckets_.reset();
    return;
  }
  bucket_model_ = std::make_unique<BucketModel>();
  bucket_model_->set_plans(base_buckets_.get(), cand_buckets_.get());
  if (!runs_->ranks.empty()) bucket_model_->set_rank(runs_->ranks.front().rank);
  buckets_ = new BucketView;
  buckets_->set_model(bucket_model_.get());
  auto* scroll = new QScrollArea;
  scroll->setWidget(buckets_);
  scroll->setWidgetResizable(true);
  buckets_tab_ = tabs_->addTab(scroll, tr("Buckets"));
}

QString RunViewsWidget::summary() const {
  return summary_->text();
}

void RunViewsWidget::update_summary() {
  const RankPair* r = heatmap_model_->current();
  // Paths relative to what was opened (their common parent); the full paths on hover.
  const std::vector<std::string> opened{runs_->baseline_path, runs_->candidate_path};
  QString text = tr("baseline %1 · candidate %2 · ")
                     .arg(shown_text(shown_path(runs_->baseline_path, opened)),
                          shown_text(shown_path(runs_->candidate_path, opened)));
  summary_->setToolTip(tr("baseline: %1\ncandidate: %2")
                           .arg(shown_text(runs_->baseline_path), shown_text(runs_->candidate_path)));
  if (r == nullptr) {
    summary_->setText(text + tr("no rank in common"));
    return;
  }
  // Missing evidence comes first: a view must never look green on it.
  QString missing;
  for (const auto& [rank, message] : runs_->missing_evidence) {
    if (rank == r->rank || rank < 0) missing += tr(" · missing: %1").arg(shown_text(message));
  }
  if (runs_->exit_code != 0 || !runs_->missing_evidence.empty())
    text = shown_text(runs_->verdict) + missing + QStringLiteral(" · ") + text;
  if (r->steps.empty()) {
    summary_->setText(text + tr("rank %1: no step recorded in both runs, nothing compared").arg(r->rank));
    return;
  }
  if (r->base_memory && r->cand_memory && r->base_memory->peak_reserved > 0) {
    const auto mib = [](std::int64_t b) {
      return QString::number(static_cast<double>(b) / (1 << 20), 'f', 1);
    };
    text += tr("rank %1 peak reserved memory: %2 MiB (%3) vs %4 MiB (%5), %6x · ")
                .arg(r->rank)
                .arg(mib(r->base_memory->peak_reserved), shown_text(r->base_memory->mode),
                     mib(r->cand_memory->peak_reserved), shown_text(r->cand_memory->mode))
                .arg(static_cast<double>(r->cand_memory->peak_reserved) /
                         static_cast<double>(r->base_memory->peak_reserved),
                     0, 'f', 3);
  }
  if (!r->first_divergence) {
    summary_->setText(text +
                      tr("rank %1: hashes bitwise equal at all %2 steps").arg(r->rank).arg(r->steps.size()));
    return;
  }
  const auto [row, col] = *r->first_divergence;
  summary_->setText(text + tr("rank %1: first divergence at step %2, %3 (%4 of %5 parameters differ)")
                               .arg(r->rank)
                               .arg(r->steps[static_cast<std::size_t>(row)])
                               .arg(shown_text(runs_->params[static_cast<std::size_t>(col)]))
                               .arg(std::count(r->differs[static_cast<std::size_t>(row)].begin(),
                                               r->differs[static_cast<std::size_t>(row)].end(), true))
                               .arg(runs_->params.size()));
}

}  // namespace gparity::gui
