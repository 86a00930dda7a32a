#include "core/model/graph/fx_lexer.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "core/model/base/input_error.hpp"

namespace gparity::model::fx {
namespace {

constexpr bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

constexpr bool is_single_op(char c) noexcept {
  switch (c) {
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
    case '@':
    case '<':
    case '>':
    case '=':
    case '&':
    case '|':
    case '^':
    case '~':
    case ',':
    case ':':
    case ';':
    case '.':
    case '!': return true;
    default: return false;
  }
}

}  // namespace

bool triple_quote(std::string_view s, std::size_t i, char q) noexcept {
  return i + 2 < s.size() && s[i] == q && s[i + 1] == q && s[i + 2] == q;
}

Lexer::Lexer(std::string_view text, const std::string& source) : text_(text) {
  if (text.size() >= 0xFFFFFFFFu) throw InputError(source, "FX text larger than 4 GiB");
}

void Lexer::run() {
  cap_ = std::max<std::size_t>(64, text_.size() / 6);
  tokens_ = std::make_unique_for_overwrite<Token[]>(cap_);
  match_ = std::make_unique_for_overwrite<std::uint32_t[]>(cap_);
  statements_.reserve(text_.size() / 60);
  std::size_t i = 0;
  std::int64_t line = 1;
  while (i < text_.size()) {
    // At the start of a physical line outside brackets: measure the indent.
    std::size_t j = i;
    while (j < text_.size() && (text_[j] == ' ' || text_[j] == '\t')) ++j;
    if (j >= text_.size()) break;
    if (text_[j] == '\n' || text_[j] == '\r') {
      i = j + 1;
      if (text_[j] == '\n') ++line;
      continue;
    }
    Statement st;
    st.indent = static_cast<std::int32_t>(j - i);
    st.line = line;
    st.tok_begin = static_cast<std::uint32_t>(ntok_);
    st.com_begin = static_cast<std::uint32_t>(comments_.size());
    st.text_begin = static_cast<std::uint32_t>(j);
    error_.clear();
    i = statement(j, line);
    st.text_end = static_cast<std::uint32_t>(i);
    while (st.text_end > st.text_begin && (text_[st.text_end - 1] == '\n' || text_[st.text_end - 1] == '\r' ||
                                           text_[st.text_end - 1] == ' '))
      --st.text_end;
    st.tok_end = static_cast<std::uint32_t>(ntok_);
    st.com_end = static_cast<std::uint32_t>(comments_.size());
    st.comment_only = st.tok_begin == st.tok_end && error_.empty();
    if (!error_.empty()) {
      st.error = std::move(error_);
      st.error_line = error_line_;
    }
    statements_.push_back(std::move(st));
  }
}

void Lexer::grow_tokens() {
  auto bigger = std::make_unique_for_overwrite<Token[]>(cap_ * 2);
  std::memcpy(bigger.get(), tokens_.get(), ntok_ * sizeof(Token));
  tokens_ = std::move(bigger);
  auto match = std::make_unique_for_overwrite<std::uint32_t[]>(cap_ * 2);
  std::memcpy(match.get(), match_.get(), ntok_ * sizeof(std::uint32_t));
  match_ = std::move(match);
  cap_ *= 2;
}

// Records the problem for the current statement and skips to the end of the physical line `i`
// is on, so the next statement starts on a clean line.
std::size_t Lexer::recover(std::size_t i, std::int64_t line, std::int64_t at, std::string problem) {
  if (error_.empty()) {
    error_ = std::move(problem);
    error_line_ = at;
  }
  (void)line;
  open_.clear();
  while (i < text_.size() && text_[i] != '\n') ++i;
  return i < text_.size() ? i : text_.size();
}

namespace {

// What a byte starts, for the dispatch of Lexer::statement.
enum class Start : std::uint8_t {
  Other,
  Newline,
  Blank,
  Backslash,
  Hash,
  Ident,
  Digit,
  Dot,
  Quote,
  Open,
  Close,
  Op
};

constexpr auto kStart = [] {
  std::array<Start, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const auto ch = static_cast<char>(c);
    if (is_ident_start(ch)) t[static_cast<std::size_t>(c)] = Start::Ident;
    if (is_open(ch)) t[static_cast<std::size_t>(c)] = Start::Open;
    if (is_close(ch)) t[static_cast<std::size_t>(c)] = Start::Close;
    if (is_single_op(ch)) t[static_cast<std::size_t>(c)] = Start::Op;
  }
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = Start::Digit;
  t['\n'] = Start::Newline;
  t[' '] = t['\t'] = t['\r'] = t['\f'] = Start::Blank;
  t['\\'] = Start::Backslash;
  t['#'] = Start::Hash;
  t['.'] = Start::Dot;
  t['\''] = t['"'] = Start::Quote;
  return t;
}();

// Bytes that end the plain part of a one-line string literal quoted with " or '.
constexpr auto stop_table(char quote) {
  std::array<bool, 256> t{};
  t[static_cast<unsigned char>(quote)] = t['\\'] = t['\n'] = true;
  return t;
}
constexpr auto kStopDouble = stop_table('"');
constexpr auto kStopSingle = stop_table('\'');

}  // namespace

