#pragma once
// Node findings of two replay runs in gparity-view: the first divergent node per rank and graph
// and further origins (diff/replay/node_compare.hpp), computed through diff::compare_runs like
// `gparity compare` does, listed one row per finding: the origins first, then the divergences
// received through a collective or propagated from another rank, each naming (column "origin")
// and linking to (origin_row) the finding where its divergence started. kNodeNameRole (models.hpp) names the
// node to select, kGraphLabelRole and kRankRole the graph it belongs to; find_graph() maps a finding's graph
// to the open Document's graph list.

#include <QAbstractTableModel>
#include <optional>
#include <string>
#include <vector>

#include "diff/report/finding.hpp"
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
  enum Column { Rank, Graph, Node, Op, Source, Cause, Origin, Detail, ColumnCount };

  /// Keeps the order given, but origins (cause "origin") before every other finding.
  void set_findings(std::vector<diff::Finding> findings);
  /// The row of the finding where row `row`'s divergence started (its values' "origin": rank,
  /// graph, node), when that is another listed finding.
  [[nodiscard]] std::optional<int> origin_row(int row) const;
  [[nodiscard]] const std::vector<diff::Finding>& findings() const noexcept { return findings_; }
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<diff::Finding> findings_;
};

}  // namespace gparity::gui
