#pragma once
// Layer 1 of the FX text reader (fx_text.hpp): Python tokens and logical lines. A logical line
// runs to a newline outside brackets (explicit `\` continuations and triple-quoted strings
// included); a line holding only a comment is its own statement. The lexer never throws on
// content: a statement it cannot tokenize (a stray character, an unterminated string, brackets
// that do not match or never close, nesting deeper than kMaxDepth) carries `error` and its line,
// and the lexer resumes at the next physical line, so one damaged line costs only itself.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gparity::model::fx {

enum class Tok : std::uint8_t { Name, Number, String, Op };

struct Token {
  Tok type;
  std::uint32_t begin;  // offsets into the text
  std::uint32_t end;
  std::int64_t line;  // 1-based line in the text
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

bool is_ident_start(char c) noexcept;
bool is_ident_char(char c) noexcept;
bool is_open(char c) noexcept;
bool is_close(char c) noexcept;
bool is_binary_start(char c) noexcept;
bool triple_quote(std::string_view s, std::size_t i, char q) noexcept;

class Lexer {
 public:
  static constexpr std::size_t kMaxDepth = 200;

  /// Throws InputError only for text of 4 GiB or more (offsets are 32-bit).
  Lexer(std::string_view text, const std::string& source);
  void run();

  [[nodiscard]] const std::vector<Token>& tokens() const { return tokens_; }
  [[nodiscard]] const std::vector<Comment>& comments() const { return comments_; }
  [[nodiscard]] const std::vector<Statement>& statements() const { return statements_; }

 private:
  std::size_t statement(std::size_t i, std::int64_t& line);
  std::optional<std::size_t> string_end(std::size_t i, std::int64_t& line);
  std::size_t recover(std::size_t i, std::int64_t line, std::int64_t at, std::string problem);
  void push(Tok t, std::uint32_t b, std::size_t e, std::int64_t line) {
    tokens_.push_back({t, b, static_cast<std::uint32_t>(e), line});
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  std::vector<Comment> comments_;
  std::vector<Statement> statements_;
  std::vector<std::pair<char, std::int64_t>> open_;
  std::string error_;
  std::int64_t error_line_ = 0;
};

/// Decodes a Python string literal (the subset repr() produces). Nullopt on a malformed escape.
std::optional<std::string> decode_string(std::string_view lit);

}  // namespace gparity::model::fx
