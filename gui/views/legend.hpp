#pragma once
// The colour legend every view of gui/views/ shows beside what it colours (issue 27: "a legend on
// every view that uses colour"): one swatch and a word per colour, the meaning as a tool tip. The
// same entries colour the view's model (BackgroundRole), so legend and cells cannot disagree.

#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

namespace gparity::gui::views {

struct LegendEntry {
  QColor colour;
  QString label;    // "origin"
  QString meaning;  // "its inputs were equal: the divergence starts here"
};

/// A row of swatches, named "legend" (tests find it by that name); each swatch's label is the
/// entry's label, its tool tip the meaning.
class Legend final : public QWidget {
 public:
  explicit Legend(std::vector<LegendEntry> entries, QWidget* parent = nullptr);
  [[nodiscard]] const std::vector<LegendEntry>& entries() const noexcept { return entries_; }
  /// The labels, in order (tests compare them with the statuses a model colours).
  [[nodiscard]] QStringList labels() const;

 private:
  std::vector<LegendEntry> entries_;
};

}  // namespace gparity::gui::views
