#include "gui/views/checkpoints_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <charconv>
#include <filesystem>
#include <map>

#include "core/model/formats/dcp_checkpoint.hpp"
#include "core/model/formats/dcp_metadata.hpp"
#include "diff/checkpoints/checkpoint_compare.hpp"
#include "gui/display_text.hpp"
#include "gui/legend.hpp"
#include "gui/views/view_support.hpp"

namespace gparity::gui::views {
namespace {

namespace fs = std::filesystem;

const std::vector<std::pair<std::string, QString>>& checkpoints_status_meanings() {
  static const std::vector<std::pair<std::string, QString>> m = {
      {"equal",
       QStringLiteral("dtype, shape, shard-invariant hash and full-tensor XXH3-64 equal: bitwise identical")},
      {"differs", QStringLiteral("the hashes (or dtype or shape) differ")},
      {"missing", QStringLiteral("only one checkpoint holds this parameter")},
  };
  return m;
}

// "__<rank>_<n>.distcp": rank, else -1.
int rank_of_file(const std::string& file) {
  if (!file.starts_with("__")) return -1;
  int r = -1;
  const auto res = std::from_chars(file.data() + 2, file.data() + file.size(), r);
  return res.ec == std::errc() && res.ptr != file.data() + file.size() && *res.ptr == '_' ? r : -1;
}

std::int64_t product(const std::vector<std::int64_t>& v) {
  std::int64_t n = 1;
  for (auto x : v) n *= x;
  return n;
}

/// Every tensor's shards of one checkpoint, by full name.
std::map<std::string, std::vector<CheckpointShard>> shards_of(const std::string& path) {
  std::map<std::string, std::vector<CheckpointShard>> out;
  if (!model::is_dcp_checkpoint(path)) return out;  // safetensors: the whole tensor in one file
  const auto meta = model::read_dcp_metadata((fs::path(path) / ".metadata").string());
  for (const auto& e : meta.entries) {
    if (!e.is_tensor) continue;
    auto& v = out[e.fqn];
    for (const auto& c : e.chunks) {
      CheckpointShard s;
      s.file = c.where ? c.where->file : std::string("(no storage entry)");
      s.rank = rank_of_file(s.file);
      s.offsets = c.offsets;
      s.sizes = c.sizes;
      s.elements = product(c.sizes);
      v.push_back(std::move(s));
    }
  }
  return out;
}

std::string type_text(const nlohmann::json& side) {
  std::string s = side.value("dtype", "") + " [";
  if (side.contains("shape"))
    for (std::size_t i = 0; i < side["shape"].size(); ++i)
      s += (i ? ", " : "") + std::to_string(side["shape"][i].get<std::int64_t>());
  return s + "]";
}

std::string dims(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

const CheckpointStep* CheckpointLayouts::step(std::int64_t s) const noexcept {
  for (const auto& x : steps)
    if (x.step == s) return &x;
  return nullptr;
}

QColor checkpoint_status_colour(const std::string& status) {
  if (status == "equal") return {198, 234, 198};
  if (status == "differs") return {232, 96, 96};
  return {200, 170, 150};  // missing
}

CheckpointLayouts load_checkpoint_layouts(const std::string& baseline, const std::string& candidate) {
  CheckpointLayouts out;
  out.baseline = baseline;
  out.candidate = candidate;
  diff::CollectingConsumer report;
  out.exit_code = diff::compare_checkpoints(baseline, candidate, {}, report);
  out.headline = report.verdict.headline;
  const auto steps_a = diff::checkpoints_by_step(baseline);
  const auto steps_b = diff::checkpoints_by_step(candidate);
  std::map<std::int64_t, std::pair<std::map<std::string, std::vector<CheckpointShard>>,
                                   std::map<std::string, std::vector<CheckpointShard>>>>
      shards;
  for (const auto& f : report.findings) {
    const bool equal = f.kind == "checkpoint_param_equal";
    const bool differs = f.kind == "checkpoint_param_mismatch";
    const bool missing = f.kind == "checkpoint_param_missing";
    if (!equal && !differs && !missing) continue;
    const std::int64_t step = f.where.step.value_or(-1);
    CheckpointStep* cs = nullptr;
    for (auto& s : out.steps)
      if (s.step == step) cs = &s;
    if (cs == nullptr) {
      CheckpointStep s;
      s.step = step;
      const auto a = steps_a.find(step), b = steps_b.find(step);
      // Single checkpoints: the maps hold step -1; a run folder against one checkpoint is not
      // compared by step, so a missing key falls back to the path as given.
      s.path_a = a != steps_a.end() ? a->second : baseline;
      s.path_b = b != steps_b.end() ? b->second : candidate;
      shards[step] = {shards_of(s.path_a), shards_of(s.path_b)};
      out.steps.push_back(std::move(s));
      cs = &out.steps.back();
    }
    CheckpointParamRow row;
    row.name = f.where.parameter;
    row.status = equal ? "equal" : differs ? "differs" : "missing";
    row.message = f.message;
    const auto side = [&](const char* key, std::string& type, std::string& xxh3, std::string& shard,
                          std::string& layout, std::vector<CheckpointShard>& shard_list,
                          const std::map<std::string, std::vector<CheckpointShard>>& by_name) {
      if (!f.values.contains(key)) return;
      const auto& v = f.values[key];
      type = type_text(v);
      xxh3 = v.value("xxh3", "");
      shard = v.value("shard_hash", "");
      layout = v.value("layout", "");
      const auto it = by_name.find(v.value("name", ""));
      if (it != by_name.end()) {
        shard_list = it->second;
      } else if (v.contains("shape")) {
        CheckpointShard whole;  // a safetensors file: one piece, the whole tensor
        whole.file = fs::path(key == std::string("baseline") ? cs->path_a : cs->path_b).filename().string();
        whole.sizes = v["shape"].get<std::vector<std::int64_t>>();
        whole.offsets.assign(whole.sizes.size(), 0);
        whole.elements = product(whole.sizes);
        shard_list.push_back(std::move(whole));
      }
    };
    side("baseline", row.type_a, row.xxh3_a, row.shard_a, row.layout_a, row.shards_a, shards[step].first);
    side("candidate", row.type_b, row.xxh3_b, row.shard_b, row.layout_b, row.shards_b, shards[step].second);
    cs->params.push_back(std::move(row));
  }
  return out;
}

// ---- models ------------------------------------------------------------------------------------

namespace {
constexpr const char* kParamColumns[] = {"parameter",
                                         "status",
                                         "type",
                                         "xxh3 baseline",
                                         "xxh3 candidate",
                                         "shard hash baseline",
                                         "shard hash candidate",
                                         "layout baseline",
                                         "layout candidate"};
static_assert(std::size(kParamColumns) == CheckpointParamModel::ColumnCount);
constexpr const char* kShardColumns[] = {"side", "file", "rank", "offsets", "sizes", "share"};
static_assert(std::size(kShardColumns) == CheckpointShardModel::ColumnCount);
}  // namespace

CheckpointParamModel::CheckpointParamModel() : SourceTableModel(kParamColumns) {}

int CheckpointParamModel::row_count(const CheckpointStep& step) const {
  return static_cast<int>(step.params.size());
}

QVariant CheckpointParamModel::cell(const CheckpointStep& step, int row, int column, int role) const {
  const auto& p = step.params[static_cast<std::size_t>(row)];
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Param: return shown_text(p.name);
      case Status: return QString::fromStdString(p.status);
      case Type: return shown_text(p.type_a.empty() ? p.type_b : p.type_a);
      case XxhA: return QString::fromStdString(p.xxh3_a);
      case XxhB: return QString::fromStdString(p.xxh3_b);
      case ShardA: return QString::fromStdString(p.shard_a);
      case ShardB: return QString::fromStdString(p.shard_b);
      case LayoutA: return shown_text(p.layout_a);
      case LayoutB: return shown_text(p.layout_b);
      default: return {};
    }
  }
  if (role == Qt::BackgroundRole && (column == Status || p.status != "equal"))
    return column == Status ? checkpoint_status_colour(p.status)
                            : checkpoint_status_colour(p.status).lighter(130);
  if (role == Qt::ToolTipRole) return shown_text(p.message);
  if (role == Qt::UserRole) return exact_text(p.name);
  return {};
}

CheckpointShardModel::CheckpointShardModel() : SourceTableModel(kShardColumns) {}

int CheckpointShardModel::row_count(const CheckpointParamRow& param) const {
  return static_cast<int>(param.shards_a.size() + param.shards_b.size());
}

QVariant CheckpointShardModel::cell(const CheckpointParamRow& param, int row, int column, int role) const {
  if (role != Qt::DisplayRole) return {};
  // Baseline shards first, then the candidate's.
  const auto r = static_cast<std::size_t>(row);
  const bool baseline = r < param.shards_a.size();
  const auto& side = baseline ? param.shards_a : param.shards_b;
  const CheckpointShard* s = &side[baseline ? r : r - param.shards_a.size()];
  std::int64_t total = 0;
  for (const auto& x : side) total += x.elements;
  switch (column) {
    case Side: return baseline ? QStringLiteral("baseline") : QStringLiteral("candidate");
    case File: return shown_text(s->file);
    case Rank: return s->rank >= 0 ? QVariant(s->rank) : QVariant(QStringLiteral("-"));
    case Offsets: return QString::fromStdString(dims(s->offsets));
    case Sizes: return QString::fromStdString(dims(s->sizes));
    case Share:
      return total > 0 ? QStringLiteral("%1 %").arg(
                             100.0 * static_cast<double>(s->elements) / static_cast<double>(total), 0, 'f', 1)
                       : QString();
    default: return {};
  }
}

// ---- view --------------------------------------------------------------------------------------

CheckpointsView::CheckpointsView(CheckpointLayouts data, QWidget* parent)
    : QWidget(parent), data_(std::move(data)) {
  auto* layout = new QVBoxLayout(this);
  auto* headline = new QLabel(shown_text(data_.headline), this);
  headline->setObjectName(QStringLiteral("headline"));
  headline->setWordWrap(true);
  layout->addWidget(headline);
  auto* bar = new QHBoxLayout();
  bar->addWidget(new QLabel(tr("Step:"), this));
  step_box_ = new QComboBox(this);
  for (const auto& s : data_.steps)
    step_box_->addItem(s.step < 0 ? tr("checkpoint") : QStringLiteral("step %1").arg(s.step));
  bar->addWidget(step_box_);
  bar->addStretch(1);
  layout->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical, this);
  table_ = new QTableView(split);
  table_->setModel(&params_);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  shard_table_ = new QTableView(split);
  shard_table_->setModel(&shards_);
  shard_table_->verticalHeader()->hide();
  shard_table_->horizontalHeader()->setStretchLastSection(true);
  split->addWidget(table_);
  split->addWidget(shard_table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);

