#include "core/model/graph/fx_text.hpp"

#include <cctype>
#include <charconv>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/model/base/input_error.hpp"

namespace gparity::model {
namespace {

// ---- tokens and logical lines ----------------------------------------------------------------

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
  bool comment_only = false;
};

bool is_ident_start(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_ident_char(char c) noexcept {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}
bool is_single_op(char c) noexcept {
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
bool is_open(char c) noexcept {
  return c == '(' || c == '[' || c == '{';
}
bool is_close(char c) noexcept {
  return c == ')' || c == ']' || c == '}';
}
bool is_binary_start(char c) noexcept {
  switch (c) {
    case '|':
    case '^':
    case '&':
    case '<':
    case '>':
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
    case '@':
    case '=':
    case '!': return true;
    default: return false;
  }
}
bool triple_quote(std::string_view s, std::size_t i, char q) noexcept {
  return i + 2 < s.size() && s[i] == q && s[i + 1] == q && s[i + 2] == q;
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& source, std::int64_t first_line)
      : text_(text), source_(source), first_line_(first_line) {
    if (text.size() >= 0xFFFFFFFFu) throw InputError(source, "FX text larger than 4 GiB");
  }

  void run() {
    tokens_.reserve(text_.size() / 5);
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
      st.tok_begin = static_cast<std::uint32_t>(tokens_.size());
      st.com_begin = static_cast<std::uint32_t>(comments_.size());
      i = statement(j, line);
      st.tok_end = static_cast<std::uint32_t>(tokens_.size());
      st.com_end = static_cast<std::uint32_t>(comments_.size());
      st.comment_only = st.tok_begin == st.tok_end;
      statements_.push_back(st);
    }
  }

  [[nodiscard]] const std::vector<Token>& tokens() const { return tokens_; }
  [[nodiscard]] const std::vector<Comment>& comments() const { return comments_; }
  [[nodiscard]] const std::vector<Statement>& statements() const { return statements_; }

 private:
  [[noreturn]] void fail(std::int64_t line, const std::string& problem) const {
    throw InputError(source_, first_line_ + line - 1, problem);
  }

  // Tokenizes one logical line starting at i; returns the offset after its final newline.
  std::size_t statement(std::size_t i, std::int64_t& line) {
    std::vector<std::pair<char, std::int64_t>>& open = open_;
    open.clear();
    const std::size_t n = text_.size();
    while (i < n) {
      const char c = text_[i];
      if (c == '\n') {
        ++line;
        ++i;
        if (open.empty()) return i;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        ++i;
        continue;
      }
      if (c == '\\' && i + 1 < n && text_[i + 1] == '\n') {  // explicit line continuation
        i += 2;
        ++line;
        continue;
      }
      if (c == '#') {
        std::size_t e = i + 1;
        while (e < n && text_[e] != '\n') ++e;
        std::size_t b = i + 1;
        if (b < e && text_[b] == ' ') ++b;
        std::size_t t = e;
        while (t > b && (text_[t - 1] == '\r' || text_[t - 1] == ' ')) --t;
        comments_.push_back({line, text_.substr(b, t - b)});
        i = e;
        continue;
      }
      const auto start = static_cast<std::uint32_t>(i);
      if (is_ident_start(c)) {
        while (i < n && is_ident_char(text_[i])) ++i;
        // String prefixes (r'', b'', f'') are part of the string token.
        if (i < n && (text_[i] == '\'' || text_[i] == '"') && i - start <= 2) {
          i = string_end(i, line);
          push(Tok::String, start, i, line);
        } else {
          push(Tok::Name, start, i, line);
        }
        continue;
      }
      if (is_digit(c) || (c == '.' && i + 1 < n && is_digit(text_[i + 1]))) {
        while (i < n) {
          const char d = text_[i];
          if (is_ident_char(d) || d == '.') {
            ++i;
          } else if ((d == '+' || d == '-') && (text_[i - 1] == 'e' || text_[i - 1] == 'E') &&
                     !(text_[start] == '0' && i > start + 1 &&
                       (text_[start + 1] == 'x' || text_[start + 1] == 'X'))) {
            ++i;
          } else {
            break;
          }
        }
        push(Tok::Number, start, i, line);
        continue;
      }
      if (c == '\'' || c == '"') {
        i = string_end(i, line);
        push(Tok::String, start, i, line);
        continue;
      }
      if (c == '(' || c == '[' || c == '{') {
        if (open.size() >= kMaxDepth) fail(line, "brackets nested deeper than " + std::to_string(kMaxDepth));
        open.emplace_back(c, line);
        push(Tok::Op, start, ++i, line);
        continue;
      }
      if (c == ')' || c == ']' || c == '}') {
        const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (open.empty() || open.back().first != want) {
          fail(line, std::string("unbalanced brackets: unexpected '") + c + "'");
        }
        open.pop_back();
        push(Tok::Op, start, ++i, line);
        continue;
      }
      // Operators: the longest of ... ** // == != <= >= << >> -> and single characters.
      const char c2 = i + 1 < n ? text_[i + 1] : '\0';
      std::size_t len = 1;
      if (c == '.' && c2 == '.' && i + 2 < n && text_[i + 2] == '.') {
        len = 3;
      } else if ((c == '*' && c2 == '*') || (c == '/' && c2 == '/') || (c == '=' && c2 == '=') ||
                 (c == '!' && c2 == '=') || (c == '<' && (c2 == '=' || c2 == '<')) ||
                 (c == '>' && (c2 == '=' || c2 == '>')) || (c == '-' && c2 == '>')) {
        len = 2;
      }
      if (len == 1 && !is_single_op(c)) {
        fail(line,
             std::string("unexpected character '") + (c >= 0x20 && c < 0x7f ? std::string(1, c) : "?") + "'");
      }
      push(Tok::Op, start, static_cast<std::uint32_t>(i + len), line);
      i += len;
    }
    if (!open.empty()) {
      fail(open.back().second,
           std::string("unbalanced brackets: '") + open.back().first + "' is never closed");
    }
    return i;
  }

  std::size_t string_end(std::size_t i, std::int64_t& line) {
    const char q = text_[i];
    const std::int64_t start_line = line;
    const bool triple = triple_quote(text_, i, q);
    i += triple ? 3 : 1;
    while (i < text_.size()) {
      const char c = text_[i];
      if (c == '\\') {
        if (i + 1 < text_.size() && text_[i + 1] == '\n') ++line;
        i += 2;
        continue;
      }
      if (c == '\n') {
        if (!triple) fail(start_line, "unterminated string");
        ++line;
      }
      if (c == q && (!triple || triple_quote(text_, i, q))) return i + (triple ? 3 : 1);
      ++i;
    }
    fail(start_line, "unterminated string");
  }

  void push(Tok t, std::uint32_t b, std::size_t e, std::int64_t line) {
    tokens_.push_back({t, b, static_cast<std::uint32_t>(e), line});
  }

  static constexpr std::size_t kMaxDepth = 200;
  std::string_view text_;
  const std::string& source_;
  std::int64_t first_line_;
  std::vector<Token> tokens_;
  std::vector<Comment> comments_;
  std::vector<Statement> statements_;
  std::vector<std::pair<char, std::int64_t>> open_;
};

// ---- strings ---------------------------------------------------------------------------------

/// Decodes a Python string literal (the subset repr() produces). Nullopt on a malformed escape.
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
    if (c != '\\' || raw) {
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

// ---- annotations -----------------------------------------------------------------------------

/// Calls f on each part of "a, b, Max(1, c)" split at top-level commas, blanks trimmed; nothing
/// for an empty list.
template <typename F>
void for_each_top(std::string_view s, F&& f) {
  const auto trimmed = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  };
  if (trimmed(s).empty()) return;
  int depth = 0;
  std::size_t b = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[') ++depth;
    if (s[i] == ')' || s[i] == ']') --depth;
    if (s[i] == ',' && depth == 0) {
      f(trimmed(s.substr(b, i - b)));
      b = i + 1;
    }
  }
  f(trimmed(s.substr(b)));
}

/// The text inside the bracket group starting at s[at] == '['; advances `at` past it.
std::optional<std::string_view> bracket_group(std::string_view s, std::size_t& at) {
  int depth = 0;
  for (std::size_t i = at; i < s.size(); ++i) {
    if (s[i] == '[' || s[i] == '(') ++depth;
    if (s[i] == ']' || s[i] == ')') {
      if (--depth == 0) {
        const auto inner = s.substr(at + 1, i - at - 1);
        at = i + 1;
        return inner;
      }
    }
  }
  return std::nullopt;
}

Dim parse_dim(std::string_view t, Graph& g) {
  Dim d;
  std::int64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (!t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size()) {
    d.value = v;
  } else {
    d.expr = g.intern(t);
  }
  return d;
}

Device parse_device_text(std::string_view t, Graph& g) {
  Device d;
  const auto colon = t.find(':');
  d.type = g.intern(t.substr(0, colon));
  if (colon != std::string_view::npos) {
    std::int32_t idx = -1;
    const auto s = t.substr(colon + 1);
    const auto r = std::from_chars(s.data(), s.data() + s.size(), idx);
    d.index = (r.ec == std::errc() && r.ptr == s.data() + s.size()) ? idx : -1;
    if (d.index < 0) d.type = g.intern(t);  // keep an unparseable device verbatim
  }
  return d;
}

}  // namespace

