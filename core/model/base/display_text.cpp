#include "core/model/base/display_text.hpp"

#include <cstdint>
#include <cstring>

namespace gparity::model {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

unsigned char byte_at(std::string_view text, std::size_t i) noexcept {
  return static_cast<unsigned char>(text[i]);
}

/// Length of the well-formed UTF-8 sequence that starts at text[i] (a byte >= 0x80), or 0 when
/// there is none (Unicode table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF).
std::size_t sequence_length(std::string_view text, std::size_t i) noexcept {
  const std::size_t left = text.size() - i;
  const auto continues = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return k < left && byte_at(text, i + k) >= lo && byte_at(text, i + k) <= hi;
  };
  const unsigned char lead = byte_at(text, i);
  if (lead >= 0xC2 && lead <= 0xDF) return continues(1) ? 2 : 0;
  if (lead == 0xE0) return continues(1, 0xA0) && continues(2) ? 3 : 0;
  if (lead == 0xED) return continues(1, 0x80, 0x9F) && continues(2) ? 3 : 0;
  if (lead >= 0xE1 && lead <= 0xEF) return continues(1) && continues(2) ? 3 : 0;
  if (lead == 0xF0) return continues(1, 0x90) && continues(2) && continues(3) ? 4 : 0;
  if (lead >= 0xF1 && lead <= 0xF3) return continues(1) && continues(2) && continues(3) ? 4 : 0;
  if (lead == 0xF4) return continues(1, 0x80, 0x8F) && continues(2) && continues(3) ? 4 : 0;
  return 0;
}

/// A well-formed 2-byte sequence (length from sequence_length) in U+0080..U+009F.
bool is_c1_control(std::string_view text, std::size_t i, std::size_t length) noexcept {
  return length == 2 && byte_at(text, i) == 0xC2 && byte_at(text, i + 1) <= 0x9F;
}

bool is_plain_ascii(unsigned char b, bool keep_newline) noexcept {
  return (b >= 0x20 && b != 0x7F) || (keep_newline && b == '\n');
}

/// True when some byte of the 8 in `w` is not printable ASCII (>= 0x80, < 0x20 or 0x7F). May
/// say true for a word that is all printable (the caller then looks byte by byte); never says
/// false for one that is not.
bool word_needs_a_look(std::uint64_t w) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = kOnes * 0x80;
  const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh;
  const std::uint64_t x = w ^ (kOnes * 0x7F);
  const std::uint64_t del = (x - kOnes) & ~x & kHigh;
  return ((w & kHigh) | below_space | del) != 0;
}

/// Length of the longest prefix of `text` that is shown as it is.
std::size_t safe_prefix(std::string_view text, bool keep_newline) noexcept {
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    // Names and messages are mostly ASCII: eight bytes a step until one needs a look.
    while (i + 8 <= n) {
      std::uint64_t w = 0;
      std::memcpy(&w, text.data() + i, 8);
      if (word_needs_a_look(w)) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char b = byte_at(text, i);
    if (b < 0x80) {
      if (!is_plain_ascii(b, keep_newline)) return i;
      ++i;
      continue;
    }
    const std::size_t length = sequence_length(text, i);
    if (length == 0 || is_c1_control(text, i, length)) return i;
    i += length;
  }
  return n;
}

void append_byte_escape(std::string& out, unsigned char b) {
  const char escape[4] = {'\\', 'x', kHexDigits[b >> 4], kHexDigits[b & 0xF]};
  out.append(escape, 4);
}

void append_escaped(std::string& out, std::string_view text, bool keep_newline) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t safe = safe_prefix(text.substr(i), keep_newline);
    out.append(text.data() + i, safe);
    i += safe;
    if (i >= text.size()) break;
    const unsigned char b = byte_at(text, i);
    switch (b) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (b >= 0x80 && is_c1_control(text, i, sequence_length(text, i))) {
          append_byte_escape(out, b);
          ++i;
          append_byte_escape(out, byte_at(text, i));
        } else {
          append_byte_escape(out, b);
        }
    }
    ++i;
  }
}

std::string escaped(std::string_view text, bool keep_newline) {
  const std::size_t safe = safe_prefix(text, keep_newline);
  if (safe == text.size()) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  out.append(text.data(), safe);
  append_escaped(out, text.substr(safe), keep_newline);
  return out;
}

}  // namespace

std::string display_text(std::string_view text) {
  return escaped(text, false);
}

std::string display_lines(std::string_view text) {
  return escaped(text, true);
}

void append_display_text(std::string& out, std::string_view text) {
  append_escaped(out, text, false);
}

bool is_display_safe(std::string_view text) noexcept {
  return safe_prefix(text, false) == text.size();
}

std::ostream& operator<<(std::ostream& out, Shown s) {
  if (is_display_safe(s.text)) return out.write(s.text.data(), static_cast<std::streamsize>(s.text.size()));
  const std::string text = display_text(s.text);
  return out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace gparity::model
