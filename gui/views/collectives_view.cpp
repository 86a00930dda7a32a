#include "gui/views/collectives_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListWidget>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <optional>

#include "diff/collectives/collectives.hpp"
#include "gui/display_text.hpp"
#include "gui/legend.hpp"
#include "gui/views/view_support.hpp"

namespace gparity::gui::views {
namespace {

const std::vector<std::pair<std::string, QString>>& collectives_status_meanings() {
  static const std::vector<std::pair<std::string, QString>> m = {
      {"same",
       QStringLiteral("the same collective as the stream's reference rank (kind, arguments, sizes, dtypes)")},
      {"mismatch",
       QStringLiteral("where this rank first departs from the reference rank (the report's finding)")},
      {"differs", QStringLiteral("differs from the reference rank after this rank's first mismatch")},
      {"rooted",
       QStringLiteral(
           "root and non-root records of one scatter/gather: differ by design, match by the rooted rule")},
      {"reordered", QStringLiteral("against the baseline: in a block the candidate permutes")},
      {"changed", QStringLiteral("against the baseline: same slot, other kind, sizes or dtypes")},
      {"added", QStringLiteral("against the baseline: only in the candidate")},
      {"removed", QStringLiteral("against the baseline: only in the baseline")},
      {"p2p", QStringLiteral("point-to-point send/recv, paired across ranks instead of by position")},
      {"deadlock",
       QStringLiteral("in a wait-for cycle of a hang: the rank blocks in it, or issued it behind the one it "
                      "blocks in (the deadlock finding names the cause and the fix)")},
      {"inverted", QStringLiteral("two ranks issue this and another group's collective in opposite orders")},
      {"moved", QStringLiteral("against the baseline: issued across another group's collective")},
      {"none", QStringLiteral("this rank issues no collective at this position")},
  };
  return m;
}

std::string join(const std::vector<std::string>& shapes, const std::vector<std::string>& dtypes) {
  std::string s;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (i) s += ", ";
    s += shapes[i];
    if (i < dtypes.size()) s += " " + dtypes[i];
  }
  return s;
}

CollectiveCell cell_of(const diff::CollectiveOp& op) {
  CollectiveCell c;
  c.status = op.p2p ? "p2p" : "same";
  c.seq = op.seq;
  c.where = op.where;
  c.text = op.kind + (op.params.empty() ? "" : "(" + op.params + ")") + " " +
           join(op.input_shapes, op.input_dtypes) + " → " + join(op.output_shapes, op.output_dtypes);
  if (op.p2p) c.text += " [" + std::to_string(op.src) + "→" + std::to_string(op.dst) + "]";
  c.detail = "kind: " + op.kind + "\nparams: " + op.params +
             "\ninputs: " + join(op.input_shapes, op.input_dtypes) +
             "\noutputs: " + join(op.output_shapes, op.output_dtypes) + "\ngroup: " + op.group +
             (op.state.empty() ? "" : "\nstate: " + op.state) +
             (op.seq > 0 ? "\nseq: " + std::to_string(op.seq) : "") + "\nwhere: " + op.where;
  return c;
}

/// The index in the full stream of the `pos`-th (1-based) collective that is not point-to-point
/// (the rank check compares streams without their p2p ops).
int collective_index(const diff::CollectiveStream& s, std::int64_t pos) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].p2p) continue;
    if (++n == pos) return static_cast<int>(i);
  }
  return -1;
}

int by_where(const diff::CollectiveStream& s, const std::string& where) {
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (!where.empty() && s.ops[i].where == where) return static_cast<int>(i);
  return -1;
}

std::int64_t int_value(const nlohmann::json& v, const char* key) {
  if (!v.contains(key) || !v[key].is_number_integer()) return -1;
  return v[key].get<std::int64_t>();
}

struct Source {
  const diff::CollectiveRun* run;
  bool baseline;
};

}  // namespace

