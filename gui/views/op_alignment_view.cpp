#include "gui/views/op_alignment_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <filesystem>
#include <optional>

#include "core/model/ops/op_run.hpp"
#include "diff/kernels/fused_kernels.hpp"
#include "diff/ops/op_compare.hpp"
#include "gui/display_text.hpp"
#include "gui/legend.hpp"
#include "gui/views/view_support.hpp"

namespace gparity::gui::views {
namespace {

using diff::ops::OpSlice;

const std::vector<std::pair<std::string, QString>>& op_alignment_status_meanings() {
  static const std::vector<std::pair<std::string, QString>> m = {
      {"first divergence",
       QStringLiteral("the step's first divergent eager op (its cause in the line above the table)")},
      {"divergent", QStringLiteral("an output's value is not in the compiled run")},
      {"matched", QStringLiteral("every hashed output found in the compiled run by a strong hash")},
      {"weakly matched",
       QStringLiteral(
           "found only through weak hashes (hash_tensor 0: constant or empty tensors): no evidence")},
      {"unobserved",
       QStringLiteral("not in the compiled run, but every op computed from it is (a fused intermediate)")},
      {"unhashed", QStringLiteral("no hashed output to compare")},
      {"counterpart",
       QStringLiteral("a further compiled counterpart of the eager op above (a decomposition's ops)")},
      {"compiled only", QStringLiteral("a compiled record without an eager partner")},
  };
  return m;
}

const model::ops::OpLog* first_hashed(const std::vector<diff::ops::RankLogs>& side) {
  for (const auto& r : side)
    for (const auto& l : r.logs)
      if (!l.hash_spec.empty()) return &l;
  return nullptr;
}

std::string str(std::string_view s) {
  return std::string(s);
}

void fill_eager(OpAlignRow& row, const OpSlice& s, std::uint32_t e) {
  const auto& log = *s.log;
  const auto& r = s.at(e);
  row.eager_index = r.index;
  row.eager_line = r.line;
  row.eager_op = str(log.op_name(r));
  row.module = r.module != 0 ? str(log.str(r.module)) : std::string();
  row.source = log.source_text(r);
  row.phase = str(model::ops::phase_name(r.phase));
}

void fill_compiled(OpAlignRow& row, const OpSlice& s, std::uint32_t c) {
  const auto& log = *s.log;
  const auto& r = s.at(c);
  row.compiled_index = r.index;
  row.compiled_line = r.line;
  row.compiled_op = str(log.op_name(r));
  row.compiled_source = log.source_text(r);
}

OpAlignStep align_rows(const diff::ops::StepVerdict& sv) {
  OpAlignStep out;
  out.step = sv.step;
  out.eager_log = std::filesystem::path(sv.eager.log->path).filename().string();
  out.compiled_log = std::filesystem::path(sv.compiled.log->path).filename().string();
  const auto& a = sv.alignment;
  const std::uint32_t n_c = sv.compiled.size();
  std::vector<bool> shown(n_c, false);
  std::uint32_t cursor = 0;
  const auto compiled_only_until = [&](std::uint32_t end) {
    for (; cursor < end && cursor < n_c; ++cursor) {
      if (shown[cursor] || (cursor < a.compiled_partner.size() && a.compiled_partner[cursor] >= 0)) continue;
      OpAlignRow row;
      row.status = "compiled only";
      fill_compiled(row, sv.compiled, cursor);
      shown[cursor] = true;
      out.rows.push_back(std::move(row));
    }
  };
  for (std::uint32_t e = 0; e < sv.eager.size(); ++e) {
    const auto cps = a.counterparts_of(e);
    if (!cps.empty()) compiled_only_until(*std::min_element(cps.begin(), cps.end()));
    OpAlignRow row;
    row.status = str(diff::ops::value_status_name(a.eager[e].status));
    row.paired_by = str(diff::ops::paired_by_name(a.eager[e].paired_by));
    fill_eager(row, sv.eager, e);
    if (sv.first && sv.first->record == e) {
      row.status = "first divergence";
      out.first_row = static_cast<int>(out.rows.size());
      out.first_cause = str(diff::ops::op_cause_name(sv.first->cause));
      out.first_text = row.eager_op + ": " + out.first_cause;
      if (sv.first->cause == diff::ops::OpCause::FollowsStep)
        out.first_text += " " + std::to_string(sv.first->follows_step);
    }
    if (!cps.empty()) {
      fill_compiled(row, sv.compiled, cps[0]);
      shown[cps[0]] = true;
    }
    out.rows.push_back(std::move(row));
    for (std::size_t k = 1; k < cps.size(); ++k) {
      OpAlignRow more;
      more.status = "counterpart";
      more.paired_by = str(diff::ops::paired_by_name(a.eager[e].paired_by));
      fill_compiled(more, sv.compiled, cps[k]);
      shown[cps[k]] = true;
      out.rows.push_back(std::move(more));
    }
  }
  compiled_only_until(n_c);
  return out;
}

}  // namespace

QColor op_status_colour(const std::string& status) {
  if (status == "first divergence") return {220, 60, 60};
  if (status == "divergent") return {244, 160, 160};
  if (status == "matched") return {198, 234, 198};
  if (status == "weakly matched") return {240, 226, 140};
  if (status == "unobserved") return {170, 205, 240};
  if (status == "counterpart") return {225, 225, 245};
  if (status == "compiled only") return {225, 225, 225};
  return {250, 250, 250};  // unhashed
}

OpAlignment load_op_alignment(const std::string& eager, const std::string& compiled) {
  OpAlignment out;
  out.eager_path = eager;
  out.compiled_path = compiled;
  const auto eager_run = model::ops::open_op_run(eager);
  const auto compiled_run = model::ops::open_op_run(compiled);
  const auto e = diff::ops::read_rank_logs(eager_run);
  const auto c = diff::ops::read_rank_logs(compiled_run);
  diff::CollectingConsumer report;
  diff::ops::OpCompareOptions o;
  o.eager_name = eager;
  o.compiled_name = compiled;
  // As `gparity compare` decides (diff::ops::compare_op_runs): kernel by kernel when both
  // sides' records show kernel launches.
  out.exit_code = diff::kernels::compare_runs_with_kernels(eager_run, compiled_run, e, c, o, report);
  out.headline = report.verdict.headline;
  // The deciding hashes as the comparison chooses them: the first hashed log of each side.
  const auto* e0 = first_hashed(e);
  const auto* c0 = first_hashed(c);
  std::optional<diff::ops::HashChoice> choice;
  if (e0 != nullptr && c0 != nullptr) choice = diff::ops::choose_hashes(*e0, *c0);
  out.kernels = load_op_kernels(eager_run, compiled_run, e, c, choice ? &*choice : nullptr);
  if (!choice || !choice->usable()) return out;
  out.hashes = choice->text();
  for (const auto& rv : diff::ops::judge_op_logs(e, c, *choice)) {
    OpAlignRank r;
    r.rank = rv.rank;
    const auto* first = rv.first_divergent();
    for (const auto& sv : rv.steps) {
      if (&sv == first) r.first_step = static_cast<int>(r.steps.size());
      r.steps.push_back(align_rows(sv));
    }
    out.ranks.push_back(std::move(r));
  }
  return out;
}

// ---- model -------------------------------------------------------------------------------------

namespace {
constexpr const char* kOpColumns[] = {"eager #",   "eager op",   "status",      "module",         "source",
                                      "paired by", "compiled #", "compiled op", "compiled source"};
static_assert(std::size(kOpColumns) == OpAlignmentModel::ColumnCount);
}  // namespace

OpAlignmentModel::OpAlignmentModel() : SourceTableModel(kOpColumns) {}

int OpAlignmentModel::row_count(const OpAlignStep& step) const {
  return static_cast<int>(step.rows.size());
}

QVariant OpAlignmentModel::cell(const OpAlignStep& step, int row, int column, int role) const {
  const auto& r = step.rows[static_cast<std::size_t>(row)];
  const bool has_eager = r.eager_index >= 0;
  const bool has_compiled = r.compiled_index >= 0;
  if (role == Qt::DisplayRole) {
    switch (column) {
      case EagerIndex: return has_eager ? QVariant(static_cast<qlonglong>(r.eager_index)) : QVariant();
      case EagerOp:
        return has_eager ? shown_text(r.eager_op)
                         : (r.status == "counterpart" ? QStringLiteral("  ↳") : QString());
      case Status: return QString::fromStdString(r.status);
      case Module: return shown_text(r.module);
      case Source: return shown_text(r.source);
      case PairedBy:
        return has_eager || r.status == "counterpart" ? QString::fromStdString(r.paired_by) : QString();
      case CompiledIndex:
        return has_compiled ? QVariant(static_cast<qlonglong>(r.compiled_index)) : QVariant();
      case CompiledOp: return shown_text(r.compiled_op);
      case CompiledSource: return shown_text(r.compiled_source);
      default: return {};
    }
  }
  if (role == Qt::BackgroundRole) {
    const QColor c = op_status_colour(r.status);
    if (column == Status) return c;
    if (r.status == "matched" || r.status == "unhashed") return {};
    return r.status == "first divergence" ? c.lighter(140) : c.lighter(110);
  }
  if (role == Qt::ToolTipRole) {
    std::string t;
    if (has_eager)
      t += "eager " + step.eager_log + ":" + std::to_string(r.eager_line) + " #" +
           std::to_string(r.eager_index) + " " + r.eager_op + " (" + r.phase + ")" +
           (r.module.empty() ? "" : "\nmodule " + r.module) +
           (r.source.empty() ? "" : "\nsource " + r.source);
    if (has_compiled)
      t += std::string(t.empty() ? "" : "\n") + "compiled " + step.compiled_log + ":" +
           std::to_string(r.compiled_line) + " #" + std::to_string(r.compiled_index) + " " + r.compiled_op +
           (r.compiled_source.empty() ? "" : "\nsource " + r.compiled_source);
    t += "\n" + r.status + (r.paired_by.empty() || r.paired_by == "none" ? "" : ", paired by " + r.paired_by);
    return shown_lines(t);
  }
  return {};
}

// ---- view --------------------------------------------------------------------------------------

OpAlignmentView::OpAlignmentView(OpAlignment data, QWidget* parent)
    : QWidget(parent), data_(std::move(data)) {
  auto* layout = new QVBoxLayout(this);
  auto* headline = new QLabel(shown_text(data_.headline), this);
  headline->setObjectName(QStringLiteral("headline"));
  headline->setWordWrap(true);
  layout->addWidget(headline);
  auto* bar = new QHBoxLayout();
  bar->addWidget(new QLabel(tr("Rank:"), this));
  rank_box_ = new QComboBox(this);
  for (const auto& r : data_.ranks) rank_box_->addItem(QStringLiteral("rank %1").arg(r.rank));
  bar->addWidget(rank_box_);
  bar->addWidget(new QLabel(tr("Step:"), this));
  step_box_ = new QComboBox(this);
  bar->addWidget(step_box_);
  bar->addStretch(1);
  layout->addLayout(bar);
  step_line_ = new QLabel(this);
  step_line_->setObjectName(QStringLiteral("step_line"));
  layout->addWidget(step_line_);
  table_ = new QTableView(this);
  table_->setModel(&model_);
  table_->verticalHeader()->hide();  // eager # and compiled # number the rows
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setWordWrap(false);
  layout->addWidget(table_, 1);
  std::vector<LegendEntry> entries;
  for (const auto& [status, meaning] : op_alignment_status_meanings())
    entries.push_back({op_status_colour(status), QString::fromStdString(status), meaning});
  legend_ = new Legend(std::move(entries), this);
  layout->addWidget(legend_);
  add_kernel_table(layout);

  connect(rank_box_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0 || i >= static_cast<int>(data_.ranks.size())) return;
    rank_ = i;
    fill_steps();
  });
  connect(step_box_, &QComboBox::currentIndexChanged, this, [this](int i) { show_step_index(i); });

  // Open where the verdict's headline leads (compare_op_logs): the rank whose first divergence
  // is an origin, earliest step first; else any divergent rank; else rank 0's first step.
  int start = -1;
  const auto first_of = [this](int i) -> const OpAlignStep* {
    const auto& r = data_.ranks[static_cast<std::size_t>(i)];
    return r.first_step < 0 ? nullptr : &r.steps[static_cast<std::size_t>(r.first_step)];
  };
  for (const bool origin_only : {true, false}) {
    for (int i = 0; i < static_cast<int>(data_.ranks.size()); ++i) {
      const auto* s = first_of(i);
      if (s == nullptr || (origin_only && s->first_cause != "origin")) continue;
      if (start < 0 || s->step < first_of(start)->step) start = i;
    }
    if (start >= 0) break;
  }
  start = std::max(start, 0);
  rank_box_->setCurrentIndex(-1);
  if (!data_.ranks.empty()) rank_box_->setCurrentIndex(start);
  // Two compiled runs: where the kernel verdict's headline leads (its origin first).
  if (data_.kernels.lead_rank >= 0) show_rank_step(data_.kernels.lead_rank, data_.kernels.lead_step);
}

