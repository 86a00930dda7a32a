#pragma once
// Layer 1 of the FX text reader (fx_text.hpp): Python tokens and logical lines. A logical line
// runs to a newline outside brackets (explicit `\` continuations and triple-quoted strings
// included); a line holding only a comment is its own statement. The lexer never throws on
// content: a statement it cannot tokenize (a stray character, an unterminated string, brackets
// that do not match or never close, nesting deeper than kMaxDepth) carries `error` and its line,
// and the lexer resumes at the next physical line, so one damaged line costs only itself.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gparity::model::fx {

enum class Tok : std::uint8_t { Name, Number, String, Op };

struct Token {
  std::uint32_t begin;  // offsets into the text
  std::uint32_t end;
  std::uint32_t line;  // 1-based line in the text (the text is under 4 GiB)
  Tok type;
};

struct Comment {
  std::int64_t line;
  std::string_view text;  // without "#" and the blank after it
};

/// One logical line: tokens up to a newline outside brackets, or a line holding only a comment.
struct Statement {
  std::int32_t indent = 0;
  std::uint32_t tok_begin = 0, tok_end = 0;
  std::uint32_t com_begin = 0, com_end = 0;
  std::int64_t line = 0;
  std::uint32_t text_begin = 0, text_end = 0;  // byte range of the statement in the text
  bool comment_only = false;
  std::string error;  // non-empty: the statement could not be tokenized (see error_line)
  std::int64_t error_line = 0;
};

/// Character classes, one table lookup each (the lexer's inner loops run them on every byte).
namespace cc {
inline constexpr std::uint8_t kIdentStart = 1, kDigit = 2, kOpen = 4, kClose = 8, kBinary = 16, kBlank = 32;
inline constexpr auto kTable = [] {
  std::array<std::uint8_t, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[static_cast<std::size_t>(c)] |= kIdentStart;
  for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<std::size_t>(c)] |= kIdentStart;
  for (int c = 0x80; c < 0x100; ++c) t[static_cast<std::size_t>(c)] |= kIdentStart;
  t['_'] |= kIdentStart;
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] |= kDigit;
  t['('] |= kOpen;
  t['['] |= kOpen;
  t['{'] |= kOpen;
  t[')'] |= kClose;
  t[']'] |= kClose;
  t['}'] |= kClose;
  for (const char c : std::string_view("|^&<>+-*/%@=!")) t[static_cast<unsigned char>(c)] |= kBinary;
  t[' '] |= kBlank;
  t['\t'] |= kBlank;
  t['\r'] |= kBlank;
  t['\f'] |= kBlank;
  return t;
}();
constexpr bool has(char c, std::uint8_t cls) noexcept {
  return (kTable[static_cast<unsigned char>(c)] & cls) != 0;
}
}  // namespace cc

constexpr bool is_ident_start(char c) noexcept {
  return cc::has(c, cc::kIdentStart);
}
constexpr bool is_ident_char(char c) noexcept {
  return cc::has(c, cc::kIdentStart | cc::kDigit);
}
constexpr bool is_open(char c) noexcept {
  return cc::has(c, cc::kOpen);
}
constexpr bool is_close(char c) noexcept {
  return cc::has(c, cc::kClose);
}
constexpr bool is_binary_start(char c) noexcept {
  return cc::has(c, cc::kBinary);
}
bool triple_quote(std::string_view s, std::size_t i, char q) noexcept;

class Lexer {
 public:
  static constexpr std::size_t kMaxDepth = 200;

  /// Throws InputError only for text of 4 GiB or more (offsets are 32-bit).
  Lexer(std::string_view text, const std::string& source);
  void run();

  [[nodiscard]] std::span<const Token> tokens() const { return {tokens_.get(), ntok_}; }
  static constexpr std::uint32_t kNoMatch = 0xFFFFFFFFu;
  /// The token closing the bracket token `i` opens (kNoMatch when it is never closed); only
  /// for tokens that open a bracket.
  [[nodiscard]] std::uint32_t match(std::uint32_t i) const { return match_[i]; }
  [[nodiscard]] const std::vector<Comment>& comments() const { return comments_; }
  [[nodiscard]] const std::vector<Statement>& statements() const { return statements_; }

 private:
  std::size_t statement(std::size_t i, std::int64_t& line);
  std::optional<std::size_t> string_end(std::size_t i, std::int64_t& line);
  std::size_t recover(std::size_t i, std::int64_t line, std::int64_t at, std::string problem);
  // A buffer grown by hand, never zeroed: a push is a store.
  void push(Tok t, std::uint32_t b, std::size_t e, std::int64_t line) {
    if (ntok_ == cap_) grow_tokens();
    tokens_[ntok_++] = {b, static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(line), t};
  }
  void grow_tokens();

  std::string_view text_;
  std::unique_ptr<Token[]> tokens_;
  std::size_t ntok_ = 0, cap_ = 0;
  std::vector<Comment> comments_;
  std::vector<Statement> statements_;
  struct Open {
    char bracket;
    std::int64_t line;
    std::uint32_t token;
  };
  std::vector<Open> open_;
  std::unique_ptr<std::uint32_t[]> match_;  // per token: an open bracket's closing token
  std::string error_;
  std::int64_t error_line_ = 0;
};

/// Decodes a Python string literal (the subset repr() produces). Nullopt on a malformed escape.
std::optional<std::string> decode_string(std::string_view lit);

}  // namespace gparity::model::fx