QColor collective_status_colour(const std::string& status) {
  if (status == "same") return {214, 238, 214};
  if (status == "mismatch") return {232, 96, 96};
  if (status == "differs") return {244, 170, 170};
  if (status == "rooted") return {160, 200, 240};
  if (status == "reordered") return {245, 184, 110};
  if (status == "changed") return {200, 150, 230};
  if (status == "added") return {120, 200, 120};
  if (status == "removed") return {170, 120, 100};
  if (status == "p2p") return {240, 226, 140};
  if (status == "deadlock") return {200, 40, 40};
  if (status == "inverted") return {236, 120, 70};
  if (status == "moved") return {230, 150, 60};
  return {236, 236, 236};  // none
}

CollectiveSequences load_collective_sequences(const std::vector<std::string>& paths,
                                              const std::vector<std::string>& baseline_paths) {
  CollectiveSequences out;
  out.paths = paths;
  out.baseline_paths = baseline_paths;
  const auto run = diff::load_collectives(paths);
  std::optional<diff::CollectiveRun> base;
  if (!baseline_paths.empty()) base = diff::load_collectives(baseline_paths);
  diff::CollectingConsumer report;
  out.exit_code = diff::report_collectives(run, base ? &*base : nullptr, report);
  out.headline = report.verdict.headline;
  out.problems = run.problems;
  if (base) out.problems.insert(out.problems.end(), base->problems.begin(), base->problems.end());

  std::vector<Source> sources;
  if (base) sources.push_back({&*base, true});
  sources.push_back({&run, false});
  std::vector<std::string> names;
  for (const auto& src : sources)
    for (const auto& rc : src.run->ranks)
      for (const auto& s : rc.streams)
        if (std::find(names.begin(), names.end(), s.name) == names.end()) names.push_back(s.name);

  // The streams behind each column, to place findings.
  std::vector<std::vector<const diff::CollectiveStream*>> column_streams;
  for (const auto& name : names) {
    CollectiveStreamTable t;
    t.name = name;
    std::vector<const diff::CollectiveStream*> streams;
    for (const auto& src : sources) {
      const diff::CollectiveStream* ref = nullptr;  // the lowest rank of this side holding the stream
      for (const auto& rc : src.run->ranks) {
        const auto* s = rc.find(name);
        if (s == nullptr) continue;
        CollectiveColumn col;
        col.baseline = src.baseline;
        col.rank = rc.rank;
        for (const auto& op : s->ops) col.cells.push_back(cell_of(op));
        if (ref == nullptr) {
          ref = s;
        } else {
          // Rooted pairs and later differences, against the reference rank's collective of the
          // same Flight Recorder seq (graphs: the same position).
          for (std::size_t i = 0; i < s->ops.size(); ++i) {
            const auto& op = s->ops[i];
            if (op.p2p) continue;
            const diff::CollectiveOp* other = nullptr;
            if (op.seq > 0) {
              for (const auto& r : ref->ops)
                if (r.seq == op.seq) other = &r;
            } else if (i < ref->ops.size()) {
              other = &ref->ops[i];
            }
            if (other == nullptr || other->p2p || other->signature() == op.signature()) continue;
            col.cells[i].status = diff::rooted_records_match(*other, op) ? "rooted" : "differs";
          }
        }
        t.rows = std::max(t.rows, col.cells.size());
        t.columns.push_back(std::move(col));
        streams.push_back(s);
      }
    }
    for (auto& col : t.columns) col.cells.resize(t.rows);
    out.streams.push_back(std::move(t));
    column_streams.push_back(std::move(streams));
  }

  const auto column_of = [&](int stream, int rank, bool baseline) {
    const auto& cols = out.streams[static_cast<std::size_t>(stream)].columns;
    for (std::size_t c = 0; c < cols.size(); ++c)
      if (cols[c].rank == rank && cols[c].baseline == baseline) return static_cast<int>(c);
    return -1;
  };
  const auto mark = [&](int stream, int column, int row, const char* status) {
    if (stream < 0 || column < 0 || row < 0) return;
    auto& cells =
        out.streams[static_cast<std::size_t>(stream)].columns[static_cast<std::size_t>(column)].cells;
    if (static_cast<std::size_t>(row) < cells.size()) cells[static_cast<std::size_t>(row)].status = status;
  };
  // The collectives a finding across process groups names (diff/collectives/schedule.hpp): each
  // {stream, where} on a rank's column; the finding selects the first.
  const auto mark_op = [&](const nlohmann::json& op, int rank, bool baseline, const char* status,
                           CollectiveFindingRef& ref) {
    if (!op.is_object() || !op.contains("stream") || !op.contains("where")) return;
    const auto it = std::find(names.begin(), names.end(), op["stream"].get<std::string>());
    if (it == names.end()) return;
    const int stream = static_cast<int>(it - names.begin());
    const int column = column_of(stream, rank, baseline);
    if (column < 0) return;
    const int row =
        by_where(*column_streams[static_cast<std::size_t>(stream)][static_cast<std::size_t>(column)],
                 op["where"].get<std::string>());
    mark(stream, column, row, status);
    if (ref.row < 0 && row >= 0) ref.stream = stream, ref.column = column, ref.row = row;
  };
  const auto mark_schedule = [&](const diff::Finding& f, CollectiveFindingRef& ref) {
    const auto& v = f.values;
    const auto rank = [&](const char* key) { return static_cast<int>(int_value(v, key)); };
    if (f.kind == "collective_deadlock" && v.contains("cycle")) {
      for (const auto& e : v["cycle"]) {
        mark_op(e["waits_in"], static_cast<int>(int_value(e, "from")), false, "deadlock", ref);
        if (e.contains("to_record"))
          mark_op(e["to_record"], static_cast<int>(int_value(e, "to")), false, "deadlock", ref);
      }
    } else if (f.kind == "collective_order_inversion" && v.contains("first") && v.contains("second")) {
      for (const auto& op : v["first"]) mark_op(op, rank("first_rank"), false, "inverted", ref);
      for (const auto& op : v["second"]) mark_op(op, rank("second_rank"), false, "inverted", ref);
    } else if (f.kind == "collective_moved_across_group" && v.contains("candidate")) {
      for (const auto& op : v["candidate"]) mark_op(op, rank("rank"), false, "moved", ref);
      for (const auto& op : v["baseline"]) mark_op(op, rank("rank"), true, "moved", ref);
    }
  };
  for (const auto& f : report.findings) {
    if (f.severity == diff::Severity::Info) continue;
    CollectiveFindingRef ref;
    ref.finding = f;
    const auto it = std::find(names.begin(), names.end(), f.where.graph);
    if (it != names.end() && f.where.rank) {
      ref.stream = static_cast<int>(it - names.begin());
      const int rank = *f.where.rank;
      const int cand = column_of(ref.stream, rank, false);
      const int basec = column_of(ref.stream, rank, true);
      const auto& streams = column_streams[static_cast<std::size_t>(ref.stream)];
      const auto stream_at = [&](int col) {
        return col >= 0 ? streams[static_cast<std::size_t>(col)] : nullptr;
      };
      const auto& v = f.values;
      if (f.kind == "collective_rank_mismatch" && cand >= 0) {
        ref.column = cand;
        const auto pos = int_value(v, "position");
        ref.row =
            pos > 0 ? collective_index(*stream_at(cand), pos) : by_where(*stream_at(cand), f.where.node);
        mark(ref.stream, cand, ref.row, "mismatch");
      } else if (f.kind == "collective_reordered") {
        if (cand >= 0 && v.contains("candidate_positions"))
          for (const auto& p : v["candidate_positions"])
            mark(ref.stream, cand, p.get<int>() - 1, "reordered");
        if (basec >= 0 && v.contains("baseline_positions"))
          for (const auto& p : v["baseline_positions"])
            mark(ref.stream, basec, p.get<int>() - 1, "reordered");
        ref.column = cand;
        if (v.contains("candidate_positions") && !v["candidate_positions"].empty())
          ref.row = v["candidate_positions"][0].get<int>() - 1;
      } else if (f.kind == "collective_changed") {
        ref.column = cand;
        ref.row = static_cast<int>(int_value(v, "candidate_position") - 1);
        mark(ref.stream, cand, ref.row, "changed");
        mark(ref.stream, basec, static_cast<int>(int_value(v, "baseline_position") - 1), "changed");
      } else if (f.kind == "collective_added") {
        ref.column = cand;
        ref.row = static_cast<int>(int_value(v, "candidate_position") - 1);
        mark(ref.stream, cand, ref.row, "added");
      } else if (f.kind == "collective_removed") {
        ref.column = basec;
        ref.row = static_cast<int>(int_value(v, "baseline_position") - 1);
        mark(ref.stream, basec, ref.row, "removed");
      } else {
        ref.column = cand >= 0 ? cand : basec;
        if (ref.column >= 0) ref.row = by_where(*stream_at(ref.column), f.where.node);
      }
      if (ref.column < 0 || ref.row < 0) ref.row = -1;
    }
    mark_schedule(f, ref);
    out.findings.push_back(std::move(ref));
  }
  return out;
}