void OpAlignmentView::add_kernel_table(QVBoxLayout* layout) {
  kernel_box_ = new QWidget(this);
  kernel_box_->setObjectName(QStringLiteral("kernels"));
  auto* box = new QVBoxLayout(kernel_box_);
  box->setContentsMargins(0, 0, 0, 0);
  const auto& k = data_.kernels;
  box->addWidget(new QLabel(
      k.compared ? tr("Kernel launches, judged launch by launch (first divergent launch selected):")
                 : tr("Kernel launches of the %1 run (not compared here: the op table compares the values):")
                       .arg(QString::fromStdString(k.side)),
      kernel_box_));
  kernel_table_ = new QTableView(kernel_box_);
  kernel_table_->setObjectName(QStringLiteral("kernel_table"));
  kernel_table_->setModel(&kernel_model_);
  kernel_table_->verticalHeader()->hide();
  kernel_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  kernel_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  kernel_table_->setWordWrap(false);
  box->addWidget(kernel_table_, 1);
  kernel_detail_ = new QLabel(kernel_box_);
  kernel_detail_->setObjectName(QStringLiteral("kernel_detail"));
  kernel_detail_->setWordWrap(true);
  kernel_detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  box->addWidget(kernel_detail_);
  box->addWidget(new Legend(kernel_legend_entries(), kernel_box_));
  layout->addWidget(kernel_box_, 1);
  kernel_box_->setVisible(!k.side.empty());
  connect(kernel_table_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex&, const QModelIndex&) { show_kernel_detail(); });
}

