#include "core/model/ops/py_literal.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <limits>

namespace gparity::model::ops {

namespace {

// Nesting deeper than this is not a repr DebugMode writes; refusing it bounds the recursion.
constexpr int kMaxDepth = 64;

bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// Character classes of the atom scanner.
constexpr std::uint8_t kPlain = 0, kQuote = 1, kOpen = 2, kClose = 3, kStop = 4;
constexpr auto kAtomClass = [] {
  std::array<std::uint8_t, 256> t{};
  t[static_cast<unsigned char>('\'')] = t[static_cast<unsigned char>('"')] = kQuote;
  t[static_cast<unsigned char>('(')] = t[static_cast<unsigned char>('[')] =
      t[static_cast<unsigned char>('{')] = kOpen;
  t[static_cast<unsigned char>(')')] = t[static_cast<unsigned char>(']')] =
      t[static_cast<unsigned char>('}')] = kClose;
  t[static_cast<unsigned char>(',')] = t[static_cast<unsigned char>(':')] = kStop;
  return t;
}();
bool is_ident_start(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_ident(char c) noexcept {
  return is_ident_start(c) || is_digit(c);
}

PyNode::Kind classify_token(std::string_view t) noexcept {
  if (t == "None") return PyNode::Kind::None;
  if (t == "True" || t == "False") return PyNode::Kind::Bool;
  if (t.empty()) return PyNode::Kind::Atom;
  std::size_t i = t[0] == '-' ? 1 : 0;
  if (i < t.size() && is_digit(t[i])) {
    bool all_digits = true;
    for (std::size_t j = i; j < t.size(); ++j) {
      if (!is_digit(t[j])) {
        all_digits = false;
        break;
      }
    }
    if (all_digits) return PyNode::Kind::Int;
  }
  double d = 0;
  if (parse_py_double(t, d)) return PyNode::Kind::Float;
  return PyNode::Kind::Atom;
}

class Parser {
 public:
  Parser(std::string_view text, PyArena& arena) : s_(text), a_(arena) {}

  std::uint32_t value(bool dict_key, int depth) {
    skip_ws();
    if (pos_ >= s_.size()) {
      ok_ = false;
      return kNone;
    }
    const char c = s_[pos_];
    if (c == '(') return container(PyNode::Kind::Tuple, ')', depth);
    if (c == '[') return container(PyNode::Kind::List, ']', depth);
    if (c == '{') return container(PyNode::Kind::Dict, '}', depth);
    if (c == '\'' || c == '"') return string(c);
    return atom(dict_key);
  }

  /// An argument list: values and `name=value` items, up to the end of the text.
  std::uint32_t args(int depth) {
    const auto self = push(PyNode::Kind::Tuple, {});
    skip_ws();
    while (pos_ < s_.size() && ok_) {
      std::string_view key;
      if (is_ident_start(s_[pos_])) {
        std::size_t j = pos_;
        while (j < s_.size() && is_ident(s_[j])) ++j;
        if (j + 1 < s_.size() && s_[j] == '=' && s_[j + 1] != '=') {
          key = s_.substr(pos_, j - pos_);
          pos_ = j + 1;
        } else if (j + 1 == s_.size() && s_[j] == '=') {
          ok_ = false;
          break;
        }
      }
      const auto v = value(false, depth + 1);
      if (v == kNone) break;
      a_.nodes[v].key = key;
      skip_ws();
      if (pos_ >= s_.size()) break;
      if (s_[pos_] != ',') {
        ok_ = false;
        break;
      }
      ++pos_;
      skip_ws();
    }
    a_.nodes[self].end = static_cast<std::uint32_t>(a_.nodes.size());
    return self;
  }

  [[nodiscard]] bool ok() const noexcept { return ok_; }
  [[nodiscard]] bool at_end() {
    skip_ws();
    return pos_ >= s_.size();
  }

 private:
  std::uint32_t push(PyNode::Kind k, std::string_view text) {
    a_.nodes.push_back({k, 0, text, {}});
    return static_cast<std::uint32_t>(a_.nodes.size() - 1);
  }

  void skip_ws() noexcept {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }

  std::uint32_t container(PyNode::Kind kind, char close, int depth) {
    if (depth > kMaxDepth) {
      ok_ = false;
      return kNone;
    }
    const auto self = push(kind, {});
    ++pos_;
    const bool dict = kind == PyNode::Kind::Dict;
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size()) {
        ok_ = false;
        break;
      }
      if (s_[pos_] == close) {
        ++pos_;
        break;
      }
      if (value(dict, depth + 1) == kNone) break;
      if (dict) {
        skip_ws();
        if (pos_ >= s_.size() || s_[pos_] != ':') {
          ok_ = false;
          break;
        }
        ++pos_;
        if (value(false, depth + 1) == kNone) break;
      }
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == close) {
        ++pos_;
        break;
      }
      ok_ = false;
      break;
    }
    a_.nodes[self].end = static_cast<std::uint32_t>(a_.nodes.size());
    return self;
  }

