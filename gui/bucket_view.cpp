#include "gui/bucket_view.hpp"

#include <QBrush>
#include <QColor>
#include <QPainter>
#include <QPen>
#include <algorithm>
#include <unordered_map>

#include "diff/report/finding.hpp"
#include "gui/display_text.hpp"
#include "gui/legend.hpp"

namespace gparity::gui {
namespace {

constexpr int kMargin = 16;
constexpr int kBoxW = 330;
constexpr int kGap = 160;
constexpr int kRowH = 24;
constexpr int kTitleH = 28;
constexpr int kLegendW = 200;  // the legend, right of the candidate column

const diff::BucketPlan* plan_of(const diff::BucketPlans* plans, int rank) {
  if (plans == nullptr || plans->plans.empty()) return nullptr;
  for (const auto& p : plans->plans)
    if (p.rank == rank) return &p;
  return &plans->plans.front();
}

QString offset_text(std::int64_t offset) {
  return QStringLiteral("byte %1").arg(offset);
}

/// y of each member box on one side, buckets stacked with a header row each; the row's slot in
/// `ys` is set for the members the side holds.
int layout_side(const diff::BucketPlan& plan, const std::unordered_map<std::string, std::size_t>& row_of,
                std::vector<std::optional<int>>& ys, std::vector<std::pair<int, QString>>& headers) {
  int y = kMargin + kTitleH;
  for (const auto& b : plan.buckets) {
    headers.emplace_back(y, QStringLiteral("%1 · %2 · %3")
                                .arg(shown_text(b.name), shown_text(b.collective), shown_text(b.dtype)));
    y += kRowH;
    for (const auto& m : b.members) {
      if (const auto it = row_of.find(m.fqn); it != row_of.end()) ys[it->second] = y;
      y += kRowH;
    }
    y += kRowH / 2;
  }
  return y;
}

}  // namespace

// ---- BucketModel ----

BucketModel::BucketModel(QObject* parent) : QAbstractItemModel(parent) {}

void BucketModel::set_plans(const diff::BucketPlans* baseline, const diff::BucketPlans* candidate) {
  base_plans_ = baseline;
  cand_plans_ = candidate;
  rebuild();
}

void BucketModel::set_rank(int rank) {
  rank_ = rank;
  rebuild();
}

int BucketModel::moved_count() const noexcept {
  return static_cast<int>(
      std::count_if(rows_.begin(), rows_.end(), [](const BucketRow& r) { return r.moved; }));
}

void BucketModel::rebuild() {
  beginResetModel();
  rows_.clear();
  headline_.clear();
  base_ = plan_of(base_plans_, rank_);
  cand_ = plan_of(cand_plans_, rank_);
  if (base_ != nullptr && cand_ != nullptr) {
    std::unordered_map<std::string, std::size_t> row_of;
    const auto add = [&](const diff::BucketPlan& plan, bool baseline) {
      for (std::size_t b = 0; b < plan.buckets.size(); ++b)
        for (std::size_t i = 0; i < plan.buckets[b].members.size(); ++i) {
          const auto& m = plan.buckets[b].members[i];
          auto [it, fresh] = row_of.emplace(m.fqn, rows_.size());
          if (fresh) {
            BucketRow row;
            row.fqn = m.fqn;
            row.size_bytes = m.size_bytes;
            rows_.push_back(std::move(row));
          }
          auto& row = rows_[it->second];
          (baseline ? row.base_bucket : row.cand_bucket) = b;
          (baseline ? row.base_pos : row.cand_pos) = i;
          (baseline ? row.base_offset : row.cand_offset) = m.offset_bytes;
        }
    };
    add(*base_, true);
    add(*cand_, false);
    // One plan a side, so report_buckets compares exactly these two and nothing within a side.
    diff::BucketPlans a{base_plans_->path, {*base_}, {}};
    diff::BucketPlans b{cand_plans_->path, {*cand_}, {}};
    diff::CollectingConsumer found;
    diff::report_buckets(a, b, found);
    headline_ = found.verdict.headline;
    for (const auto& f : found.findings) {
      if (f.kind != "bucket_member_moved" || !f.values.contains("member")) continue;
      if (const auto it = row_of.find(f.values["member"].get<std::string>()); it != row_of.end())
        rows_[it->second].moved = true;
    }
  }
  endResetModel();
}

QModelIndex BucketModel::index(int row, int column, const QModelIndex& parent) const {
  if (parent.isValid() || row < 0 || column < 0 || row >= rowCount() || column >= Count) return {};
  return createIndex(row, column);
}

QModelIndex BucketModel::parent(const QModelIndex& /*child*/) const {
  return {};
}

int BucketModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BucketModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant BucketModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& r = rows_[static_cast<std::size_t>(index.row())];
  if (role == kMovedRole) return r.moved;
  if (role == Qt::BackgroundRole) return r.moved ? QVariant(QBrush(QColor(253, 174, 97))) : QVariant();
  if (role == Qt::ToolTipRole && r.moved)
    return tr("%1 moved: byte %2 in the baseline, byte %3 in the candidate")
        .arg(shown_text(r.fqn))
        .arg(r.base_offset)
        .arg(r.cand_offset);
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const bool edit = role == Qt::EditRole;
  const auto bucket = [&](const diff::BucketPlan* p, const std::optional<std::size_t>& b) -> QVariant {
    if (p == nullptr || !b) return {};
    return shown_text(p->buckets[*b].name);
  };
  const auto offset = [&](bool present, std::int64_t v) -> QVariant {
    if (!present) return {};
    return edit ? QVariant(static_cast<qlonglong>(v)) : QVariant(offset_text(v));
  };
  switch (index.column()) {
    case Parameter: return shown_text(r.fqn);
    case BaseBucket: return bucket(base_, r.base_bucket);
    case BaseOffset: return offset(r.base_pos.has_value(), r.base_offset);
    case CandBucket: return bucket(cand_, r.cand_bucket);
    case CandOffset: return offset(r.cand_pos.has_value(), r.cand_offset);
    case Size:
      return edit ? QVariant(static_cast<qlonglong>(r.size_bytes)) : QVariant(tr("%1 B").arg(r.size_bytes));
    default: return {};
  }
}

