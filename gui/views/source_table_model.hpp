#pragma once
// What every table model of gui/views repeated: it shows one source it does not own (a
// checkpoint step, a parameter, a rank's nodes, a collective stream, an op-log step), swapped
// through a model reset; fixed columns are named once. A model says only how many rows (and,
// without named columns, how many columns) its source has and what a cell holds: cell() is
// called with a valid index of a non-null source, so no model repeats the range checks.

#include <QAbstractTableModel>
#include <span>
#include <vector>

namespace gparity::gui::views {

template <class Source>
class SourceTableModel : public QAbstractTableModel {
 public:
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() || source_ == nullptr ? 0 : row_count(*source_);
  }
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override {
    if (parent.isValid()) return 0;
    if (!column_names_.empty()) return static_cast<int>(column_names_.size());
    return source_ == nullptr ? 0 : column_count(*source_);
  }
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override {
    if (source_ == nullptr || !checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
    return cell(*source_, index.row(), index.column(), role);
  }
  /// The named columns' names (DisplayRole, horizontal); nothing else.
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override {
    if (o != Qt::Horizontal || role != Qt::DisplayRole || section < 0 ||
        section >= static_cast<int>(column_names_.size()))
      return {};
    return QString::fromLatin1(column_names_[static_cast<std::size_t>(section)]);
  }
  /// What is shown; null when nothing is.
  [[nodiscard]] const Source* source() const noexcept { return source_; }

 protected:
  /// Fixed columns, named (their count is the column count); none: column_count decides.
  explicit SourceTableModel(std::span<const char* const> column_names = {})
      : column_names_(column_names.begin(), column_names.end()) {}
  /// Shows `source` (not owned; null clears), through a model reset.
  void show_source(const Source* source) {
    beginResetModel();
    source_ = source;
    endResetModel();
  }
  [[nodiscard]] virtual int row_count(const Source& source) const = 0;
  /// Columns of a model without named columns.
  [[nodiscard]] virtual int column_count(const Source& /*source*/) const { return 0; }
  [[nodiscard]] virtual QVariant cell(const Source& source, int row, int column, int role) const = 0;

 private:
  const Source* source_ = nullptr;
  std::vector<const char*> column_names_;
};

}  // namespace gparity::gui::views