// Tokenizes one logical line starting at i; returns the offset after its final newline.
std::size_t Lexer::statement(std::size_t i, std::int64_t& line) {
  auto& open = open_;
  open.clear();
  const std::size_t n = text_.size();
  const char* const s = text_.data();
  while (i < n) {
    const char c = s[i];
    const auto start = static_cast<std::uint32_t>(i);
    switch (kStart[static_cast<unsigned char>(c)]) {
      case Start::Newline:
        ++line;
        ++i;
        if (open.empty()) return i;
        continue;
      case Start::Blank: ++i; continue;
      case Start::Backslash:
        if (i + 1 < n && s[i + 1] == '\n') {  // explicit line continuation
          i += 2;
          ++line;
          continue;
        }
        break;  // a stray backslash: an unexpected character, below
      case Start::Hash: {
        const void* nl = std::memchr(s + i + 1, '\n', n - i - 1);
        const std::size_t e = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - s) : n;
        std::size_t b = i + 1;
        if (b < e && s[b] == ' ') ++b;
        std::size_t t = e;
        while (t > b && (s[t - 1] == '\r' || s[t - 1] == ' ')) --t;
        comments_.push_back({line, text_.substr(b, t - b)});
        i = e;
        continue;
      }
      case Start::Ident:
        ++i;
        while (i < n && is_ident_char(s[i])) ++i;
        if (!(i < n && (s[i] == '\'' || s[i] == '"') && i - start <= 2)) {
          push(Tok::Name, start, i, line);
          continue;
        }
        [[fallthrough]];  // a string prefix (r'', b'', f''): part of the string token
      case Start::Quote: {
        std::int64_t at = line;
        const auto end = string_end(i, at);
        if (!end) return recover(i, line, line, "unterminated string");
        line = at;
        i = *end;
        push(Tok::String, start, i, line);
        continue;
      }
      case Start::Dot:
        if (!(i + 1 < n && is_digit(s[i + 1]))) break;  // an operator, below
        [[fallthrough]];
      case Start::Digit:
        while (i < n) {
          const char d = s[i];
          if (is_ident_char(d) || d == '.') {
            ++i;
          } else if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E') &&
                     !(s[start] == '0' && i > start + 1 && (s[start + 1] == 'x' || s[start + 1] == 'X'))) {
            ++i;
          } else {
            break;
          }
        }
        push(Tok::Number, start, i, line);
        continue;
      case Start::Open:
        if (open.size() >= kMaxDepth)
          return recover(i, line, line, "brackets nested deeper than " + std::to_string(kMaxDepth));
        open.push_back({c, line, static_cast<std::uint32_t>(ntok_)});
        push(Tok::Op, start, ++i, line);
        match_[ntok_ - 1] = kNoMatch;
        continue;
      case Start::Close: {
        const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (open.empty() || open.back().bracket != want)
          return recover(i, line, line, std::string("unbalanced brackets: unexpected '") + c + "'");
        match_[open.back().token] = static_cast<std::uint32_t>(ntok_);
        open.pop_back();
        push(Tok::Op, start, ++i, line);
        continue;
      }
      case Start::Op:
      case Start::Other: break;
    }
    // Operators: the longest of ... ** // == != <= >= << >> -> and single characters.
    const char c2 = i + 1 < n ? s[i + 1] : '\0';
    std::size_t len = 1;
    if (c == '.' && c2 == '.' && i + 2 < n && s[i + 2] == '.') {
      len = 3;
    } else if ((c == '*' && c2 == '*') || (c == '/' && c2 == '/') || (c == '=' && c2 == '=') ||
               (c == '!' && c2 == '=') || (c == '<' && (c2 == '=' || c2 == '<')) ||
               (c == '>' && (c2 == '=' || c2 == '>')) || (c == '-' && c2 == '>')) {
      len = 2;
    }
    if (len == 1 && !is_single_op(c)) {
      return recover(
          i, line, line,
          std::string("unexpected character '") + (c >= 0x20 && c < 0x7f ? std::string(1, c) : "?") + "'");
    }
    push(Tok::Op, start, static_cast<std::uint32_t>(i + len), line);
    i += len;
  }
  if (!open.empty()) {
    const auto [bracket, at, token] = open.back();
    return recover(i, line, at, std::string("unbalanced brackets: '") + bracket + "' is never closed");
  }
  return i;
}

