#include "gui/views/op_kernel_model.hpp"

#include "gui/display_text.hpp"
#include "gui/views/view_support.hpp"

namespace gparity::gui::views {
namespace {

constexpr const char* kKernelColumns[] = {"#",     "launch", "status", "cause",      "code line",
                                          "nodes", "ATen",   "source", "counterpart"};
static_assert(std::size(kKernelColumns) == OpKernelModel::ColumnCount);

std::string first_and_count(const std::vector<std::string>& v) {
  if (v.empty()) return {};
  return v.size() == 1 ? v.front() : v.front() + " (+" + std::to_string(v.size() - 1) + ")";
}

}  // namespace

QColor kernel_status_colour(const std::string& status) {
  if (status == "first divergence") return {220, 60, 60};
  if (status == "differs") return {244, 160, 160};
  if (status == "equal") return {198, 234, 198};
  if (status == "weakly equal") return {240, 226, 140};
  if (status == "no counterpart" || status == "candidate only") return {225, 225, 225};
  return {250, 250, 250};  // no evidence, not compared
}

std::vector<LegendEntry> kernel_legend_entries() {
  const std::pair<const char*, QString> meanings[] = {
      {"first divergence",
       QStringLiteral("the step's first divergent launch, with its cause (the engine's finding beneath)")},
      {"differs",
       QStringLiteral("wrote other values than its counterpart (the cause says whether an input differed)")},
      {"equal", QStringLiteral("read and wrote the same values as its counterpart (by a strong hash)")},
      {"weakly equal",
       QStringLiteral("equal only by weak hashes (hash_tensor 0: constant or empty tensors)")},
      {"no counterpart", QStringLiteral("one run made this launch, the other none of the kind here")},
      {"not compared", QStringLiteral("eager against compiled: the op table above compares the values")},
  };
  std::vector<LegendEntry> out;
  for (const auto& [status, meaning] : meanings)
    out.push_back({kernel_status_colour(status), QString::fromLatin1(status), meaning});
  return out;
}

OpKernelModel::OpKernelModel() : SourceTableModel(kKernelColumns) {}

int OpKernelModel::row_count(const OpKernelStep& step) const {
  return static_cast<int>(step.rows.size());
}

QVariant OpKernelModel::cell(const OpKernelStep& step, int row, int column, int role) const {
  const auto& r = step.rows[static_cast<std::size_t>(row)];
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Index: return static_cast<qlonglong>(r.index);
      case Launch: return shown_text(r.name);
      case Status: return QString::fromStdString(r.status);
      case Cause: return shown_text(r.cause);
      case CodeLine: return r.code_line > 0 ? QVariant(static_cast<qlonglong>(r.code_line)) : QVariant();
      case PostNodes: return shown_text(comma_joined(r.post_nodes));
      case Aten: return shown_text(comma_joined(r.aten));
      case Source: return shown_text(first_and_count(r.sources));
      case Counterpart: return shown_text(r.counterpart);
      default: return {};
    }
  }
  if (role == Qt::BackgroundRole) {
    const QColor c = kernel_status_colour(r.status);
    if (column == Status) return c;
    if (r.status == "equal" || r.status == "not compared" || r.status == "no evidence") return {};
    return r.status == "first divergence" ? c.lighter(140) : c.lighter(110);
  }
  if (role == Qt::ToolTipRole) return shown_lines(kernel_row_detail(r));
  return {};
}

}  // namespace gparity::gui::views
