#include "gui/views/replay_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <map>

#include "core/model/base/input_error.hpp"
#include "core/model/run/run_source.hpp"
#include "diff/causality/causality.hpp"
#include "diff/replay/node_compare.hpp"
#include "diff/replay/node_plan.hpp"
#include "diff/replay/replay_verdict.hpp"
#include "gui/display_text.hpp"
#include "gui/document.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/legend.hpp"
#include "gui/views/view_support.hpp"
#include "hash/xxh3.hpp"

namespace gparity::gui::views {
namespace {

const std::vector<std::pair<std::string, QString>>& replay_status_meanings() {
  static const std::vector<std::pair<std::string, QString>> m = {
      {"equal", QStringLiteral("bitwise equal on both sides")},
      {"origin",
       QStringLiteral(
           "its inputs were equal (on every member, for a collective): the divergence starts here")},
      {"propagated", QStringLiteral("an input on this rank already differed")},
      {"received",
       QStringLiteral("a collective whose inputs were equal here but not on a member of its group")},
      {"input", QStringLiteral("a graph input with no earlier divergence: the graph was fed other values")},
      {"unknown", QStringLiteral("the evidence cannot tell (no graph, collective not seen on every member)")},
      {"unmatched", QStringLiteral("records on one side only")},
  };
  return m;
}

bool is_divergence(const std::string& status) {
  return status != "equal" && status != "unmatched";
}

std::string hex_or_empty(const model::NodeRecord* r, bool xxh3) {
  if (r == nullptr) return {};
  if (xxh3) return r->has_xxh3 ? hash::to_hex(r->xxh3) : std::string();
  return hash::to_hex(r->shard);
}

/// The first output's record of each node.
std::map<std::string, const model::NodeRecord*> first_outputs(const std::vector<model::NodeRecord>& rs) {
  std::map<std::string, const model::NodeRecord*> out;
  for (const auto& r : rs) {
    auto [it, fresh] = out.emplace(r.node, &r);
    if (!fresh && r.output < it->second->output) it->second = &r;
  }
  return out;
}

struct RankInput {
  int rank = 0;
  std::vector<model::NodeRecord> a, b;
  std::optional<model::Graph> graph_a, graph_b;
  std::string path_a;  // where graph_a was read from
};

}  // namespace

const ReplayRankNodes* ReplayRecords::rank(int r) const noexcept {
  for (const auto& x : ranks)
    if (x.rank == r) return &x;
  return nullptr;
}

QColor replay_status_colour(const std::string& status) {
  if (status == "equal") return {198, 234, 198};
  if (status == "origin") return {232, 96, 96};
  if (status == "propagated") return {245, 184, 110};
  if (status == "received") return {196, 166, 232};
  if (status == "input") return {240, 226, 140};
  if (status == "unknown") return {190, 190, 190};
  return {240, 240, 240};  // unmatched
}

ReplayRecords load_replay_records(const std::string& run_dir) {
  // The verdicts first: they refuse what is not a replay run with --against / --coor.
  const auto verdicts = diff::judge_replay_run(run_dir);
  const auto run = model::open_run(run_dir);
  const auto& rep = run.manifest.extra.at("replay");
  ReplayRecords out;
  out.run_dir = run_dir;
  const bool coor = rep.value("coor", false);
  out.mode = coor ? "coor" : "against";
  out.label_a = coor ? "own" : "a";
  out.label_b = coor ? "coor" : "b";
  diff::causality::GroupTable groups;
  if (rep.contains("groups")) groups = diff::causality::group_table_from_json(rep.at("groups"));

  std::vector<RankInput> inputs;
  for (const auto& entry : run.ranks) {
    if (!entry.present) continue;
    const auto t = run.load(entry);
    RankInput in;
    in.rank = entry.rank;
    for (const auto& n : t.nodes) {
      if (n.graph == out.label_a) in.a.push_back(n);
      if (n.graph == out.label_b) in.b.push_back(n);
    }
    std::string path, problem;
    in.graph_a = diff::load_record_graph(run_dir, t, out.label_a, path, problem);
    if (in.graph_a) in.path_a = path;
    in.graph_b = diff::load_record_graph(run_dir, t, out.label_b, path, problem);
    inputs.push_back(std::move(in));
  }
  // What judge_replay classifies: each rank's causal records, across ranks by one causal order.
  std::vector<diff::NodeGraphResult> compared;
  std::vector<diff::causality::RankRecords> causal;
  for (const auto& in : inputs) {
    compared.push_back(diff::compare_node_graph(out.label_a, {in.a, in.graph_a ? &*in.graph_a : nullptr},
                                                {in.b, in.graph_b ? &*in.graph_b : nullptr}));
    causal.push_back({in.rank, compared.back().causal});
  }
  const auto classified = diff::causality::classify(causal, groups);

  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const auto& in = inputs[k];
    ReplayRankNodes rn;
    rn.rank = in.rank;
    if (!in.path_a.empty()) {
      try {
        rn.graph = load_document(in.path_a);
      } catch (const model::InputError&) {
        // The table does not need it; the canvas stays empty.
      }
    }
    for (const auto& v : verdicts) {
      if (v.rank != in.rank) continue;
      rn.verdict = v.verdict.text;
      if (v.verdict.json.contains("first_divergent"))
        rn.first_node = v.verdict.json["first_divergent"].value("node", "");
      if (out.overall.empty()) out.overall = v.verdict.overall;
      out.exit_code = std::max(out.exit_code, v.verdict.exit_code);
    }
    std::map<std::string, std::string> partner;
    if (in.graph_a && in.graph_b) {
      const auto plan = diff::plan_by_graph(*in.graph_a, *in.graph_b);
      for (std::size_t i = 0; i < plan.order_a.size(); ++i) partner[plan.order_a[i]] = plan.partner[i];
    }
    const auto outs_a = first_outputs(in.a);
    const auto outs_b = first_outputs(in.b);
    const auto& records = causal[k].records;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const auto& rec = records[i];
      ReplayNodeRow row;
      row.node = rec.node;
      const auto p = partner.find(rec.node);
      row.node_b = p != partner.end() ? p->second : (outs_b.contains(rec.node) ? rec.node : std::string());
      row.op = rec.op;
      row.source = rec.source;
      if (!rec.compared) {
        row.status = "unmatched";
      } else if (!rec.differs) {
        row.status = "equal";
      } else if (const auto* cls = classified.find(in.rank, i)) {
        row.status = std::string(diff::causality::cause_name(cls->cause));
        row.cause = cls->text(rec.node, in.rank);
      } else {
        row.status = "unknown";
      }
      const auto ia = outs_a.find(row.node);
      const auto ib = outs_b.find(row.node_b);
      const model::NodeRecord* ra = ia == outs_a.end() ? nullptr : ia->second;
      const model::NodeRecord* rb = ib == outs_b.end() ? nullptr : ib->second;
      row.xxh3_a = hex_or_empty(ra, true);
      row.xxh3_b = hex_or_empty(rb, true);
      row.shard_a = hex_or_empty(ra, false);
      row.shard_b = hex_or_empty(rb, false);
      rn.rows.push_back(std::move(row));
    }
    out.ranks.push_back(std::move(rn));
  }
  return out;
}

