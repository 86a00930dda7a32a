#include "gui/diff_view.hpp"

#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSplitter>
#include <QStringList>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>

#include "gui/display_text.hpp"
#include "gui/graph_canvas.hpp"

namespace gparity::gui {
namespace {

std::optional<std::int32_t> local_device(const GraphEntry& e) {
  if (e.rank < 0) return std::nullopt;
  return e.rank;
}

QWidget* titled(QWidget* parent, QLabel* title, QWidget* body) {
  auto* w = new QWidget(parent);
  auto* v = new QVBoxLayout(w);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(2);
  v->addWidget(title);
  v->addWidget(body, 1);
  return w;
}

// Position of `p` inside `r` as fractions, so two layouts of different extent can follow each
// other roughly.
QPointF fraction(QPointF p, const QRectF& r) {
  if (r.width() <= 0 || r.height() <= 0) return {0.5, 0.5};
  return {(p.x() - r.left()) / r.width(), (p.y() - r.top()) / r.height()};
}

}  // namespace

QString change_kind(const diff::NodeChange& c) {
  if (c.added()) return QStringLiteral("added");
  if (c.removed()) return QStringLiteral("removed");
  if (c.moved && !c.fields.empty()) return QStringLiteral("moved, changed");
  if (c.moved) return QStringLiteral("moved");
  return QStringLiteral("changed");
}

QColor change_color(const diff::NodeChange& c) {
  if (c.added()) return {0x9c, 0xdc, 0x9c};
  if (c.removed()) return {0xf2, 0x9c, 0x9c};
  if (c.moved && !c.fields.empty()) return {0xcf, 0xa8, 0xf0};
  if (c.moved) return {0xa4, 0xc4, 0xf4};
  return {0xf7, 0xcf, 0x6a};
}

void DiffChangesModel::set_diff(const model::Graph* a, const model::Graph* b,
                                std::shared_ptr<const diff::GraphDiffResult> r) {
  beginResetModel();
  a_ = a;
  b_ = b;
  r_ = std::move(r);
  endResetModel();
}

int DiffChangesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !r_ ? 0 : static_cast<int>(r_->changes.size());
}

int DiffChangesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant DiffChangesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !r_ || index.row() >= rowCount()) return {};
  const auto& c = r_->changes[static_cast<std::size_t>(index.row())];
  if (role == kLeftNodeRole) return c.added() ? -1 : static_cast<int>(c.a);
  if (role == kRightNodeRole) return c.removed() ? -1 : static_cast<int>(c.b);
  if (role == Qt::BackgroundRole && index.column() == Change) return change_color(c);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Change: return change_kind(c);
    case Left: return c.added() ? QString() : shown_text(a_->node_name(c.a));
    case Right: return c.removed() ? QString() : shown_text(b_->node_name(c.b));
    case Target:
      return c.added() ? shown_text(b_->str(b_->node(c.b).target))
                       : shown_text(a_->str(a_->node(c.a).target));
    case Fields: {
      QStringList parts;
      for (const auto& f : c.fields)
        parts << QStringLiteral("%1: %2 → %3")
                     .arg(shown_text(f.path), shown_text(f.a_text), shown_text(f.b_text));
      return parts.join(QStringLiteral("; "));
    }
    default: return {};
  }
}

QVariant DiffChangesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Change: return QStringLiteral("change");
    case Left: return QStringLiteral("left node");
    case Right: return QStringLiteral("right node");
    case Target: return QStringLiteral("target");
    case Fields: return QStringLiteral("differing fields (left → right)");
    default: return {};
  }
}

DiffView::DiffView(QWidget* parent) : QWidget(parent), model_(std::make_unique<DiffChangesModel>()) {
  setWindowTitle(QStringLiteral("gparity-view — diff"));
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  summary_ = new QLabel(this);
  v->addWidget(summary_);
  auto* vertical = new QSplitter(Qt::Vertical, this);
  auto* sides = new QSplitter(Qt::Horizontal, vertical);
  left_title_ = new QLabel(this);
  right_title_ = new QLabel(this);
  left_ = new GraphCanvas(this);
  right_ = new GraphCanvas(this);
  sides->addWidget(titled(sides, left_title_, left_));
  sides->addWidget(titled(sides, right_title_, right_));
  table_ = new QTableView(vertical);
  table_->setModel(model_.get());
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->setDefaultSectionSize(20);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);
  vertical->addWidget(sides);
  vertical->addWidget(table_);
  vertical->setStretchFactor(0, 3);
  vertical->setStretchFactor(1, 1);
  v->addWidget(vertical, 1);

  connect(left_, &GraphCanvas::node_selected, this, [this](quint32 id) { on_selected(true, id); });
  connect(right_, &GraphCanvas::node_selected, this, [this](quint32 id) { on_selected(false, id); });
  connect(left_, &GraphCanvas::viewport_changed, this, [this] { sync_viewport(true); });
  connect(right_, &GraphCanvas::viewport_changed, this, [this] { sync_viewport(false); });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) jump_to_change(current.row());
          });
}

