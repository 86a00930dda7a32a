#include "gui/run_models.hpp"

#include <QBrush>
#include <QColor>
#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/model/base/input_error.hpp"
#include "core/model/run/run_source.hpp"
#include "core/model/run/trace_reader.hpp"
#include "diff/runs/run_compare.hpp"
#include "gui/display_text.hpp"

namespace gparity::gui {
namespace {

using NameIndex = std::unordered_map<std::string, std::size_t>;

NameIndex index_of(const model::ParamsRecord* table) {
  NameIndex out;
  if (table == nullptr) return out;
  for (std::size_t i = 0; i < table->params.size(); ++i) out.emplace(table->params[i].fqn, i);
  return out;
}

const model::HashArray* find_array(const model::StepRecord& s, const std::string& name) {
  for (const auto& h : s.hashes)
    if (h.name == name) return &h;
  return nullptr;
}

// Per parameter: 0 equal, 1 differs, 2 no common array holds it; `hashes` gets both values of
// the first common array that holds it.
std::vector<int> compare_step(const model::StepRecord& b, const NameIndex& b_index,
                              const model::StepRecord& c, const NameIndex& c_index,
                              const std::vector<std::string>& params,
                              std::vector<std::pair<std::uint64_t, std::uint64_t>>& hashes) {
  std::vector<int> state(params.size(), 2);
  hashes.assign(params.size(), {0, 0});
  for (const auto& hb : b.hashes) {
    const model::HashArray* hc = find_array(c, hb.name);
    if (hc == nullptr) continue;
    for (std::size_t p = 0; p < params.size(); ++p) {
      const auto bi = b_index.find(params[p]);
      const auto ci = c_index.find(params[p]);
      if (bi == b_index.end() || ci == c_index.end()) continue;
      if (bi->second >= hb.values.size() || ci->second >= hc->values.size()) continue;
      const bool equal = hb.values[bi->second] == hc->values[ci->second];
      if (state[p] == 2) hashes[p] = {hb.values[bi->second], hc->values[ci->second]};
      if (!equal)
        state[p] = 1;
      else if (state[p] == 2)
        state[p] = 0;
    }
  }
  return state;
}

RankPair align_rank(int rank, const model::RankTrace& b, const model::RankTrace& c,
                    const std::vector<std::string>& params) {
  RankPair out;
  out.rank = rank;
  out.base_memory = model::device_memory_peaks(b.events);
  out.cand_memory = model::device_memory_peaks(c.events);
  std::map<std::int64_t, std::size_t> cand_steps;
  for (std::size_t i = 0; i < c.steps.size(); ++i) cand_steps.emplace(c.steps[i].step, i);
  std::map<std::int64_t, std::pair<std::size_t, std::size_t>> common;
  for (std::size_t i = 0; i < b.steps.size(); ++i)
    if (const auto it = cand_steps.find(b.steps[i].step); it != cand_steps.end())
      common.emplace(b.steps[i].step, std::pair{i, it->second});
  for (const auto& [step, idx] : common) {
    const auto& bs = b.steps[idx.first];
    const auto& cs = c.steps[idx.second];
    std::vector<std::pair<std::uint64_t, std::uint64_t>> hashes;
    const auto state = compare_step(bs, index_of(b.table_of(idx.first)), cs, index_of(c.table_of(idx.second)),
                                    params, hashes);
    out.hashes.push_back(std::move(hashes));
    std::vector<bool> differs(params.size()), missing(params.size());
    for (std::size_t p = 0; p < params.size(); ++p) {
      differs[p] = state[p] == 1;
      missing[p] = state[p] == 2;
      if (differs[p] && !out.first_divergence)
        out.first_divergence = std::pair{static_cast<int>(out.steps.size()), static_cast<int>(p)};
    }
    out.steps.push_back(step);
    out.differs.push_back(std::move(differs));
    out.missing.push_back(std::move(missing));
    out.base_loss.push_back(bs.loss);
    out.cand_loss.push_back(cs.loss);
    out.base_grad.push_back(bs.grad_norm);
    out.cand_grad.push_back(cs.grad_norm);
  }
  return out;
}

void keep_issues(const model::RankTrace& t, std::vector<std::string>& problems) {
  for (const auto& issue : t.issues) problems.push_back(issue.text());
}

QVariant scalar(const std::optional<model::TraceScalar>& s) {
  return s ? QVariant(s->value) : QVariant();
}

QVariant ulp(const std::optional<model::TraceScalar>& a, const std::optional<model::TraceScalar>& b) {
  if (!a || !b || a->dtype != b->dtype) return {};
  const auto d = diff::ulp_distance(a->bits, b->bits, a->dtype);
  return d ? QVariant(static_cast<qulonglong>(*d)) : QVariant();
}

}  // namespace

RunPair load_run_pair(const std::string& baseline, const std::string& candidate) {
  const model::RunSource base = model::open_run(baseline);
  const model::RunSource cand = model::open_run(candidate);
  RunPair out;
  out.baseline_path = baseline;
  out.candidate_path = candidate;
  for (const auto& issue : base.issues) out.problems.push_back(issue.text());
  for (const auto& issue : cand.issues) out.problems.push_back(issue.text());
  for (const auto& be : base.ranks) {
    if (!be.present) continue;
    const auto ce = std::find_if(cand.ranks.begin(), cand.ranks.end(),
                                 [&](const model::RankEntry& e) { return e.rank == be.rank && e.present; });
    if (ce == cand.ranks.end()) {
      out.problems.push_back("rank " + std::to_string(be.rank) + " is missing from the candidate");
      continue;
    }
    const model::RankTrace b = base.load(be);
    const model::RankTrace c = cand.load(*ce);
    keep_issues(b, out.problems);
    keep_issues(c, out.problems);
    if (out.params.empty() && !b.params_tables.empty())
      for (const auto& p : b.params_tables.front().params) out.params.push_back(p.fqn);
    out.ranks.push_back(align_rank(be.rank, b, c, out.params));
  }
  if (out.ranks.empty()) throw model::InputError(candidate, "no rank is present in both runs");
  auto report = std::make_shared<diff::CollectingConsumer>();
  diff::CollectingConsumer& verdict = *report;
  out.exit_code = diff::compare_runs(base, cand, {}, verdict);
  out.report = report;
  out.verdict = verdict.verdict.headline;
  for (const auto& f : verdict.findings) {
    if (f.severity == diff::Severity::Incomplete)
      out.missing_evidence.emplace_back(f.where.rank.value_or(-1), f.message);
  }
  return out;
}

// ---- RunHeatmapModel ----

RunHeatmapModel::RunHeatmapModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunHeatmapModel::set_runs(const RunPair* runs) {
  beginResetModel();
  runs_ = runs;
  rank_ = 0;
  rebuild_rows();
  endResetModel();
}

void RunHeatmapModel::set_rank_index(int index) {
  if (runs_ == nullptr || index < 0 || index >= static_cast<int>(runs_->ranks.size())) return;
  if (all_) {
    rank_ = index;  // every rank's rows are shown already: nothing changes in the table
    return;
  }
  beginResetModel();
  rank_ = index;
  rebuild_rows();
  endResetModel();
}

void RunHeatmapModel::set_all_ranks(bool all) {
  if (all == all_) return;
  beginResetModel();
  all_ = all;
  rebuild_rows();
  endResetModel();
}

void RunHeatmapModel::rebuild_rows() {
  rows_.clear();
  if (runs_ == nullptr) return;
  for (std::size_t i = 0; i < runs_->ranks.size(); ++i) {
    if (!all_ && static_cast<int>(i) != rank_) continue;
    for (std::size_t s = 0; s < runs_->ranks[i].steps.size(); ++s)
      rows_.emplace_back(static_cast<int>(i), static_cast<int>(s));
  }
}

const RankPair* RunHeatmapModel::current() const noexcept {
  return runs_ != nullptr && !runs_->ranks.empty() ? &runs_->ranks[static_cast<std::size_t>(rank_)] : nullptr;
}

std::optional<std::pair<int, int>> RunHeatmapModel::rank_step(int row) const {
  if (row < 0 || row >= static_cast<int>(rows_.size())) return std::nullopt;
  return rows_[static_cast<std::size_t>(row)];
}

int RunHeatmapModel::row_of(int rank_index, int step_row) const {
  const auto it = std::find(rows_.begin(), rows_.end(), std::pair{rank_index, step_row});
  return it == rows_.end() ? -1 : static_cast<int>(it - rows_.begin());
}

int RunHeatmapModel::differing_in_row(int row) const {
  const auto at = rank_step(row);
  if (!at) return 0;
  const auto& d =
      runs_->ranks[static_cast<std::size_t>(at->first)].differs[static_cast<std::size_t>(at->second)];
  return static_cast<int>(std::count(d.begin(), d.end(), true));
}

int RunHeatmapModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RunHeatmapModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || runs_ == nullptr ? 0 : static_cast<int>(runs_->params.size());
}

