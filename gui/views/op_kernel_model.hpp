#pragma once
// The kernel table of the op alignment view (issue 32): one rank-step's kernel launches
// (op_kernel_rows.hpp), one row each, coloured by what the kernel comparison says of it.

#include <QColor>
#include <string>
#include <vector>

#include "gui/legend.hpp"
#include "gui/views/op_kernel_rows.hpp"
#include "gui/views/source_table_model.hpp"

namespace gparity::gui::views {

QColor kernel_status_colour(const std::string& status);
/// The kernel table's statuses, their colours and meanings.
std::vector<LegendEntry> kernel_legend_entries();

/// Columns: record #, launch, status, cause, output-code line, post-grad nodes, ATen ops, source,
/// counterpart.
class OpKernelModel final : public SourceTableModel<OpKernelStep> {
 public:
  enum Column { Index, Launch, Status, Cause, CodeLine, PostNodes, Aten, Source, Counterpart, ColumnCount };
  OpKernelModel();
  void set_step(const OpKernelStep* step) { show_source(step); }

 private:
  [[nodiscard]] int row_count(const OpKernelStep& step) const override;
  [[nodiscard]] QVariant cell(const OpKernelStep& step, int row, int column, int role) const override;
};

}  // namespace gparity::gui::views
