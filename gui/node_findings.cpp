#include "gui/node_findings.hpp"

#include <QBrush>
#include <QColor>
#include <algorithm>

#include "diff/replay/node_runs.hpp"
#include "gui/display_text.hpp"
#include "gui/models.hpp"

namespace gparity::gui {

std::vector<diff::Finding> compute_node_findings(const std::string& baseline, const std::string& candidate) {
  return diff::node_divergences_of_runs(baseline, candidate);
}

std::optional<std::size_t> find_graph(const Document& doc, const diff::Finding& f) {
  if (doc.graphs.size() == 1) return 0;
  const auto& label = f.where.graph;
  const auto space = label.rfind(' ');
  const std::string kind = space == std::string::npos ? label : label.substr(0, space);
  const std::string compile = space == std::string::npos ? std::string() : label.substr(space + 1);
  const bool ranked =
      std::any_of(doc.graphs.begin(), doc.graphs.end(), [](const GraphEntry& e) { return e.rank >= 0; });
  for (std::size_t i = 0; i < doc.graphs.size(); ++i) {
    const auto& e = doc.graphs[i];
    if (e.kind != kind || (!compile.empty() && e.compile != compile)) continue;
    if (ranked && f.where.rank && e.rank != *f.where.rank) continue;
    return i;
  }
  return std::nullopt;
}

namespace {

QString value_text(const nlohmann::json& v, const char* key) {
  const auto it = v.find(key);
  return it != v.end() && it->is_string() ? shown_text(it->get<std::string>()) : QString();
}

bool is_origin(const diff::Finding& f) {
  return value_text(f.values, "cause") == QStringLiteral("origin");
}

/// The origin a finding carries, when it is elsewhere: {rank, graph, node}.
const nlohmann::json* remote_origin(const diff::Finding& f) {
  const auto it = f.values.find("origin");
  if (it == f.values.end() || !it->is_object() || !f.where.rank) return nullptr;
  if (it->value("rank", -1) < 0) return nullptr;
  if (it->value("rank", -1) == *f.where.rank && it->value("node", "") == f.where.node) return nullptr;
  return &*it;
}

}  // namespace

void NodeFindingsModel::set_findings(std::vector<diff::Finding> findings) {
  beginResetModel();
  findings_ = std::move(findings);
  std::stable_partition(findings_.begin(), findings_.end(), is_origin);
  endResetModel();
}

std::optional<int> NodeFindingsModel::origin_row(int row) const {
  if (row < 0 || row >= rowCount()) return std::nullopt;
  const auto* o = remote_origin(findings_[static_cast<std::size_t>(row)]);
  if (o == nullptr) return std::nullopt;
  for (std::size_t i = 0; i < findings_.size(); ++i) {
    const auto& f = findings_[i];
    if (f.where.rank && *f.where.rank == o->value("rank", -1) && f.where.node == o->value("node", "") &&
        f.where.graph == o->value("graph", ""))
      return static_cast<int>(i);
  }
  return std::nullopt;
}

int NodeFindingsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(findings_.size());
}

int NodeFindingsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant NodeFindingsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& f = findings_[static_cast<std::size_t>(index.row())];
  if (role == kNodeNameRole) return exact_text(f.where.node);
  if (role == kGraphLabelRole) return exact_text(f.where.graph);
  if (role == kRankRole) return f.where.rank ? QVariant(*f.where.rank) : QVariant();
  if (role == Qt::ToolTipRole) return shown_text(f.message);
  const QString cause = value_text(f.values, "cause");
  if (role == Qt::BackgroundRole && index.column() == Cause) {
    if (cause == QStringLiteral("origin")) return QBrush(QColor(255, 190, 180));
    if (cause == QStringLiteral("received")) return QBrush(QColor(200, 220, 255));
    return QBrush(QColor(255, 235, 190));
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Rank: return f.where.rank ? QVariant(*f.where.rank) : QVariant();
    case Graph: return shown_text(f.where.graph);
    case Node: {
      const QString b = value_text(f.values, "node_b");
      const QString a = shown_text(f.where.node);
      return b.isEmpty() || b == a ? a : a + QStringLiteral(" → ") + b;
    }
    case Op: return value_text(f.values, "op");
    case Source: return value_text(f.values, "source");
    case Cause: return f.kind == "node_divergence" ? cause : cause + QStringLiteral(" (further)");
    case Origin: {
      const auto* o = remote_origin(f);
      if (o == nullptr) return {};
      return QStringLiteral("rank %1: %2").arg(o->value("rank", -1)).arg(shown_text(o->value("node", "")));
    }
    case Detail: return shown_text(f.message);
    default: return {};
  }
}

QVariant NodeFindingsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Rank: return QStringLiteral("rank");
    case Graph: return QStringLiteral("graph");
    case Node: return QStringLiteral("node");
    case Op: return QStringLiteral("op");
    case Source: return QStringLiteral("source");
    case Cause: return QStringLiteral("cause");
    case Origin: return QStringLiteral("origin");
    case Detail: return QStringLiteral("finding");
    default: return {};
  }
}

}  // namespace gparity::gui
