#pragma once
// Terminal-safe text. Every string that comes from an input (a graph argument, a node name, a
// parameter name, a file name inside an archive, an error message quoting any of them) passes
// through display_text() before it reaches a terminal or a text report, so that an artifact can
// neither drive the terminal (clear the screen, retitle the window, move the cursor) nor break a
// report's line structure.
//
// What is escaped, byte by byte, as \xNN (two lowercase hex digits of the input byte):
//  - C0 controls 00..1F, except that \n, \r and \t are written as those two-character escapes:
//    a single string from an artifact never starts a new line of a report;
//  - DEL 7F;
//  - C1 controls U+0080..U+009F, whose UTF-8 form is C2 80..C2 9F (both bytes: "\xc2\x9b");
//  - every byte that is not part of well-formed UTF-8 (Unicode table 3-7): stray continuation
//    bytes, truncated sequences, overlong forms (C0 80, E0 80 80), surrogates (ED A0 80) and
//    code points past U+10FFFF (F4 90 80 80, F5..FF).
// Everything else (printable ASCII, well-formed UTF-8 outside the C1 block) is kept as it is.
// A backslash is kept too: the result is for reading, not for parsing back (JSON output keeps
// every string exact).
//
// display_lines() is the same except that it keeps '\n': for whole messages composed by gparity
// that have several lines on purpose (an error listing candidates), where an artifact's line
// break can at worst start a line, never send a control sequence.

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

namespace gparity::model {

/// `text` with every control character and invalid UTF-8 byte escaped (see above).
std::string display_text(std::string_view text);
/// As display_text, but keeps line feeds.
std::string display_lines(std::string_view text);
/// Appends display_text(text) to `out` without a temporary string.
void append_display_text(std::string& out, std::string_view text);

/// True when display_text(text) == text: printable ASCII and well-formed UTF-8 only (the fast
/// path: nothing is copied byte by byte).
bool is_display_safe(std::string_view text) noexcept;

/// For streams: `out << shown(name)` writes display_text(name) (without allocating when the
/// text needs no escape).
struct Shown {
  std::string_view text;
};
inline Shown shown(std::string_view text) noexcept {
  return Shown{text};
}
std::ostream& operator<<(std::ostream& out, Shown s);

}  // namespace gparity::model
