#pragma once
// Item models the views sit on (each checked with QAbstractItemModelTester in tests/gui):
// - GraphListModel: the graphs of a Document for the graph selector (rank / compile id / kind).
// - NodeTableModel: one row per node of one graph: index, name, op, target, result, source.
// - NodeInspectorModel: every field of one node, one column per rank holding the same graph
//   (same compile id, kind and occurrence); cells whose text differs from rank 0's column are
//   marked (kDiffersRole true, tinted background).
// - FindingsModel: the trace-level facts of a multi-rank trace (diff/graphs/trace_facts.hpp: compile
//   ids, cache hit/miss, collective schedules, tensor metadata, schedule vs output code, and the
//   groups of ranks each fact splits them into), then diff/'s rank classification of the shown
//   graph across ranks (device-, rank-, process-group-parametric, divergent); one row per
//   finding; kNodeNameRole gives the node to jump to, kCompileRole the compile id of a fact.
// They hold a shared_ptr to the Document, so the graphs they point into stay alive. The models
// only format what core/model parsed; they never parse.

#include <QAbstractItemModel>
#include <QAbstractListModel>
#include <QAbstractTableModel>
#include <QColor>
#include <memory>
#include <string>
#include <vector>

#include "diff/graphs/rank_classify.hpp"
#include "gui/document.hpp"

namespace gparity::gui {

/// Item data role: true when the inspector cell differs from the first rank's cell.
inline constexpr int kDiffersRole = Qt::UserRole + 1;
/// Item data role: the NodeId of a node table row.
inline constexpr int kNodeIdRole = Qt::UserRole + 2;

/// Item data role: the node name of a finding row (QString, empty for graph-level findings).
inline constexpr int kNodeNameRole = Qt::UserRole + 3;
/// Item data role: the compile id a trace-level finding arises at (QString, empty otherwise).
inline constexpr int kCompileRole = Qt::UserRole + 4;

class GraphListModel final : public QAbstractListModel {
 public:
  void set_document(std::shared_ptr<const Document> doc);
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;

 private:
  std::shared_ptr<const Document> doc_;
};

class NodeTableModel final : public QAbstractTableModel {
 public:
  enum Column { Index, Name, Op, Target, Result, Source, ColumnCount };
  void set_graph(std::shared_ptr<const Document> doc, const model::Graph* graph);
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::shared_ptr<const Document> doc_;
  const model::Graph* graph_ = nullptr;
};

class NodeInspectorModel final : public QAbstractTableModel {
 public:
  /// `ranks`: the same graph on every rank (or just one); `name`: the node to show.
  void set_node(std::shared_ptr<const Document> doc, std::vector<const GraphEntry*> ranks,
                const std::string& name);
  void clear();
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;
  /// Number of rows where some rank's text differs from the first rank's.
  [[nodiscard]] int differing_rows() const;

 private:
  std::shared_ptr<const Document> doc_;
  std::vector<QString> fields_;              // row labels
  std::vector<QString> columns_;             // "rank 0", ...
  std::vector<std::vector<QString>> cells_;  // [row][column]
};

class FindingsModel final : public QAbstractTableModel {
 public:
  enum Column { Class, Compile, Node, Field, Values, Function, ColumnCount };
  /// The trace-level rows, listed first whatever graph is shown: one per fact finding and one
  /// per fact that splits the ranks into groups ("cache groups", the groups in the fit column).
  void set_trace_facts(std::vector<diff::RankFinding> facts, const std::vector<diff::FactGroups>& groups);
  [[nodiscard]] int trace_fact_rows() const { return static_cast<int>(facts_.size()); }
  void set_classification(diff::GraphClassification c);
  [[nodiscard]] const diff::GraphClassification& classification() const { return c_; }
  /// The finding a row shows (trace facts, then the graph's findings); row must be valid.
  [[nodiscard]] const diff::RankFinding& finding(int row) const;
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<diff::RankFinding> facts_;
  diff::GraphClassification c_;
};

/// Fill colour of a finding class (also used by the canvas in diff mode).
QColor finding_color(diff::FindingClass c);

}  // namespace gparity::gui
