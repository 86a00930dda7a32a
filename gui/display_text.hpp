#pragma once
// How the viewer shows a string read from an input (a node name, a target, a parameter name, a
// finding's message): as model::display_text shows it on a terminal, so a control character is
// visible as \x1b instead of drawn as nothing, and invalid UTF-8 as \xNN instead of U+FFFD.
// For display and tool-tip roles only: data roles used to look things up keep the exact string.

#include <QString>
#include <string>
#include <string_view>

#include "core/model/base/display_text.hpp"

namespace gparity::gui {

inline QString shown_text(std::string_view text) {
  const std::string shown = model::display_text(text);
  return QString::fromUtf8(shown.data(), static_cast<qsizetype>(shown.size()));
}

/// The string as it is (lookups by node name or compile id).
inline QString exact_text(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

}  // namespace gparity::gui