  std::vector<LegendEntry> entries;
  for (const auto& [status, meaning] : checkpoints_status_meanings())
    entries.push_back({checkpoint_status_colour(status), QString::fromStdString(status), meaning});
  legend_ = new Legend(std::move(entries), this);
  layout->addWidget(legend_);

  connect(step_box_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0 || i >= static_cast<int>(data_.steps.size())) return;
    shown_ = i;
    const auto& s = data_.steps[static_cast<std::size_t>(i)];
    params_.set_step(&s);
    shards_.set_param(nullptr);
    fit_columns(table_);
    // The first parameter that is not equal, else the first.
    int first = s.params.empty() ? -1 : 0;
    for (std::size_t k = 0; k < s.params.size(); ++k)
      if (s.params[k].status != "equal") {
        first = static_cast<int>(k);
        break;
      }
    select_row(first);
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur, const QModelIndex&) {
            if (shown_ < 0 || !cur.isValid()) return;
            shards_.set_param(
                &data_.steps[static_cast<std::size_t>(shown_)].params[static_cast<std::size_t>(cur.row())]);
            fit_columns(shard_table_);
          });
  // Open on the first step with a difference, else the last step (the trained weights).
  int start = data_.steps.empty() ? -1 : static_cast<int>(data_.steps.size()) - 1;
  for (std::size_t i = 0; i < data_.steps.size(); ++i) {
    bool differs = false;
    for (const auto& p : data_.steps[i].params) differs = differs || p.status != "equal";
    if (differs) {
      start = static_cast<int>(i);
      break;
    }
  }
  step_box_->setCurrentIndex(-1);
  if (start >= 0) step_box_->setCurrentIndex(start);
}

