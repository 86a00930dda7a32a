#pragma once
// Node findings of two replay runs in gparity-view: the first divergent node per rank and graph
// and further origins (diff/node_compare.hpp), computed through diff::compare_runs like
// `gparity compare` does, listed one row per finding. kNodeNameRole (models.hpp) names the node
// to select, kGraphLabelRole and kRankRole the graph it belongs to; find_graph() maps a finding's
// graph to the open Document's graph list.

#include <QAbstractTableModel>
#include <optional>
#include <string>
#include <vector>

#include "diff/finding.hpp"
#include "gui/document.hpp"

namespace gparity::gui {

/// The "node_divergence" and "node_origin" findings of comparing two runs (model::open_run
/// paths). Throws model::InputError for input it cannot use.
std::vector<diff::Finding> compute_node_findings(const std::string& baseline, const std::string& candidate);

/// The Document graph a node finding belongs to: same rank (when the document has ranks), kind
/// and compile id from the label ("aot_forward_graph 0/0"); a document of one graph matches any.
std::optional<std::size_t> find_graph(const Document& doc, const diff::Finding& f);

class NodeFindingsModel final : public QAbstractTableModel {
 public:
  static constexpr int kGraphLabelRole = Qt::UserRole + 10;
  static constexpr int kRankRole = Qt::UserRole + 11;
  enum Column { Rank, Graph, Node, Op, Source, Cause, Detail, ColumnCount };

  void set_findings(std::vector<diff::Finding> findings);
  [[nodiscard]] const std::vector<diff::Finding>& findings() const noexcept { return findings_; }
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<diff::Finding> findings_;
};

}  // namespace gparity::gui