// ---- model -------------------------------------------------------------------------------------

int CollectiveStreamModel::row_count(const CollectiveStreamTable& stream) const {
  return static_cast<int>(stream.rows);
}

int CollectiveStreamModel::column_count(const CollectiveStreamTable& stream) const {
  return static_cast<int>(stream.columns.size());
}

QVariant CollectiveStreamModel::cell(const CollectiveStreamTable& stream, int row, int column,
                                     int role) const {
  const auto& col = stream.columns[static_cast<std::size_t>(column)];
  const auto& entry = col.cells[static_cast<std::size_t>(row)];
  switch (role) {
    case Qt::DisplayRole: return shown_text(entry.text);
    case Qt::ToolTipRole:
      return entry.status == "none"
                 ? QVariant()
                 : shown_lines((col.baseline ? "baseline rank " : "rank ") + std::to_string(col.rank) +
                               ", #" + std::to_string(row + 1) + " (" + entry.status + ")\n" + entry.detail);
    case Qt::BackgroundRole: return collective_status_colour(entry.status);
    case kStatusRole: return QString::fromStdString(entry.status);
    default: return {};
  }
}

QVariant CollectiveStreamModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || source() == nullptr) return {};
  if (o == Qt::Vertical) return section + 1;  // the position, 1-based as the report names it
  if (section < 0 || section >= columnCount()) return {};
  const auto& col = source()->columns[static_cast<std::size_t>(section)];
  return (col.baseline ? QStringLiteral("baseline rank %1") : QStringLiteral("rank %1")).arg(col.rank);
}