TensorMeta parse_fx_annotation(std::string_view a, Graph& g, const std::string& source, std::int64_t line) {
  TensorMeta m;
  if (a.starts_with("Sym(") && a.ends_with(")")) {
    m.kind = TensorMeta::Kind::Sym;
    m.sym = g.intern(a.substr(4, a.size() - 5));
    return m;
  }
  std::size_t p = 0;
  while (p < a.size() && (std::isalnum(static_cast<unsigned char>(a[p])) || a[p] == '_')) ++p;
  if (p == 0 || p >= a.size() || a[p] != '[') {
    m.kind = TensorMeta::Kind::Other;
    m.sym = g.intern(a);
    return m;
  }
  const auto dt_text = a.substr(0, p);
  std::optional<DType> dt = parse_dtype(dt_text);
  if (!dt)
    throw InputError(source, line,
                     "unknown dtype '" + std::string(dt_text) + "' in annotation \"" + std::string(a) + "\"");
  m.kind = TensorMeta::Kind::Tensor;
  m.dtype = *dt;
  const auto sizes = bracket_group(a, p);
  if (!sizes) throw InputError(source, line, "unbalanced brackets in annotation \"" + std::string(a) + "\"");
  for_each_top(*sizes, [&](std::string_view s) { m.sizes.push_back(parse_dim(s, g)); });
  if (p < a.size() && a[p] == '[') {
    const auto strides = bracket_group(a, p);
    if (!strides)
      throw InputError(source, line, "unbalanced brackets in annotation \"" + std::string(a) + "\"");
    m.has_strides = true;
    for_each_top(*strides, [&](std::string_view s) { m.strides.push_back(parse_dim(s, g)); });
  }
  if (p < a.size()) m.device = parse_device_text(a.substr(p), g);
  return m;
}