CheckpointsView::~CheckpointsView() = default;

void CheckpointsView::select_row(int row) {
  if (row < 0 || row >= params_.rowCount()) return;
  const QModelIndex i = params_.index(row, CheckpointParamModel::Param);
  table_->selectionModel()->setCurrentIndex(i,
                                            QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(i);
}

void CheckpointsView::show_step(std::int64_t step) {
  for (std::size_t i = 0; i < data_.steps.size(); ++i)
    if (data_.steps[i].step == step) step_box_->setCurrentIndex(static_cast<int>(i));
}

std::int64_t CheckpointsView::shown_step() const {
  return shown_ < 0 ? -1 : data_.steps[static_cast<std::size_t>(shown_)].step;
}

std::string CheckpointsView::selected_param() const {
  const auto cur = table_->selectionModel()->currentIndex();
  if (shown_ < 0 || !cur.isValid()) return {};
  return data_.steps[static_cast<std::size_t>(shown_)].params[static_cast<std::size_t>(cur.row())].name;
}

bool CheckpointsView::select_cause(const CauseRef& cause) {
  if (cause.kind != CauseRef::Kind::CheckpointParam || cause.param.empty()) return false;
  const CheckpointStep* s = cause.step >= 0
                                ? data_.step(cause.step)
                                : (shown_ >= 0 ? &data_.steps[static_cast<std::size_t>(shown_)] : nullptr);
  if (s == nullptr) return false;
  int row = -1;
  for (std::size_t k = 0; k < s->params.size() && row < 0; ++k) {
    const auto& n = s->params[k].name;
    // A wrapper prefix ("model.") on one side of the reference only.
    if (n == cause.param || (n.ends_with("." + cause.param)) || cause.param.ends_with("." + n))
      row = static_cast<int>(k);
  }
  if (row < 0) return false;
  show_step(s->step);
  select_row(row);
  return true;
}

void CheckpointsView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  center_current_when_shown(table_);
}

}  // namespace gparity::gui::views