std::optional<std::size_t> Lexer::string_end(std::size_t i, std::int64_t& line) {
  const char q = text_[i];
  const bool triple = triple_quote(text_, i, q);
  i += triple ? 3 : 1;
  if (!triple) {
    // The common case: a one-line literal without escapes up to its closing quote.
    const char* const s = text_.data();
    const std::size_t n = text_.size();
    const auto& stop = q == '"' ? kStopDouble : kStopSingle;
    while (i < n && !stop[static_cast<unsigned char>(s[i])]) ++i;
    if (i < n && s[i] == q) return i + 1;
  }
  while (i < text_.size()) {
    const char c = text_[i];
    if (c == '\\') {
      if (i + 1 < text_.size() && text_[i + 1] == '\n') ++line;
      i += 2;
      continue;
    }
    if (c == '\n') {
      if (!triple) return std::nullopt;
      ++line;
    }
    if (c == q && (!triple || triple_quote(text_, i, q))) return i + (triple ? 3 : 1);
    ++i;
  }
  return std::nullopt;
}

std::optional<std::string> decode_string(std::string_view lit) {
  std::size_t p = 0;
  bool raw = false;
  while (p < lit.size() && lit[p] != '\'' && lit[p] != '"') {
    if (lit[p] == 'r' || lit[p] == 'R') raw = true;
    ++p;
  }
  if (p >= lit.size()) return std::nullopt;
  const char q = lit[p];
  const std::size_t qn = triple_quote(lit, p, q) && lit.size() - p >= 6 ? 3 : 1;
  if (lit.size() < p + 2 * qn) return std::nullopt;
  const std::string_view body = lit.substr(p + qn, lit.size() - p - 2 * qn);
  if (raw || body.find('\\') == std::string_view::npos) return std::string(body);
  std::string out;
  out.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= body.size()) return std::nullopt;
    switch (body[i]) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case '0': out.push_back('\0'); break;
      case '\\': out.push_back('\\'); break;
      case '\'': out.push_back('\''); break;
      case '"': out.push_back('"'); break;
      case '\n': break;
      case 'x': {
        unsigned v = 0;
        if (i + 2 >= body.size()) return std::nullopt;
        const auto r = std::from_chars(body.data() + i + 1, body.data() + i + 3, v, 16);
        if (r.ptr != body.data() + i + 3) return std::nullopt;
        out.push_back(static_cast<char>(v));
        i += 2;
        break;
      }
      default: out.push_back('\\'); out.push_back(body[i]);
    }
  }
  return out;
}

}  // namespace gparity::model::fx