void OpAlignmentView::show_kernels_of_step() {
  const auto* step = data_.kernels.find(shown_rank(), shown_step());
  kernel_model_.set_step(step);
  if (step == nullptr) {
    kernel_detail_->setText(data_.kernels.side.empty() ? QString() : tr("no kernel launches in this step"));
    return;
  }
  fit_columns(kernel_table_, 300);
  if (!select_kernel_row(step->first_row)) show_kernel_detail();
}

void OpAlignmentView::show_kernel_detail() {
  const auto* row = selected_kernel();
  kernel_detail_->setText(row == nullptr ? tr("select a launch for its nodes and source lines")
                                         : shown_lines(kernel_row_detail(*row)));
}

bool OpAlignmentView::select_kernel_row(int row) {
  if (row < 0 || row >= kernel_model_.rowCount()) return false;
  const QModelIndex i = kernel_model_.index(row, OpKernelModel::Index);
  kernel_table_->selectionModel()->setCurrentIndex(
      i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  kernel_table_->scrollTo(i, QAbstractItemView::PositionAtCenter);
  return true;
}

const OpKernelRow* OpAlignmentView::selected_kernel() const {
  const auto* step = kernel_model_.source();
  const auto cur = kernel_table_->selectionModel()->currentIndex();
  if (step == nullptr || !cur.isValid()) return nullptr;
  return &step->rows[static_cast<std::size_t>(cur.row())];
}

QString OpAlignmentView::kernel_detail() const {
  return kernel_detail_->text();
}

bool OpAlignmentView::shows_kernels() const {
  return !kernel_box_->isHidden();
}

OpAlignmentView::~OpAlignmentView() = default;

void OpAlignmentView::fill_steps() {
  const auto& r = data_.ranks[static_cast<std::size_t>(rank_)];
  const QSignalBlocker block(step_box_);
  step_box_->clear();
  for (const auto& s : r.steps) step_box_->addItem(QStringLiteral("step %1").arg(s.step));
  step_ = -1;
  const int start = r.first_step >= 0 ? r.first_step : (r.steps.empty() ? -1 : 0);
  step_box_->setCurrentIndex(start);
  show_step_index(start);
}

void OpAlignmentView::show_step_index(int index) {
  if (rank_ < 0) return;
  const auto& r = data_.ranks[static_cast<std::size_t>(rank_)];
  if (index < 0 || index >= static_cast<int>(r.steps.size())) return;
  step_ = index;
  const auto& s = r.steps[static_cast<std::size_t>(index)];
  model_.set_step(&s);
  fit_columns(table_, 300);
  show_kernels_of_step();
  step_line_->setText(shown_text(
      "rank " + std::to_string(r.rank) + ", step " + std::to_string(s.step) + " (" + s.eager_log + " vs " +
      s.compiled_log +
      "): " + (s.first_row >= 0 ? "first divergent op " + s.first_text : "every eager op's value found") +
      (data_.hashes.empty() ? "" : "; decided by " + data_.hashes)));
  if (s.first_row >= 0) select_row(s.first_row);
}

void OpAlignmentView::select_row(int row) {
  if (row < 0 || row >= model_.rowCount()) return;
  const QModelIndex i = model_.index(row, OpAlignmentModel::EagerIndex);
  table_->selectionModel()->setCurrentIndex(i,
                                            QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(i, QAbstractItemView::PositionAtCenter);
}

void OpAlignmentView::show_rank_step(int rank, std::int64_t step) {
  for (std::size_t i = 0; i < data_.ranks.size(); ++i) {
    if (data_.ranks[i].rank != rank) continue;
    if (rank_ != static_cast<int>(i)) rank_box_->setCurrentIndex(static_cast<int>(i));
    const auto& steps = data_.ranks[i].steps;
    for (std::size_t k = 0; k < steps.size(); ++k)
      if (steps[k].step == step) step_box_->setCurrentIndex(static_cast<int>(k));
  }
}

int OpAlignmentView::shown_rank() const {
  return rank_ < 0 ? -1 : data_.ranks[static_cast<std::size_t>(rank_)].rank;
}

std::int64_t OpAlignmentView::shown_step() const {
  if (rank_ < 0 || step_ < 0) return -1;
  return data_.ranks[static_cast<std::size_t>(rank_)].steps[static_cast<std::size_t>(step_)].step;
}

const OpAlignRow* OpAlignmentView::selected_row() const {
  const auto cur = table_->selectionModel()->currentIndex();
  if (rank_ < 0 || step_ < 0 || !cur.isValid()) return nullptr;
  return &data_.ranks[static_cast<std::size_t>(rank_)]
              .steps[static_cast<std::size_t>(step_)]
              .rows[static_cast<std::size_t>(cur.row())];
}

bool OpAlignmentView::select_cause(const CauseRef& cause) {
  if (cause.kind != CauseRef::Kind::Op) return false;
  const OpAlignRank* rank = nullptr;
  for (const auto& r : data_.ranks)
    if (r.rank == cause.rank || (cause.rank < 0 && rank == nullptr)) rank = &r;
  if (rank == nullptr || rank->steps.empty()) return false;
  const OpAlignStep* step = nullptr;
  if (cause.step >= 0) {
    for (const auto& s : rank->steps)
      if (s.step == cause.step) step = &s;
  } else {
    step = &rank->steps[static_cast<std::size_t>(std::max(rank->first_step, 0))];
  }
  if (step == nullptr) return false;
  int row = step->first_row;
  if (cause.op_index >= 0) {
    row = -1;
    for (std::size_t k = 0; k < step->rows.size() && row < 0; ++k)
      if (step->rows[k].eager_index == cause.op_index) row = static_cast<int>(k);
  }
  if (row < 0) return false;
  show_rank_step(rank->rank, step->step);
  select_row(row);
  // A step's cause: its first divergent launch too (the step shown already keeps its selection).
  if (const auto* k = data_.kernels.find(rank->rank, step->step); k != nullptr && cause.op_index < 0)
    select_kernel_row(k->first_row);
  return true;
}

void OpAlignmentView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  center_current_when_shown(table_);
  if (shows_kernels()) center_current_when_shown(kernel_table_);
}

}  // namespace gparity::gui::views