// ---- model -------------------------------------------------------------------------------------

namespace {
constexpr const char* kNodeColumns[] = {"#", "node", "op", "source", "status", "xxh3 a", "xxh3 b", "cause"};
static_assert(std::size(kNodeColumns) == ReplayNodeModel::ColumnCount);
}  // namespace

ReplayNodeModel::ReplayNodeModel() : SourceTableModel(kNodeColumns) {}

int ReplayNodeModel::row_count(const ReplayRankNodes& rank) const {
  return static_cast<int>(rank.rows.size());
}

QVariant ReplayNodeModel::cell(const ReplayRankNodes& rank, int row, int column, int role) const {
  const auto& r = rank.rows[static_cast<std::size_t>(row)];
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Index: return row;
      case Node:
        return r.node_b.empty() || r.node_b == r.node ? shown_text(r.node)
                                                      : shown_text(r.node + " ↔ " + r.node_b);
      case Op: return shown_text(r.op);
      case Source: return shown_text(r.source);
      case Status: return QString::fromStdString(r.status);
      case HashA: return QString::fromStdString(r.xxh3_a);
      case HashB: return QString::fromStdString(r.xxh3_b);
      case Cause: return shown_text(r.cause);
      default: return {};
    }
  }
  if (role == Qt::UserRole) return exact_text(r.node);
  if (role == Qt::BackgroundRole) {
    QColor c = replay_status_colour(r.status);
    if (column != Status && r.status == "equal") return {};
    if (column != Status) c = c.lighter(125);
    return c;
  }
  if (role == Qt::ToolTipRole) {
    return shown_lines("rank " + std::to_string(rank.rank) + ", " + r.node + " (" + r.op + ")\nxxh3 " +
                       r.xxh3_a + " vs " + r.xxh3_b + "\nshard " + r.shard_a + " vs " + r.shard_b +
                       (r.cause.empty() ? "" : "\n" + r.cause));
  }
  return {};
}

// ---- view --------------------------------------------------------------------------------------