// ---- view --------------------------------------------------------------------------------------

CollectivesView::CollectivesView(CollectiveSequences data, QWidget* parent)
    : QWidget(parent), data_(std::move(data)) {
  auto* layout = new QVBoxLayout(this);
  auto* headline = new QLabel(shown_text(data_.headline), this);
  headline->setObjectName(QStringLiteral("headline"));
  headline->setWordWrap(true);
  layout->addWidget(headline);
  auto* bar = new QHBoxLayout();
  bar->addWidget(new QLabel(tr("Stream:"), this));
  stream_box_ = new QComboBox(this);
  for (const auto& s : data_.streams) stream_box_->addItem(shown_text(s.name));
  bar->addWidget(stream_box_, 1);
  layout->addLayout(bar);

  auto* vsplit = new QSplitter(Qt::Vertical, this);
  auto* hsplit = new QSplitter(Qt::Horizontal, vsplit);
  table_ = new QTableView(hsplit);
  table_->setModel(&model_);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setWordWrap(false);
  inspector_ = new QLabel(hsplit);
  inspector_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  inspector_->setWordWrap(true);
  inspector_->setMinimumWidth(240);
  inspector_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  hsplit->addWidget(table_);
  hsplit->addWidget(inspector_);
  hsplit->setStretchFactor(0, 3);
  hsplit->setStretchFactor(1, 1);
  findings_ = new QListWidget(vsplit);
  for (const auto& f : data_.findings)
    findings_->addItem(shown_text(std::string(diff::severity_name(f.finding.severity)) + " [" +
                                  f.finding.where.text() + "]: " + f.finding.message));
  if (data_.findings.empty()) findings_->addItem(tr("No findings: every rank of every stream agrees."));
  vsplit->addWidget(hsplit);
  vsplit->addWidget(findings_);
  vsplit->setStretchFactor(0, 3);
  vsplit->setStretchFactor(1, 1);
  layout->addWidget(vsplit, 1);

  std::vector<LegendEntry> entries;
  for (const auto& [status, meaning] : collectives_status_meanings())
    entries.push_back({collective_status_colour(status), QString::fromStdString(status), meaning});
  legend_ = new Legend(std::move(entries), this);
  layout->addWidget(legend_);

  connect(stream_box_, &QComboBox::currentIndexChanged, this, [this](int i) { show_stream(i); });
  connect(table_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex&, const QModelIndex&) { update_inspector(); });
  connect(findings_, &QListWidget::currentRowChanged, this, [this](int row) { select_finding(row); });

  // Open on the first finding that names a cell (the first divergence), else the first stream.
  bool selected = false;
  for (std::size_t i = 0; i < data_.findings.size() && !selected; ++i)
    selected = select_finding(static_cast<int>(i));
  if (!selected && !data_.streams.empty()) show_stream(0);
}