QVariant BucketModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) return section + 1;
  switch (section) {
    case Parameter: return tr("Parameter");
    case BaseBucket: return tr("Baseline bucket");
    case BaseOffset: return tr("Baseline offset");
    case CandBucket: return tr("Candidate bucket");
    case CandOffset: return tr("Candidate offset");
    case Size: return tr("Size");
    default: return {};
  }
}

// ---- BucketView ----

BucketView::BucketView(QWidget* parent) : QWidget(parent) {}

void BucketView::set_model(const BucketModel* model) {
  model_ = model;
  if (model_ != nullptr)
    connect(model_, &QAbstractItemModel::modelReset, this, [this] {
      updateGeometry();
      update();
    });
  updateGeometry();
  update();
}

QSize BucketView::sizeHint() const {
  if (model_ == nullptr) return {2 * kBoxW + kGap + 2 * kMargin, 300};
  std::size_t lines = 0;
  for (const auto* plan : {model_->baseline_plan(), model_->candidate_plan()})
    if (plan != nullptr) {
      std::size_t n = 0;
      for (const auto& b : plan->buckets) n += b.members.size() + 2;
      lines = std::max(lines, n);
    }
  return {2 * kBoxW + kGap + 2 * kMargin + kLegendW, kMargin * 2 + kTitleH + static_cast<int>(lines) * kRowH};
}

void BucketView::paintEvent(QPaintEvent* /*event*/) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (model_ == nullptr || model_->baseline_plan() == nullptr || model_->candidate_plan() == nullptr) return;
  p.setRenderHint(QPainter::Antialiasing);
  const auto& rows = model_->rows();
  std::unordered_map<std::string, std::size_t> row_of;
  for (std::size_t i = 0; i < rows.size(); ++i) row_of.emplace(rows[i].fqn, i);
  std::vector<std::optional<int>> left(rows.size()), right(rows.size());
  std::vector<std::pair<int, QString>> left_headers, right_headers;
  layout_side(*model_->baseline_plan(), row_of, left, left_headers);
  layout_side(*model_->candidate_plan(), row_of, right, right_headers);
  const int lx = kMargin;
  const int rx = kMargin + kBoxW + kGap;

  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().text().color());
  p.drawText(QRect(lx, kMargin, kBoxW, kTitleH - 6), Qt::AlignLeft | Qt::AlignVCenter,
             tr("Baseline (rank %1)").arg(model_->baseline_plan()->rank));
  p.drawText(QRect(rx, kMargin, kBoxW, kTitleH - 6), Qt::AlignLeft | Qt::AlignVCenter,
             tr("Candidate (rank %1)").arg(model_->candidate_plan()->rank));
  for (const auto& [headers, x] : {std::pair{&left_headers, lx}, std::pair{&right_headers, rx}})
    for (const auto& [y, text] : *headers)
      p.drawText(QRect(x, y, kBoxW, kRowH), Qt::AlignLeft | Qt::AlignVCenter, text);
  p.setFont(font());

  // Lines first so the boxes sit on top; unmoved members grey, moved ones thick red.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!left[i] || !right[i]) continue;
    const bool moved = rows[i].moved;
    p.setPen(moved ? QPen(QColor(202, 0, 32), 2.5) : QPen(QColor(160, 160, 160), 1));
    p.drawLine(QPointF(lx + kBoxW, *left[i] + kRowH / 2.0), QPointF(rx, *right[i] + kRowH / 2.0));
  }
  const auto box = [&](int x, int y, const BucketRow& r, std::int64_t offset) {
    const QRect rect(x, y + 1, kBoxW, kRowH - 2);
    p.setPen(QPen(r.moved ? QColor(202, 0, 32) : QColor(90, 90, 90), r.moved ? 2 : 1));
    p.setBrush(r.moved ? QColor(253, 174, 97) : QColor(222, 235, 247));
    p.drawRect(rect);
    p.setPen(Qt::black);
    p.drawText(rect.adjusted(6, 0, -6, 0), Qt::AlignLeft | Qt::AlignVCenter, shown_text(r.fqn));
    p.drawText(rect.adjusted(6, 0, -6, 0), Qt::AlignRight | Qt::AlignVCenter, offset_text(offset));
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (left[i]) box(lx, *left[i], rows[i], rows[i].base_offset);
    if (right[i]) box(rx, *right[i], rows[i], rows[i].cand_offset);
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  paint_legend(p, QPoint(rx + kBoxW + 16, kMargin),
               {{QColor(222, 235, 247), tr("same place")},
                {QColor(253, 174, 97), tr("moved"), QString(), QPen(QColor(202, 0, 32), 2)},
                {QColor(160, 160, 160), tr("same parameter, both sides")}},
               kLegendW - 24);
}

}  // namespace gparity::gui