  std::uint32_t string(char quote) {
    const std::size_t start = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') ++pos_;
      ++pos_;
    }
    if (pos_ >= s_.size()) {
      ok_ = false;
      const auto n = push(PyNode::Kind::Str, s_.substr(start));
      a_.nodes[n].end = n + 1;
      return n;
    }
    const auto n = push(PyNode::Kind::Str, s_.substr(start, pos_ - start));
    a_.nodes[n].end = n + 1;
    ++pos_;
    return n;
  }

  std::uint32_t atom(bool dict_key) {
    const std::size_t start = pos_;
    int depth = 0;
    const char* p = s_.data() + pos_;
    const char* const end_of_text = s_.data() + s_.size();
    while (p < end_of_text) {
      // Most characters of an atom are plain: skip them a table lookup at a time.
      const auto cls = kAtomClass[static_cast<unsigned char>(*p)];
      if (cls == kPlain) {
        ++p;
        continue;
      }
      const char c = *p;
      if (cls == kQuote) {
        ++p;
        while (p < end_of_text && *p != c) {
          if (*p == '\\') ++p;
          ++p;
        }
        if (p >= end_of_text) {
          ok_ = false;  // an unclosed quote: the text was cut short
          break;
        }
        ++p;
        continue;
      }
      if (cls == kOpen) {
        ++depth;
      } else if (cls == kClose) {
        if (depth == 0) break;
        --depth;
      } else if (depth == 0 && (c == ',' || (dict_key && c == ':'))) {
        break;
      }
      ++p;
    }
    pos_ = static_cast<std::size_t>(p - s_.data());
    if (depth != 0) ok_ = false;  // an unclosed bracket: the text was cut short
    std::size_t end = pos_;
    while (end > start && (s_[end - 1] == ' ' || s_[end - 1] == '\t')) --end;
    const std::string_view t = s_.substr(start, end - start);
    if (t.empty()) {
      ok_ = false;
      return kNone;
    }
    const auto n = push(classify_token(t), t);
    a_.nodes[n].end = n + 1;
    return n;
  }

  std::string_view s_;
  PyArena& a_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

std::uint32_t PyArena::child_count(std::uint32_t i) const noexcept {
  std::uint32_t n = 0;
  for (std::uint32_t c = i + 1; c < nodes[i].end; c = nodes[c].end) ++n;
  return n;
}

std::uint32_t PyArena::child(std::uint32_t i, std::uint32_t n) const noexcept {
  for (std::uint32_t c = i + 1; c < nodes[i].end; c = nodes[c].end) {
    if (n-- == 0) return c;
  }
  return kNone;
}

std::uint32_t parse_py_value(std::string_view text, PyArena& arena, bool& ok) {
  Parser p(text, arena);
  const auto v = p.value(false, 0);
  ok = p.ok() && v != kNone && p.at_end();
  return v;
}

std::uint32_t parse_py_args(std::string_view text, PyArena& arena, bool& ok) {
  Parser p(text, arena);
  const auto v = p.args(0);
  ok = p.ok() && p.at_end();
  return v;
}

bool parse_py_uint64(std::string_view t, std::uint64_t& out) noexcept {
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), out);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

bool parse_py_int64(std::string_view t, std::int64_t& out) noexcept {
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), out);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

bool parse_py_double(std::string_view t, double& out) noexcept {
  if (t.empty()) return false;
  // Python writes inf, -inf and nan; from_chars takes them, but also "infinity" and hex
  // forms Python never writes for a float, which stay atoms.
  if (t == "inf") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (t == "-inf") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (t == "nan") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  const char c = t[0] == '-' ? (t.size() > 1 ? t[1] : '\0') : t[0];
  if (!is_digit(c) && c != '.') return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), out, std::chars_format::general);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

}  // namespace gparity::model::ops