CollectivesView::~CollectivesView() = default;

void CollectivesView::show_stream(int index) {
  if (index < 0 || index >= static_cast<int>(data_.streams.size())) return;
  if (index == shown_) return;
  shown_ = index;
  model_.set_stream(&data_.streams[static_cast<std::size_t>(index)]);
  if (stream_box_->currentIndex() != index) stream_box_->setCurrentIndex(index);
  fit_columns(table_, 210);
  update_inspector();
}

void CollectivesView::select_cell(int column, int row) {
  const QModelIndex i = model_.index(row, column);
  if (!i.isValid()) return;
  table_->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect);
  table_->scrollTo(i, QAbstractItemView::PositionAtCenter);
  update_inspector();
}

bool CollectivesView::select_finding(int index) {
  if (index < 0 || index >= static_cast<int>(data_.findings.size())) return false;
  const auto& f = data_.findings[static_cast<std::size_t>(index)];
  if (f.stream < 0 || f.column < 0 || f.row < 0) return false;
  show_stream(f.stream);
  select_cell(f.column, f.row);
  return true;
}

CollectivesView::Selection CollectivesView::selection() const {
  Selection s;
  if (shown_ < 0) return s;
  const auto& t = data_.streams[static_cast<std::size_t>(shown_)];
  s.stream = t.name;
  const auto cur = table_->selectionModel()->currentIndex();
  if (!cur.isValid()) return s;
  const auto& col = t.columns[static_cast<std::size_t>(cur.column())];
  s.rank = col.rank;
  s.baseline = col.baseline;
  s.row = cur.row();
  return s;
}

void CollectivesView::update_inspector() {
  const auto cur = table_->selectionModel()->currentIndex();
  if (!cur.isValid()) {
    inspector_->setText(tr("Select a collective."));
    return;
  }
  inspector_->setText(model_.data(cur, Qt::ToolTipRole).toString());
}

bool CollectivesView::select_cause(const CauseRef& cause) {
  if (cause.kind != CauseRef::Kind::CollectiveEntry) return false;
  int stream = -1;
  for (std::size_t i = 0; i < data_.streams.size() && stream < 0; ++i) {
    const auto& n = data_.streams[i].name;
    if (n == cause.group || n == "pg " + cause.group || n.starts_with("pg " + cause.group + " "))
      stream = static_cast<int>(i);
  }
  if (stream < 0) return false;
  const bool baseline = cause.side == "base" || cause.side == "baseline";
  const auto& t = data_.streams[static_cast<std::size_t>(stream)];
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    const auto& col = t.columns[c];
    if (col.rank != cause.rank || col.baseline != baseline) continue;
    int row = -1;
    for (std::size_t r = 0; r < col.cells.size() && row < 0 && !cause.node.empty(); ++r)
      if (col.cells[r].where == cause.node) row = static_cast<int>(r);
    for (std::size_t r = 0; r < col.cells.size() && row < 0 && cause.node.empty(); ++r)
      if (col.cells[r].seq > 0
              ? col.cells[r].seq == cause.seq
              : col.cells[r].status != "none" && static_cast<std::int64_t>(r) + 1 == cause.seq)
        row = static_cast<int>(r);
    if (row < 0) return false;
    show_stream(stream);
    select_cell(static_cast<int>(c), row);
    return true;
  }
  return false;
}

void CollectivesView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  center_current_when_shown(table_);
}

}  // namespace gparity::gui::views