namespace {

// ---- the parser ------------------------------------------------------------------------------

constexpr std::string_view kMemoryFormats[] = {"torch.contiguous_format", "torch.channels_last",
                                               "torch.channels_last_3d", "torch.preserve_format"};
constexpr std::string_view kLayouts[] = {"torch.strided",    "torch.sparse_coo", "torch.sparse_csr",
                                         "torch.sparse_csc", "torch.sparse_bsr", "torch.sparse_bsc",
                                         "torch._mkldnn",    "torch.jagged"};

struct BinaryOp {
  std::string_view text;
  std::string_view target;
  int precedence;
};
constexpr BinaryOp kBinaryOps[] = {
    {"|", "operator.or_", 1},       {"^", "operator.xor", 2},     {"&", "operator.and_", 3},
    {"<<", "operator.lshift", 4},   {">>", "operator.rshift", 4}, {"+", "operator.add", 5},
    {"-", "operator.sub", 5},       {"*", "operator.mul", 6},     {"/", "operator.truediv", 6},
    {"//", "operator.floordiv", 6}, {"%", "operator.mod", 6},     {"@", "operator.matmul", 6},
    {"**", "operator.pow", 8},      {"<", "operator.lt", 0},      {">", "operator.gt", 0},
    {"<=", "operator.le", 0},       {">=", "operator.ge", 0},     {"==", "operator.eq", 0},
    {"!=", "operator.ne", 0},
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& source, std::int64_t first_line)
      : text_(text), source_(source), first_line_(first_line), lexer_(text, source, first_line) {}

  Graph parse() {
    lexer_.run();
    const auto& st = lexer_.statements();
    std::size_t i = 0;
    std::optional<Graph> result;
    while (i < st.size()) {
      const Statement& s = st[i];
      if (s.comment_only) {
        ++i;
        continue;
      }
      if (result) fail(s.line, "more than one module at the top level");
      Graph g;
      if (is_keyword(s, "class")) {
        i = parse_class(i, g);
      } else if (is_keyword(s, "def")) {
        g.name = g.intern("forward");
        i = parse_forward(i, g);
      } else {
        fail(s.line, "expected 'class ...(torch.nn.Module):' or 'def forward(...)'");
      }
      result = std::move(g);
    }
    if (!result) throw InputError(source_, first_line_, "no FX module in the text");
    return std::move(*result);
  }