DiffView::~DiffView() = default;

void DiffView::set_graphs(std::shared_ptr<const Document> doc_a, std::size_t a,
                          std::shared_ptr<const Document> doc_b, std::size_t b) {
  if (!doc_a || !doc_b || a >= doc_a->graphs.size() || b >= doc_b->graphs.size()) return;
  doc_a_ = std::move(doc_a);
  doc_b_ = std::move(doc_b);
  entry_a_ = &doc_a_->graphs[a];
  entry_b_ = &doc_b_->graphs[b];
  const diff::GraphNormalization norm{};
  const diff::NormalizedGraph na(*entry_a_->graph, norm, local_device(*entry_a_));
  const diff::NormalizedGraph nb(*entry_b_->graph, norm, local_device(*entry_b_));
  result_ = std::make_shared<const diff::GraphDiffResult>(diff::diff_graphs(na, nb));
  model_->set_diff(entry_a_->graph, entry_b_->graph, result_);
  const auto title = [](const Document& d, const GraphEntry& e) {
    return QStringLiteral("%1 — %2").arg(QFileInfo(shown_text(d.path)).fileName(), shown_text(e.label));
  };
  left_title_->setText(QStringLiteral("<b>left</b> ") + title(*doc_a_, *entry_a_));
  right_title_->setText(QStringLiteral("<b>right</b> ") + title(*doc_b_, *entry_b_));
  left_title_->setToolTip(shown_text(doc_a_->path));
  right_title_->setToolTip(shown_text(doc_b_->path));
  const auto& s = result_->summary;
  summary_->setText(QStringLiteral("%1 unchanged, %2 changed, %3 moved, %4 added, %5 removed "
                                   "(matched by name %6, structure %7, sequence %8)")
                        .arg(s.unchanged)
                        .arg(s.changed)
                        .arg(s.moved)
                        .arg(s.added)
                        .arg(s.removed)
                        .arg(s.by_name)
                        .arg(s.by_structure)
                        .arg(s.by_sequence));
  left_->set_graph(doc_a_, entry_a_->graph);
  right_->set_graph(doc_b_, entry_b_->graph);
  colour_nodes();
  table_->resizeColumnsToContents();
}

void DiffView::colour_nodes() {
  std::vector<QColor> left(entry_a_->graph->nodes.size());
  std::vector<QColor> right(entry_b_->graph->nodes.size());
  for (const auto& c : result_->changes) {
    const QColor col = change_color(c);
    if (!c.added()) left[c.a] = col;
    if (!c.removed()) right[c.b] = col;
  }
  left_->set_node_colors(std::move(left));
  right_->set_node_colors(std::move(right));
  const std::vector<LegendEntry> legend{{QColor(0x9c, 0xdc, 0x9c), QStringLiteral("added")},
                                        {QColor(0xf2, 0x9c, 0x9c), QStringLiteral("removed")},
                                        {QColor(0xf7, 0xcf, 0x6a), QStringLiteral("changed")},
                                        {QColor(0xa4, 0xc4, 0xf4), QStringLiteral("moved")},
                                        {QColor(0xcf, 0xa8, 0xf0), QStringLiteral("moved, changed")}};
  left_->set_legend(legend);
  right_->set_legend(legend);
}

bool DiffView::wait_for_layout(int timeout_ms) {
  return left_->wait_for_layout(timeout_ms) && right_->wait_for_layout(timeout_ms);
}

void DiffView::on_selected(bool from_left, model::NodeId id) {
  if (syncing_ || !result_) return;
  const auto& map = from_left ? result_->alignment.a_to_b : result_->alignment.b_to_a;
  if (id >= map.size() || map[id] == model::kNoNode) return;
  syncing_ = true;
  (from_left ? right_ : left_)->select_node(map[id]);
  syncing_ = false;
}

void DiffView::sync_viewport(bool from_left) {
  if (syncing_) return;
  GraphCanvas* from = from_left ? left_ : right_;
  GraphCanvas* to = from_left ? right_ : left_;
  if (!from->current_layout() || !to->current_layout()) return;
  syncing_ = true;
  if (std::abs(to->scale() - from->scale()) > 1e-9) to->zoom_by(from->scale() / to->scale());
  const QPointF f = fraction(from->view_center(), from->layout_bounds());
  const QRectF r = to->layout_bounds();
  to->center_on_layout(QPointF(r.left() + f.x() * r.width(), r.top() + f.y() * r.height()));
  syncing_ = false;
}

void DiffView::jump_to_change(int row) {
  if (!result_ || row < 0 || row >= static_cast<int>(result_->changes.size())) return;
  const auto& c = result_->changes[static_cast<std::size_t>(row)];
  syncing_ = true;  // each side gets its own node, centred; no echo through the alignment
  if (!c.added()) left_->select_node(c.a);
  if (!c.removed()) right_->select_node(c.b);
  syncing_ = false;
}

}  // namespace gparity::gui
