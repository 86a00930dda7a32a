#include "gui/models.hpp"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <algorithm>
#include <utility>

#include "gui/display_text.hpp"

namespace gparity::gui {
namespace {

std::string names(const model::Graph& g, std::span<const model::NodeId> ids) {
  std::string out;
  for (auto id : ids) out += (out.empty() ? "" : ", ") + std::string(g.node_name(id));
  return out;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

Fields node_fields(const model::Graph& g, const model::UseEdges& edges, model::NodeId id) {
  const auto& n = g.node(id);
  Fields f{{"name", std::string(g.str(n.name))},
           {"op", std::string(model::node_kind_name(n.kind))},
           {"target", std::string(g.str(n.target))},
           {"result", model::meta_text(g, n.meta)}};
  for (std::size_t i = 0; i < n.args.size(); ++i)
    f.emplace_back("args[" + std::to_string(i) + "]", model::value_text(g, n.args[i]));
  for (const auto& kw : n.kwargs) f.emplace_back(std::string(g.str(kw.name)), model::value_text(g, kw.value));
  if (n.source.known()) {
    f.emplace_back("source", std::string(g.str(n.source.file)) + ":" + std::to_string(n.source.line) +
                                 " in " + std::string(g.str(n.source.function)));
    f.emplace_back("code", std::string(g.str(n.source.code)));
  }
  if (n.module_path != model::kEmptyStr) f.emplace_back("module", std::string(g.str(n.module_path)));
  if (n.comment != model::kEmptyStr) f.emplace_back("comment", std::string(g.str(n.comment)));
  f.emplace_back("line", std::to_string(n.line));
  f.emplace_back("inputs", names(g, edges.inputs(id)));
  f.emplace_back("users", names(g, edges.users(id)));
  return f;
}

}  // namespace

// --- GraphListModel ---------------------------------------------------------------------------

void GraphListModel::set_document(std::shared_ptr<const Document> doc) {
  beginResetModel();
  doc_ = std::move(doc);
  endResetModel();
}

int GraphListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !doc_ ? 0 : static_cast<int>(doc_->graphs.size());
}

QVariant GraphListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto& e = doc_->graphs[static_cast<std::size_t>(index.row())];
  if (role == Qt::DisplayRole) return shown_text(e.label);
  if (role == Qt::ToolTipRole) return shown_text(doc_->path);
  return {};
}

// --- NodeTableModel ---------------------------------------------------------------------------

void NodeTableModel::set_graph(std::shared_ptr<const Document> doc, const model::Graph* graph) {
  beginResetModel();
  doc_ = std::move(doc);
  graph_ = graph;
  endResetModel();
}

int NodeTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !graph_ ? 0 : static_cast<int>(graph_->nodes.size());
}

int NodeTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant NodeTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto id = static_cast<model::NodeId>(index.row());
  if (role == kNodeIdRole) return index.row();
  if (role != Qt::DisplayRole) return {};
  const auto& n = graph_->node(id);
  switch (index.column()) {
    case Index: return index.row();
    case Name: return shown_text(graph_->str(n.name));
    case Op: return shown_text(model::node_kind_name(n.kind));
    case Target: return shown_text(graph_->str(n.target));
    case Result: return shown_text(model::meta_text(*graph_, n.meta));
    case Source:
      if (n.module_path != model::kEmptyStr) return shown_text(graph_->str(n.module_path));
      if (!n.source.known()) return QString();
      return shown_text(graph_->str(n.source.file)).section(QLatin1Char('/'), -1) + QLatin1Char(':') +
             QString::number(n.source.line);
    default: return {};
  }
}

QVariant NodeTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, o, role);
  static const char* const kNames[] = {"#", "name", "op", "target", "result", "module / source"};
  return section >= 0 && section < ColumnCount ? QString::fromLatin1(kNames[section]) : QVariant();
}

// --- NodeInspectorModel -----------------------------------------------------------------------

void NodeInspectorModel::set_node(std::shared_ptr<const Document> doc, std::vector<const GraphEntry*> ranks,
                                  const std::string& name) {
  beginResetModel();
  doc_ = std::move(doc);
  fields_.clear();
  columns_.clear();
  cells_.clear();
  std::vector<Fields> per_rank;
  for (const auto* e : ranks) {
    const auto id = e->graph->find_node(name);
    columns_.push_back(e->rank >= 0 ? QStringLiteral("rank %1").arg(e->rank) : QStringLiteral("value"));
    per_rank.push_back(id == model::kNoNode ? Fields{{"name", "(absent on this rank)"}}
                                            : node_fields(*e->graph, model::UseEdges(*e->graph), id));
  }
  // Rows: the union of field names in first-seen order.
  std::vector<std::string> labels;
  for (const auto& f : per_rank)
    for (const auto& [label, text] : f)
      if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
  for (const auto& label : labels) {
    fields_.push_back(shown_text(label));
    std::vector<QString> row;
    for (const auto& f : per_rank) {
      auto it = std::find_if(f.begin(), f.end(), [&](const auto& p) { return p.first == label; });
      row.push_back(it == f.end() ? QStringLiteral("—") : shown_text(it->second));
    }
    cells_.push_back(std::move(row));
  }
  endResetModel();
}