 private:
  // -- helpers over tokens
  [[noreturn]] void fail(std::int64_t line, const std::string& problem) const {
    throw InputError(source_, first_line_ + line - 1, problem);
  }
  [[nodiscard]] const Token& tok(std::uint32_t i) const { return lexer_.tokens()[i]; }
  [[nodiscard]] std::string_view text(const Token& t) const { return text_.substr(t.begin, t.end - t.begin); }
  [[nodiscard]] std::string_view text(std::uint32_t i) const { return text(tok(i)); }
  [[nodiscard]] bool is_op(std::uint32_t i, std::uint32_t end, std::string_view op) const {
    if (i >= end) return false;
    const Token& t = tok(i);
    return t.type == Tok::Op && t.end - t.begin == op.size() && text_[t.begin] == op[0] &&
           (op.size() == 1 || text(t) == op);
  }
  [[nodiscard]] bool is_delim(std::uint32_t i) const {
    const Token& t = tok(i);
    if (t.type != Tok::Op || t.end - t.begin != 1) return false;
    const char c = text_[t.begin];
    return c == ',' || c == ')' || c == ']' || c == '}' || c == ':';
  }
  [[nodiscard]] bool is_keyword(const Statement& s, std::string_view kw) const {
    return s.tok_begin < s.tok_end && tok(s.tok_begin).type == Tok::Name && text(s.tok_begin) == kw;
  }
  [[nodiscard]] std::string_view span(std::uint32_t b, std::uint32_t e) const {
    return b >= e ? std::string_view{} : text_.substr(tok(b).begin, tok(e - 1).end - tok(b).begin);
  }
  void expect(std::uint32_t& p, std::uint32_t end, std::string_view op, std::int64_t line) const {
    if (!is_op(p, end, op)) fail(p < end ? tok(p).line : line, "expected '" + std::string(op) + "'");
    ++p;
  }
  // Index after the bracket group opening at p.
  [[nodiscard]] std::uint32_t skip_group(std::uint32_t p, std::uint32_t end) const {
    int depth = 0;
    for (; p < end; ++p) {
      if (tok(p).type != Tok::Op) continue;
      const char c = text_[tok(p).begin];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (--depth == 0) return p + 1;
      }
    }
    return end;
  }
  // Dotted name starting at p: returns its end token index.
  [[nodiscard]] std::uint32_t dotted_end(std::uint32_t p, std::uint32_t end) const {
    ++p;
    while (p + 1 < end && is_op(p, end, ".") && tok(p + 1).type == Tok::Name) p += 2;
    return p;
  }

  // -- structure
  std::size_t parse_class(std::size_t i, Graph& g) {
    const Statement& s = lexer_.statements()[i];
    const std::uint32_t e = s.tok_end;
    std::uint32_t p = s.tok_begin + 1;
    if (p >= e || tok(p).type != Tok::Name) fail(s.line, "expected a class name");
    g.name = g.intern(text(p));
    if (!is_op(e - 1, e, ":")) fail(s.line, "expected ':' at the end of the class line");
    bool have_forward = false;
    ++i;
    const auto& st = lexer_.statements();
    while (i < st.size() && (st[i].comment_only || st[i].indent > s.indent)) {
      const Statement& b = st[i];
      if (b.comment_only) {
        ++i;
      } else if (is_keyword(b, "def")) {
        if (have_forward) fail(b.line, "a second 'def' in class " + std::string(g.str(g.name)));
        have_forward = true;
        i = parse_forward(i, g);
      } else if (is_keyword(b, "class")) {
        Graph sub;
        i = parse_class(i, sub);
        g.subgraphs.push_back(std::move(sub));
      } else {
        fail(b.line, "expected 'def forward' or a nested class in class " + std::string(g.str(g.name)));
      }
    }
    if (!have_forward) fail(s.line, "class " + std::string(g.str(g.name)) + " has no forward()");
    return i;
  }

  struct Body {
    Graph* g = nullptr;
    std::unordered_map<std::string_view, NodeId> names;
    std::uint32_t provisional = 0;  // signature placeholders that pytree lines may replace
    bool has_output = false;
    SourceLoc loc;
  };

  std::size_t parse_forward(std::size_t i, Graph& g) {
    const auto& st = lexer_.statements();
    const Statement& s = st[i];
    Body body;
    body.g = &g;
    body_graph_ = &g;
    parse_signature(s, body);
    body.provisional = static_cast<std::uint32_t>(g.nodes.size());
    ++i;
    while (i < st.size() && (st[i].comment_only || st[i].indent > s.indent)) {
      // A comment at or left of the def's indent belongs to the enclosing scope.
      if (st[i].comment_only && st[i].indent <= s.indent) break;
      body_statement(st[i], body);
      ++i;
    }
    if (!body.has_output) fail(s.line, "forward() of " + std::string(g.str(g.name)) + " has no return");
    return i;
  }

  std::string_view comment_at(const Statement& s, std::int64_t line) const {
    for (std::uint32_t c = s.com_begin; c < s.com_end; ++c) {
      if (lexer_.comments()[c].line == line) return lexer_.comments()[c].text;
    }
    return {};
  }

  void parse_signature(const Statement& s, Body& body) {
    const std::uint32_t e = s.tok_end;
    std::uint32_t p = s.tok_begin + 1;
    if (p >= e || tok(p).type != Tok::Name) fail(s.line, "expected a function name after 'def'");
    ++p;
    if (!is_op(p, e, "(")) fail(s.line, "expected '(' after the function name");
    const std::uint32_t close = skip_group(p, e) - 1;
    ++p;
    bool first = true;
    while (p < close) {
      std::string star;
      while (is_op(p, close, "*") || is_op(p, close, "**")) star += text(p++);
      if (p >= close || tok(p).type != Tok::Name)
        fail(tok(std::min(p, close)).line, "expected a parameter name");
      const Token& name = tok(p++);
      TensorMeta meta;
      if (is_op(p, close, ":")) {
        ++p;
        if (p >= close || tok(p).type != Tok::String) fail(name.line, "expected a string annotation");
        meta = annotation(tok(p++));
      }
      if (is_op(p, close, "=")) {  // a default value: kept out of the IR, as FX does
        while (p < close && !is_op(p, close, ","))
          p = tok(p).type == Tok::Op && is_open(text_[tok(p).begin]) ? skip_group(p, close) : p + 1;
      }
      if (!(first && star.empty() && text(name) == "self")) {
        Node n;
        n.kind = NodeKind::Placeholder;
        n.name = body.g->intern(text(name));
        n.target = body.g->intern(star + std::string(text(name)));
        n.meta = std::move(meta);
        n.comment = body.g->intern(comment_at(s, name.line));
        n.line = first_line_ + name.line - 1;
        add_node(body, std::move(n), name.line);
      }
      first = false;
      if (p < close) expect(p, close, ",", name.line);
    }
    if (!is_op(e - 1, e, ":")) fail(s.line, "expected ':' at the end of the def line");
  }

  TensorMeta annotation(const Token& t) {
    const std::string_view lit = text(t);
    // The common case, a plain "..." literal, is parsed in place without a copy.
    if (lit.size() >= 2 && (lit.front() == '"' || lit.front() == '\'') && lit.back() == lit.front() &&
        lit.substr(1, lit.size() - 2).find_first_of("\\\"'") == std::string_view::npos) {
      return parse_fx_annotation(lit.substr(1, lit.size() - 2), *body_graph_, source_,
                                 first_line_ + t.line - 1);
    }
    const auto s = decode_string(lit);
    if (!s) fail(t.line, "malformed string literal");
    return parse_fx_annotation(*s, *body_graph_, source_, first_line_ + t.line - 1);
  }

  NodeId add_node(Body& body, Node n, std::int64_t line) {
    const auto id = static_cast<NodeId>(body.g->nodes.size());
    const auto name = body.g->str(n.name);
    if (!body.names.emplace(name, id).second) fail(line, "node '" + std::string(name) + "' is defined twice");
    body.g->nodes.push_back(std::move(n));
    return id;
  }

  // Drops the signature's pytree parameters once the body declares the real placeholders.
  void drop_provisional(Body& body, std::int64_t line) {
    if (body.provisional == 0) return;
    if (body.g->nodes.size() != body.provisional) fail(line, "graph inputs declared after node lines");
    for (std::uint32_t k = 0; k < body.provisional; ++k) body.names.erase(body.g->str(body.g->nodes[k].name));
    body.g->nodes.erase(body.g->nodes.begin(), body.g->nodes.begin() + body.provisional);
    for (auto& [name, id] : body.names) id -= body.provisional;
    body.provisional = 0;
  }

  void source_comment(std::string_view c, Body& body) {
    Graph& g = *body.g;
    if (c.starts_with("No stacktrace found")) {
      body.loc = {};
      return;
    }
    if (!c.starts_with("File: ")) return;  // other comments carry nothing the IR models
    c.remove_prefix(6);
    SourceLoc loc;
    const auto code_at = c.find(", code: ");
    const auto head = c.substr(0, code_at);
    if (code_at != std::string_view::npos) loc.code = g.intern(c.substr(code_at + 8));
    const auto in_at = head.rfind(" in ");
    const auto where = head.substr(0, in_at);
    if (in_at != std::string_view::npos) loc.function = g.intern(head.substr(in_at + 4));
    const auto colon = where.rfind(':');
    std::int32_t line = 0;
    if (colon != std::string_view::npos &&
        std::from_chars(where.data() + colon + 1, where.data() + where.size(), line).ptr ==
            where.data() + where.size()) {
      loc.file = g.intern(where.substr(0, colon));
      loc.line = line;
    } else {
      loc.file = g.intern(where);
    }
    body.loc = loc;
  }

  void body_statement(const Statement& s, Body& body) {
    body_graph_ = body.g;
    if (s.comment_only) {
      source_comment(lexer_.comments()[s.com_begin].text, body);
      return;
    }
    const std::uint32_t b = s.tok_begin;
    std::uint32_t e = s.tok_end;
    // `;  a = b = None` release lists carry nothing: cut at the first top-level ';'.
    for (std::uint32_t p = b; p < e; ++p) {
      if (tok(p).type == Tok::Op && is_open(text_[tok(p).begin])) {
        p = skip_group(p, e) - 1;
      } else if (is_op(p, e, ";")) {
        e = p;
        break;
      }
    }
    if (tok(b).type != Tok::Name) fail(s.line, "expected a node line");
    if (text(b) == "return") return output(s, b + 1, e, body);
    if (is_op(b + 1, e, "[")) return setitem(s, b, e, body);
    if (is_op(b + 1, e, ",")) return flatten_line(s, b, e, body);
    Node n;
    n.name = body.g->intern(text(b));
    n.line = first_line_ + s.line - 1;
    n.source = body.loc;
    n.comment = body.g->intern(comment_at(s, tok(b).line));
    std::uint32_t p = b + 1;
    if (is_op(p, e, ":")) {
      ++p;
      if (p >= e || tok(p).type != Tok::String) fail(s.line, "expected a string annotation after ':'");
      n.meta = annotation(tok(p++));
      if (p == e) {  // `name: "ann"  # comment`: a placeholder of a pytree signature
        drop_provisional(body, s.line);
        n.kind = NodeKind::Placeholder;
        n.target = n.name;
        n.source = {};
        add_node(body, std::move(n), s.line);
        return;
      }
    }
    if (!is_op(p, e, "=")) fail(s.line, "expected '=' in node line");
    ++p;
    if (p >= e) fail(s.line, "expected an expression after '='");
    rhs(s, p, e, body, std::move(n));
  }

  // `x[idx] = v;  setitem = x;  ...`: FX prints operator.setitem as a Python assignment and
  // binds the node's name in the statement after it.
  void setitem(const Statement& s, std::uint32_t b, std::uint32_t e, Body& body) {
    Graph& g = *body.g;
    Node n;
    n.kind = NodeKind::CallFunction;
    n.target = g.intern("operator.setitem");
    n.line = first_line_ + s.line - 1;
    n.source = body.loc;
    std::uint32_t p = b;
    n.args.push_back(atom(p, e, body));
    if (n.args[0].kind != ValueKind::Node)
      fail(s.line, "item assignment to unknown node '" + std::string(text(b)) + "'");
    ++p;  // '['
    n.args.push_back(value(p, e, body));
    expect(p, e, "]", s.line);
    expect(p, e, "=", s.line);
    n.args.push_back(value_until(p, e, body));
    std::string_view name = "setitem";
    if (is_op(e, s.tok_end, ";") && e + 3 < s.tok_end && tok(e + 1).type == Tok::Name &&
        is_op(e + 2, s.tok_end, "=") && text(e + 3) == text(b)) {
      name = text(e + 1);
    }
    n.name = g.intern(name);
    add_node(body, std::move(n), s.line);
  }

  void output(const Statement& s, std::uint32_t p, std::uint32_t e, Body& body) {
    if (body.has_output) fail(s.line, "a second return in forward()");
    Node n;
    n.kind = NodeKind::Output;
    n.name = body.g->intern("output");
    n.target = n.name;
    n.line = first_line_ + s.line - 1;
    std::string comments;
    for (std::uint32_t c = s.com_begin; c < s.com_end; ++c) {
      if (!comments.empty()) comments += '\n';
      comments += lexer_.comments()[c].text;
    }
    n.comment = body.g->intern(comments);
    // `return pytree.tree_unflatten([...], self._out_spec)`: the output is the list.
    if (p < e && tok(p).type == Tok::Name) {
      const std::uint32_t de = dotted_end(p, e);
      if (span(p, de).ends_with("tree_unflatten") && is_op(de, e, "(")) {
        std::uint32_t q = de + 1;
        n.args.push_back(value(q, e, body));
        body.has_output = true;
        add_node(body, std::move(n), s.line);
        return;
      }
    }
    if (p < e) {
      n.args.push_back(value(p, e, body));
      if (p != e) fail(tok(p).line, "unexpected '" + std::string(text(p)) + "' after the returned value");
    } else {
      n.args.push_back(Value::none());
    }
    body.has_output = true;
    add_node(body, std::move(n), s.line);
  }

  void flatten_line(const Statement& s, std::uint32_t b, std::uint32_t e, Body& body) {
    std::uint32_t p = b;
    std::vector<std::uint32_t> names;
    while (p < e && tok(p).type == Tok::Name) {
      names.push_back(p++);
      if (!is_op(p, e, ",")) break;
      ++p;
    }
    if (!is_op(p, e, "=") || p + 1 >= e ||
        span(p + 1, dotted_end(p + 1, e)).find("tree_flatten_spec") == std::string_view::npos) {
      fail(s.line, "expected 'a, b, = fx_pytree.tree_flatten_spec(...)'");
    }
    drop_provisional(body, s.line);
    for (const auto t : names) {
      if (body.names.contains(text(t))) continue;  // declared by an annotation line above
      Node n;
      n.kind = NodeKind::Placeholder;
      n.name = n.target = body.g->intern(text(t));
      n.line = first_line_ + tok(t).line - 1;
      add_node(body, std::move(n), tok(t).line);
    }
  }

  // Top-level binary operator in [b, e), lowest precedence, rightmost (left-associative).
  std::optional<std::pair<std::uint32_t, const BinaryOp*>> binary_split(std::uint32_t b,
                                                                        std::uint32_t e) const {
    std::optional<std::pair<std::uint32_t, const BinaryOp*>> best;
    for (std::uint32_t p = b; p < e; ++p) {
      const Token& t = tok(p);
      if (t.type != Tok::Op) continue;
      if (is_open(text_[t.begin])) {
        p = skip_group(p, e) - 1;
        continue;
      }
      if (p == b) continue;  // a leading sign is unary
      if (!is_binary_start(text_[t.begin])) continue;
      const Token& prev = tok(p - 1);
      const bool operand_before = prev.type != Tok::Op || is_close(text_[prev.begin]);
      if (!operand_before) continue;
      for (const auto& op : kBinaryOps) {
        if (text(t) == op.text && (!best || op.precedence <= best->second->precedence)) best.emplace(p, &op);
      }
    }
    return best;
  }

  void rhs(const Statement& s, std::uint32_t p, std::uint32_t e, Body& body, Node n) {
    Graph& g = *body.g;
    if (const auto split = binary_split(p, e)) {
      n.kind = NodeKind::CallFunction;
      n.target = g.intern(split->second->target);
      std::uint32_t q = p;
      n.args.push_back(value_until(q, split->first, body));
      q = split->first + 1;
      n.args.push_back(value_until(q, e, body));
      add_node(body, std::move(n), s.line);
      return;
    }
    if (tok(p).type == Tok::Op && (text(p) == "-" || text(p) == "~" || text(p) == "+")) {
      n.kind = NodeKind::CallFunction;
      n.target = g.intern(text(p) == "-"   ? "operator.neg"
                          : text(p) == "~" ? "operator.invert"
                                           : "operator.pos");
      std::uint32_t q = p + 1;
      n.args.push_back(value_until(q, e, body));
      add_node(body, std::move(n), s.line);
      return;
    }
    if (tok(p).type == Tok::Name && text(p) == "not") {
      n.kind = NodeKind::CallFunction;
      n.target = g.intern("operator.not_");
      std::uint32_t q = p + 1;
      n.args.push_back(value_until(q, e, body));
      add_node(body, std::move(n), s.line);
      return;
    }
    if (tok(p).type != Tok::Name) fail(s.line, "expected a call, an attribute or an operator after '='");
    const std::uint32_t de = dotted_end(p, e);
    const std::string_view callee = span(p, de);
    const std::uint32_t parts = (de - p + 1) / 2;
    if (de == e) {
      if (callee.starts_with("self.")) {
        n.kind = NodeKind::GetAttr;
        n.target = g.intern(callee.substr(5));
        add_node(body, std::move(n), s.line);
        return;
      }
      if (parts == 1) return rename_placeholder(s, callee, body, n);
      fail(s.line, "unsupported node expression '" + std::string(callee) + "'");
    }
    if (is_op(de, e, "[") && parts == 1) {  // tuple indexing: operator.getitem
      const auto it = body.names.find(callee);
      if (it == body.names.end()) fail(s.line, "indexing unknown node '" + std::string(callee) + "'");
      n.kind = NodeKind::CallFunction;
      n.target = g.intern("operator.getitem");
      n.args.push_back(Value::ref(it->second));
      std::uint32_t q = de + 1;
      n.args.push_back(value(q, e, body));
      expect(q, e, "]", s.line);
      if (q != e) fail(s.line, "unexpected text after ']'");
      add_node(body, std::move(n), s.line);
      return;
    }
    if (!is_op(de, e, "(")) fail(s.line, "expected '(' after '" + std::string(callee) + "'");
    std::uint32_t q = de;
    if (callee.starts_with("self.")) {
      n.kind = NodeKind::CallModule;
      n.target = g.intern(callee.substr(5));
    } else if (parts == 2 && body.names.contains(text(p))) {
      n.kind = NodeKind::CallMethod;
      n.target = g.intern(text(p + 2));
      n.args.push_back(Value::ref(body.names.at(text(p))));
    } else {
      n.kind = NodeKind::CallFunction;
      n.target = g.intern(callee.starts_with("torch.ops.") ? callee.substr(10) : callee);
    }
    call_args(q, e, body, n.args, n.kwargs);
    if (q != e) fail(tok(q).line, "unexpected '" + std::string(text(q)) + "' after the call");
    add_node(body, std::move(n), s.line);
  }

  // `l_x_ = L_x_`: Dynamo names its placeholders by the source and renames them here.
  void rename_placeholder(const Statement& s, std::string_view from, Body& body, Node& n) {
    const auto it = body.names.find(from);
    if (it == body.names.end() || body.g->nodes[it->second].kind != NodeKind::Placeholder ||
        body.g->nodes[it->second].name != body.g->nodes[it->second].target) {
      fail(s.line, "assignment from '" + std::string(from) + "', which is not an input of the graph");
    }
    Node& ph = body.g->nodes[it->second];
    const NodeId id = it->second;
    body.names.erase(it);
    ph.name = n.name;
    if (!body.names.emplace(body.g->str(ph.name), id).second) {
      fail(s.line, "node '" + std::string(body.g->str(ph.name)) + "' is defined twice");
    }
    if (n.meta.kind != TensorMeta::Kind::None) ph.meta = std::move(n.meta);
  }

  // Parses `( args )` starting at the '(' at p.
  void call_args(std::uint32_t& p, std::uint32_t e, Body& body, std::vector<Value>& args,
                 std::vector<Kwarg>& kwargs) {
    const std::int64_t line = tok(p).line;
    expect(p, e, "(", line);
    while (!is_op(p, e, ")")) {
      if (p >= e) fail(line, "unbalanced brackets in call");
      if (tok(p).type == Tok::Name && is_op(p + 1, e, "=")) {
        Kwarg k;
        k.name = body.g->intern(text(p));
        p += 2;
        k.value = value(p, e, body);
        kwargs.push_back(std::move(k));
      } else {
        if (!kwargs.empty()) fail(tok(p).line, "positional argument after keyword argument");
        args.push_back(value(p, e, body));
      }
      if (!is_op(p, e, ")")) expect(p, e, ",", line);
    }
    ++p;
  }

  Value value_until(std::uint32_t& p, std::uint32_t e, Body& body) {
    const std::uint32_t start = p;
    Value v = value(p, e, body);
    if (p != e) fail(tok(start).line, "unsupported operand '" + std::string(span(start, e)) + "'");
    return v;
  }

  // One argument value; an expression beyond a single atom becomes Symbolic text.
  Value value(std::uint32_t& p, std::uint32_t e, Body& body) {
    const std::uint32_t start = p;
    Value v = atom(p, e, body);
    if (p < e && !is_delim(p)) {
      while (p < e && !is_delim(p)) {
        p = tok(p).type == Tok::Op && is_open(text_[tok(p).begin]) ? skip_group(p, e) : p + 1;
      }
      return Value::text(ValueKind::Symbolic, body.g->intern(span(start, p)));
    }
    return v;
  }

  Value sequence(std::uint32_t& p, std::uint32_t e, Body& body, std::string_view close, ValueKind kind) {
    const std::int64_t line = tok(p).line;
    ++p;
    std::vector<Value> items;
    bool trailing_comma = false;
    while (!is_op(p, e, close)) {
      if (p >= e) fail(line, "unbalanced brackets");
      items.push_back(value(p, e, body));
      trailing_comma = false;
      if (!is_op(p, e, close)) {
        expect(p, e, ",", line);
        trailing_comma = true;
      }
    }
    ++p;
    if (kind == ValueKind::Tuple && items.size() == 1 && !trailing_comma) return std::move(items[0]);
    return Value::sequence(kind, std::move(items));
  }

  Value atom(std::uint32_t& p, std::uint32_t e, Body& body) {
    Graph& g = *body.g;
    if (p >= e) fail(e > 0 ? tok(e - 1).line : 1, "expected a value");
    const Token& t = tok(p);
    const std::string_view tt = text(t);
    if (t.type == Tok::Number) {
      ++p;
      return number(tt, false, g);
    }
    if (t.type == Tok::String) {
      ++p;
      const auto s = decode_string(tt);
      if (!s) fail(t.line, "malformed string literal");
      return Value::text(ValueKind::String, g.intern(*s));
    }
    if (t.type == Tok::Op) {
      if (tt == "-" && p + 1 < e && tok(p + 1).type == Tok::Number) {
        p += 2;
        return number(text(p - 1), true, g);
      }
      if (tt == "-" && p + 1 < e && tok(p + 1).type == Tok::Name &&
          (text(p + 1) == "inf" || text(p + 1) == "nan")) {
        p += 2;
        return Value::text(ValueKind::Float, g.intern(std::string("-") + std::string(text(p - 1))));
      }
      if (tt == "(") return sequence(p, e, body, ")", ValueKind::Tuple);
      if (tt == "[") return sequence(p, e, body, "]", ValueKind::List);
      if (tt == "{") {
        const std::uint32_t b = p;
        p = skip_group(p, e);
        return Value::text(ValueKind::Opaque, g.intern(span(b, p)));
      }
      if (tt == "...") {
        ++p;
        return Value::text(ValueKind::Opaque, g.intern("..."));
      }
      if (tt == "-" || tt == "~" || tt == "+") {  // any other unary expression: symbolic text
        // A loop, not recursion: `- - - ... x` must not grow the stack (found by fuzz_fx_text).
        const std::uint32_t b = p;
        while (p < e && (is_op(p, e, "-") || is_op(p, e, "~") || is_op(p, e, "+"))) ++p;
        atom(p, e, body);
        return Value::text(ValueKind::Symbolic, g.intern(span(b, p)));
      }
      fail(t.line, "unexpected '" + std::string(tt) + "'");
    }
    // A name or dotted name, maybe called.
    const std::uint32_t de = dotted_end(p, e);
    const std::string_view name = span(p, de);
    const std::uint32_t b = p;
    p = de;
    if (is_op(p, e, "(")) {
      std::vector<Value> args;
      std::vector<Kwarg> kwargs;
      call_args(p, e, body, args, kwargs);
      if (name == "device" || name == "torch.device") {
        if (auto d = device_call(args, kwargs, g)) return Value::of_device(*d);
      }
      if (name == "slice" && kwargs.empty() && !args.empty() && args.size() <= 3) {
        std::vector<Value> items = std::move(args);
        if (items.size() == 1) items.insert(items.begin(), Value::none());  // slice(stop)
        items.resize(3);
        return Value::sequence(ValueKind::Slice, std::move(items));
      }
      return Value::text(ValueKind::Opaque, g.intern(span(b, p)));
    }
    if (de - b == 1) {
      if (name == "None") return Value::none();
      if (name == "True") return Value::boolean(true);
      if (name == "False") return Value::boolean(false);
      if (name == "inf" || name == "nan") return Value::text(ValueKind::Float, g.intern(name));
      if (const auto it = body.names.find(name); it != body.names.end()) return Value::ref(it->second);
      return Value::text(ValueKind::Symbolic, g.intern(name));
    }
    if (name == "math.inf") return Value::text(ValueKind::Float, g.intern("inf"));
    if (name == "math.nan") return Value::text(ValueKind::Float, g.intern("nan"));
    for (const auto f : kMemoryFormats) {
      if (name == f) return Value::text(ValueKind::MemoryFormat, g.intern(name));
    }
    for (const auto l : kLayouts) {
      if (name == l) return Value::text(ValueKind::Layout, g.intern(name));
    }
    if (name.starts_with("torch.")) {
      if (const auto dt = parse_dtype(name)) return Value::dtype(*dt);
    }
    return Value::text(ValueKind::Opaque, g.intern(name));
  }

  static std::optional<Device> device_call(const std::vector<Value>& args, const std::vector<Kwarg>& kwargs,
                                           Graph& g) {
    Device d;
    const Value* type = args.size() >= 1 ? &args[0] : nullptr;
    const Value* index = args.size() >= 2 ? &args[1] : nullptr;
    for (const auto& k : kwargs) {
      if (g.str(k.name) == "type")
        type = &k.value;
      else if (g.str(k.name) == "index")
        index = &k.value;
      else
        return std::nullopt;
    }
    if (!type || type->kind != ValueKind::String || args.size() > 2) return std::nullopt;
    d = parse_device_text(g.str(type->s), g);
    if (index) {
      if (index->kind != ValueKind::Int || d.index >= 0) return std::nullopt;
      d.index = static_cast<std::int32_t>(index->i);
    }
    return d;
  }

  static Value number(std::string_view t, bool negative, Graph& g) {
    std::int64_t v = 0;
    const bool plain = t.find_first_of(".eEjJxXoObB_") == std::string_view::npos;
    if (plain) {
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec == std::errc() && r.ptr == t.data() + t.size()) return Value::integer(negative ? -v : v);
      if (negative && t == "9223372036854775808") return Value::integer(INT64_MIN);
    }
    const std::string text = negative ? "-" + std::string(t) : std::string(t);
    if (plain) return Value::text(ValueKind::Symbolic, g.intern(text));  // an integer beyond int64
    return Value::text(ValueKind::Float, g.intern(text));
  }

  std::string_view text_;
  const std::string& source_;
  std::int64_t first_line_;
  Lexer lexer_;
  Graph* body_graph_ = nullptr;
};

}  // namespace

Graph parse_fx_text(std::string_view text, const std::string& source, std::int64_t first_line) {
  Parser p(text, source, first_line);
  return p.parse();
}

bool looks_like_fx_text(std::string_view text) noexcept {
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    if (i < text.size() && text[i] == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    break;
  }
  const auto rest = text.substr(i);
  return (rest.starts_with("class ") &&
          rest.substr(0, rest.find('\n')).find("Module") != std::string_view::npos) ||
         rest.starts_with("def forward(");
}

}  // namespace gparity::model