ReplayRecordsView::ReplayRecordsView(ReplayRecords records, QWidget* parent)
    : QWidget(parent), records_(std::move(records)) {
  auto* layout = new QVBoxLayout(this);
  verdict_ = new QLabel(shown_text(records_.overall), this);
  verdict_->setWordWrap(true);
  layout->addWidget(verdict_);

  auto* bar = new QHBoxLayout();
  bar->addWidget(new QLabel(tr("Rank:"), this));
  rank_box_ = new QComboBox(this);
  for (const auto& r : records_.ranks) rank_box_->addItem(QStringLiteral("rank %1").arg(r.rank), r.rank);
  bar->addWidget(rank_box_);
  auto* prev = new QPushButton(tr("◀ Previous divergence (P)"), this);
  auto* next = new QPushButton(tr("Next divergence (N) ▶"), this);
  bar->addWidget(prev);
  bar->addWidget(next);
  bar->addStretch(1);
  layout->addLayout(bar);

  auto* rank_line = new QLabel(this);
  rank_line->setObjectName(QStringLiteral("rank_verdict"));
  rank_line->setWordWrap(true);
  layout->addWidget(rank_line);

  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* left = new QSplitter(Qt::Vertical, split);
  table_ = new QTableView(left);
  table_->setModel(&model_);
  table_->verticalHeader()->hide();  // the # column numbers the rows
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setStretchLastSection(true);
  inspector_ = new QLabel(split);
  inspector_->setObjectName(QStringLiteral("inspector"));
  inspector_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  inspector_->setWordWrap(true);
  inspector_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  inspector_->setMinimumWidth(220);
  canvas_ = new GraphCanvas(left);
  left->addWidget(table_);
  left->addWidget(canvas_);
  left->setStretchFactor(0, 1);
  left->setStretchFactor(1, 1);
  split->addWidget(left);
  split->addWidget(inspector_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  std::vector<LegendEntry> entries;
  for (const auto& [status, meaning] : replay_status_meanings())
    entries.push_back({replay_status_colour(status), QString::fromStdString(status), meaning});
  legend_ = new Legend(std::move(entries), this);
  layout->addWidget(legend_);

  connect(rank_box_, &QComboBox::currentIndexChanged, this, [this, rank_line](int i) {
    if (i < 0 || i >= static_cast<int>(records_.ranks.size())) return;
    const auto& r = records_.ranks[static_cast<std::size_t>(i)];
    model_.set_rank(&r);
    fit_columns(table_, 280);
    const model::Graph* g = r.graph && !r.graph->graphs.empty() ? r.graph->graphs.front().graph : nullptr;
    canvas_->set_graph(g ? r.graph : nullptr, g);
    if (g != nullptr) {
      std::vector<QColor> colours(g->nodes.size());
      for (const auto& row : r.rows)
        if (const auto id = g->find_node(row.node); id != model::kNoNode)
          colours[id] = replay_status_colour(row.status);
      canvas_->set_node_colors(std::move(colours));
      canvas_->set_legend(legend_->entries());  // on the canvas too: its fills are statuses
    }
    rank_line->setText(shown_text("rank " + std::to_string(r.rank) + ": " + r.verdict));
    // The first divergent node the verdict names, selected.
    int first = -1;
    for (std::size_t k = 0; k < r.rows.size() && first < 0; ++k)
      if (!r.first_node.empty() && r.rows[k].node == r.first_node) first = static_cast<int>(k);
    if (first >= 0) select_row(first);
    update_inspector();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex&, const QModelIndex&) { update_inspector(); });
  connect(canvas_, &GraphCanvas::node_selected, this, [this](quint32 id) {
    const auto* g = canvas_->graph();
    if (syncing_ || g == nullptr || model_.rank() == nullptr || id >= g->nodes.size()) return;
    const auto name = g->node_name(id);
    const auto& rows = model_.rank()->rows;
    for (std::size_t k = 0; k < rows.size(); ++k)
      if (rows[k].node == name) select_row(static_cast<int>(k));
  });
  connect(next, &QPushButton::clicked, this, [this] { next_divergence(); });
  connect(prev, &QPushButton::clicked, this, [this] { previous_divergence(); });
  auto* key_n = new QShortcut(QKeySequence(Qt::Key_N), this);
  auto* key_p = new QShortcut(QKeySequence(Qt::Key_P), this);
  key_n->setContext(Qt::WidgetWithChildrenShortcut);
  key_p->setContext(Qt::WidgetWithChildrenShortcut);
  connect(key_n, &QShortcut::activated, this, [this] { next_divergence(); });
  connect(key_p, &QShortcut::activated, this, [this] { previous_divergence(); });

  // Open on the first rank with an origin, else the first that diverges, else rank 0's.
  int start = 0;
  for (int pass = 0; pass < 2; ++pass) {
    bool found = false;
    for (std::size_t i = 0; i < records_.ranks.size() && !found; ++i)
      for (const auto& row : records_.ranks[i].rows)
        if (pass == 0 ? row.status == "origin" : is_divergence(row.status)) {
          start = static_cast<int>(i);
          found = true;
          break;
        }
    if (found) break;
  }
  rank_box_->setCurrentIndex(-1);  // the rank shown is set below, so the change fires
  if (rank_box_->count() > 0) rank_box_->setCurrentIndex(start);
}

ReplayRecordsView::~ReplayRecordsView() = default;

void ReplayRecordsView::select_row(int row) {
  if (row < 0 || row >= model_.rowCount()) return;
  const QModelIndex i = model_.index(row, ReplayNodeModel::Index);
  table_->selectionModel()->setCurrentIndex(i,
                                            QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(i, QAbstractItemView::PositionAtCenter);
  update_inspector();
  if (const auto* g = canvas_->graph(); g != nullptr && !syncing_) {
    const auto id = g->find_node(model_.rank()->rows[static_cast<std::size_t>(row)].node);
    if (id != model::kNoNode && id != canvas_->selected()) {
      syncing_ = true;
      canvas_->select_node(id);
      syncing_ = false;
    }
  }
}

void ReplayRecordsView::set_rank(int rank) {
  for (int i = 0; i < rank_box_->count(); ++i)
    if (rank_box_->itemData(i).toInt() == rank) rank_box_->setCurrentIndex(i);
}

int ReplayRecordsView::shown_rank() const {
  return model_.rank() ? model_.rank()->rank : -1;
}

std::string ReplayRecordsView::selected_node() const {
  const auto cur = table_->selectionModel()->currentIndex();
  if (!cur.isValid() || model_.rank() == nullptr) return {};
  return model_.rank()->rows[static_cast<std::size_t>(cur.row())].node;
}

QString ReplayRecordsView::inspector_text() const {
  return inspector_->text();
}

void ReplayRecordsView::update_inspector() {
  const auto cur = table_->selectionModel()->currentIndex();
  if (!cur.isValid() || model_.rank() == nullptr) {
    inspector_->setText(tr("Select a node."));
    return;
  }
  const auto& r = model_.rank()->rows[static_cast<std::size_t>(cur.row())];
  const std::string text =
      "rank " + std::to_string(model_.rank()->rank) + "\n" + records_.label_a + ": " + r.node + "\n" +
      records_.label_b + ": " + (r.node_b.empty() ? "(none)" : r.node_b) + "\nop: " + r.op +
      "\nsource: " + (r.source.empty() ? "(none)" : r.source) + "\nstatus: " + r.status +
      (r.cause.empty() ? "" : "\ncause: " + r.cause) + "\n\nxxh3 " + records_.label_a + ": " + r.xxh3_a +
      "\nxxh3 " + records_.label_b + ": " + r.xxh3_b + "\nshard " + records_.label_a + ": " + r.shard_a +
      "\nshard " + records_.label_b + ": " + r.shard_b;
  inspector_->setText(shown_lines(text));
}

bool ReplayRecordsView::step_divergence(int direction) {
  const auto* rank = model_.rank();
  if (rank == nullptr || rank->rows.empty()) return false;
  const int n = static_cast<int>(rank->rows.size());
  const auto cur = table_->selectionModel()->currentIndex();
  int row = cur.isValid() ? cur.row() : (direction > 0 ? -1 : n);
  for (row += direction; row >= 0 && row < n; row += direction) {
    if (is_divergence(rank->rows[static_cast<std::size_t>(row)].status)) {
      select_row(row);
      return true;
    }
  }
  return false;
}

bool ReplayRecordsView::next_divergence() {
  return step_divergence(1);
}

bool ReplayRecordsView::previous_divergence() {
  return step_divergence(-1);
}

bool ReplayRecordsView::select_cause(const CauseRef& cause) {
  if (cause.kind != CauseRef::Kind::ReplayNode && cause.kind != CauseRef::Kind::GraphNode) return false;
  const ReplayRankNodes* rank = cause.rank >= 0 ? records_.rank(cause.rank) : model_.rank();
  if (rank == nullptr) return false;
  int row = -1;
  for (std::size_t k = 0; k < rank->rows.size() && row < 0; ++k)
    if (rank->rows[k].node == cause.node || (!cause.node.empty() && rank->rows[k].node_b == cause.node))
      row = static_cast<int>(k);
  if (row < 0) return false;
  set_rank(rank->rank);
  select_row(row);
  return true;
}

void ReplayRecordsView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  center_current_when_shown(table_);
}

}  // namespace gparity::gui::views