QVariant RunHeatmapModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto [rank_index, step_row] = rows_[static_cast<std::size_t>(index.row())];
  const RankPair* r = &runs_->ranks[static_cast<std::size_t>(rank_index)];
  const auto s = static_cast<std::size_t>(step_row);
  const auto p = static_cast<std::size_t>(index.column());
  const bool differs = r->differs[s][p];
  const bool missing = r->missing[s][p];
  const bool first = r->first_divergence == std::pair{step_row, index.column()};
  switch (role) {
    case Qt::DisplayRole: return missing ? QStringLiteral("?") : differs ? QStringLiteral("≠") : QString();
    case Qt::ToolTipRole: {
      QString text = QStringLiteral("step %1 · rank %2 · %3: %4%5")
                         .arg(r->steps[s])
                         .arg(r->rank)
                         .arg(shown_text(runs_->params[p]),
                              missing   ? QStringLiteral("no common hash")
                              : differs ? QStringLiteral("differs")
                                        : QStringLiteral("equal"),
                              first ? QStringLiteral(" (first divergence)") : QString());
      if (!missing && s < r->hashes.size() && p < r->hashes[s].size())
        text += QStringLiteral("\nbaseline 0x%1\ncandidate 0x%2")
                    .arg(r->hashes[s][p].first, 16, 16, QLatin1Char('0'))
                    .arg(r->hashes[s][p].second, 16, 16, QLatin1Char('0'));
      return text;
    }
    case Qt::BackgroundRole:
      return QBrush(missing ? QColor(200, 200, 200) : differs ? QColor(214, 69, 65) : QColor(76, 175, 80));
    case kDiffersRole: return differs;
    case kFirstDivergenceRole: return first;
    case kMissingRole: return missing;
    default: return {};
  }
}