void NodeInspectorModel::clear() {
  beginResetModel();
  fields_.clear();
  columns_.clear();
  cells_.clear();
  endResetModel();
}

int NodeInspectorModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(cells_.size());
}

int NodeInspectorModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

QVariant NodeInspectorModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto& row = cells_[static_cast<std::size_t>(index.row())];
  const auto& cell = row[static_cast<std::size_t>(index.column())];
  const bool differs = cell != row.front();
  switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole: return cell;
    case kDiffersRole: return differs;
    case Qt::BackgroundRole: return differs ? QBrush(QColor(255, 214, 170)) : QVariant();
    default: return {};
  }
}

QVariant NodeInspectorModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  const auto s = static_cast<std::size_t>(section);
  if (o == Qt::Horizontal) return s < columns_.size() ? columns_[s] : QVariant();
  return s < fields_.size() ? fields_[s] : QVariant();
}

int NodeInspectorModel::differing_rows() const {
  return static_cast<int>(std::count_if(cells_.begin(), cells_.end(), [](const auto& row) {
    return std::any_of(row.begin(), row.end(), [&](const QString& c) { return c != row.front(); });
  }));
}

// --- FindingsModel ----------------------------------------------------------------------------

QColor finding_color(diff::FindingClass c) {
  switch (c) {
    case diff::FindingClass::DeviceParametric: return {173, 208, 255};
    case diff::FindingClass::RankParametric: return {255, 196, 120};
    case diff::FindingClass::ProcessGroupParametric: return {200, 170, 255};
    case diff::FindingClass::Divergent: return {255, 140, 140};
  }
  return {};
}

namespace {

/// One row for a fact that splits the ranks into groups: each rank's value is its group's
/// sequence, the fit column lists the groups.
diff::RankFinding groups_row(const diff::FactGroups& fg) {
  diff::RankFinding f;
  f.cls = diff::FindingClass::Divergent;
  f.field = fg.fact + " groups";
  std::string groups;
  for (const auto& g : fg.groups) {
    std::string ranks;
    for (const auto r : g.ranks) {
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      f.values.push_back({r, g.sequence});
    }
    groups += (groups.empty() ? "" : " | ") + ranks;
  }
  std::sort(f.values.begin(), f.values.end(),
            [](const diff::RankValue& a, const diff::RankValue& b) { return a.rank < b.rank; });
  f.note = std::to_string(fg.groups.size()) + " groups of ranks: " + groups;
  return f;
}

}  // namespace

void FindingsModel::set_trace_facts(std::vector<diff::RankFinding> facts,
                                    const std::vector<diff::FactGroups>& groups) {
  beginResetModel();
  facts_.clear();
  for (const auto& g : groups) facts_.push_back(groups_row(g));
  for (auto& f : facts) facts_.push_back(std::move(f));
  endResetModel();
}

void FindingsModel::set_classification(diff::GraphClassification c) {
  beginResetModel();
  c_ = std::move(c);
  endResetModel();
}

const diff::RankFinding& FindingsModel::finding(int row) const {
  const auto r = static_cast<std::size_t>(row);
  return r < facts_.size() ? facts_[r] : c_.findings[r - facts_.size()];
}

int FindingsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(facts_.size() + c_.findings.size());
}

int FindingsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto& f = finding(index.row());
  if (role == kNodeNameRole) return exact_text(f.node);
  if (role == kCompileRole) return exact_text(f.compile);
  if (role == Qt::BackgroundRole && index.column() == Class) return QBrush(finding_color(f.cls));
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Class: return shown_text(diff::finding_class_name(f.cls));
    case Compile: return shown_text(f.compile);
    case Node: return shown_text(f.node);
    case Field: return shown_text(f.field);
    case Values: {
      QStringList parts;
      for (const auto& v : f.values) parts << QStringLiteral("%1: %2").arg(v.rank).arg(shown_text(v.text));
      return parts.join(QStringLiteral("; "));
    }
    case Function: {
      QString fit = f.function ? shown_text(f.function->text()) : QString();
      if (f.function && !f.function->inferred_mesh.empty())
        fit += QStringLiteral(" (mesh %1)").arg(shown_text(f.function->inferred_mesh));
      if (!f.note.empty()) fit += (fit.isEmpty() ? QString() : QStringLiteral(" — ")) + shown_text(f.note);
      return fit;
    }
    default: return {};
  }
}

QVariant FindingsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, o, role);
  static const char* const kNames[] = {"class", "compile", "node", "field", "per rank", "fit"};
  return section >= 0 && section < ColumnCount ? QString::fromLatin1(kNames[section]) : QVariant();
}

}  // namespace gparity::gui