QVariant RunHeatmapModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || runs_ == nullptr) return {};
  if (o == Qt::Vertical) {
    const auto at = rank_step(section);
    if (!at) return {};
    const RankPair& r = runs_->ranks[static_cast<std::size_t>(at->first)];
    const QString step = QStringLiteral("step %1").arg(r.steps[static_cast<std::size_t>(at->second)]);
    return all_ ? QStringLiteral("rank %1 · %2").arg(r.rank).arg(step) : step;
  }
  return section >= 0 && section < static_cast<int>(runs_->params.size())
             ? QVariant(shown_text(runs_->params[static_cast<std::size_t>(section)]))
             : QVariant();
}

// ---- RunCurvesModel ----

RunCurvesModel::RunCurvesModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunCurvesModel::set_runs(const RunPair* runs) {
  beginResetModel();
  runs_ = runs;
  rank_ = 0;
  endResetModel();
}

void RunCurvesModel::set_rank_index(int index) {
  if (runs_ == nullptr || index < 0 || index >= static_cast<int>(runs_->ranks.size())) return;
  beginResetModel();
  rank_ = index;
  endResetModel();
}

const RankPair* RunCurvesModel::current() const noexcept {
  return runs_ != nullptr && !runs_->ranks.empty() ? &runs_->ranks[static_cast<std::size_t>(rank_)] : nullptr;
}

int RunCurvesModel::rowCount(const QModelIndex& parent) const {
  const RankPair* r = current();
  return parent.isValid() || r == nullptr ? 0 : static_cast<int>(r->steps.size());
}

int RunCurvesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || current() == nullptr ? 0 : Column::Count;
}

QVariant RunCurvesModel::data(const QModelIndex& index, int role) const {
  const RankPair* r = current();
  if (!checkIndex(index, CheckIndexOption::IndexIsValid) || r == nullptr) return {};
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const auto s = static_cast<std::size_t>(index.row());
  switch (index.column()) {
    case Step: return static_cast<qlonglong>(r->steps[s]);
    case BaseLoss: return scalar(r->base_loss[s]);
    case CandLoss: return scalar(r->cand_loss[s]);
    case LossUlp: return ulp(r->base_loss[s], r->cand_loss[s]);
    case BaseGrad: return scalar(r->base_grad[s]);
    case CandGrad: return scalar(r->cand_grad[s]);
    case GradUlp: return ulp(r->base_grad[s], r->cand_grad[s]);
    default: return {};
  }
}

QVariant RunCurvesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal)
    return QAbstractTableModel::headerData(section, o, role);
  static const char* const kNames[] = {"step",         "baseline loss",      "candidate loss",
                                       "loss ULP",     "baseline grad norm", "candidate grad norm",
                                       "grad norm ULP"};
  return section >= 0 && section < Column::Count ? QVariant(QString::fromLatin1(kNames[section]))
                                                 : QVariant();
}

}  // namespace gparity::gui
