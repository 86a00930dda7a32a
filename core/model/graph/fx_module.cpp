// Module structure of the FX text reader (fx_parser.hpp): the top level (one module, possibly
// inside `ExportedProgram:` text), classes with any name and nested classes, `def forward` and
// its signature; statements go to fx_statement.cpp.
#include <algorithm>

#include "core/model/base/input_error.hpp"
#include "core/model/graph/fx_parser.hpp"

namespace gparity::model::fx {

// ---- helpers over tokens ---------------------------------------------------------------------

bool Parser::is_delim(std::uint32_t i) const {
  const Token& t = tok(i);
  if (t.type != Tok::Op || t.end - t.begin != 1) return false;
  const char c = text_[t.begin];
  return c == ',' || c == ')' || c == ']' || c == '}' || c == ':';
}

void Parser::expect(std::uint32_t& p, std::uint32_t end, std::string_view op, std::int64_t line) const {
  if (!is_op(p, end, op)) unsupported(p < end ? tok(p).line : line, "expected '" + std::string(op) + "'");
  ++p;
}

// Index after the bracket group opening at p.
std::uint32_t Parser::skip_group(std::uint32_t p, std::uint32_t end) const {
  if (p < end && tok(p).type == Tok::Op && is_open(text_[tok(p).begin])) {
    // Brackets nest properly in a statement the lexer accepted: its match is the group's end.
    const std::uint32_t m = lexer_.match(p);
    return m < end ? m + 1 : end;
  }
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
std::uint32_t Parser::dotted_end(std::uint32_t p, std::uint32_t end) const {
  ++p;
  while (p + 1 < end && is_op(p, end, ".") && tok(p + 1).type == Tok::Name) p += 2;
  return p;
}

std::uint32_t Parser::annotation_end(std::uint32_t p, std::uint32_t end) const {
  while (p < end && !is_op(p, end, ",") && !is_op(p, end, "=")) {
    p = tok(p).type == Tok::Op && is_open(text_[tok(p).begin]) ? skip_group(p, end) : p + 1;
  }
  return p;
}

std::string_view Parser::comment_at(const Statement& s, std::int64_t line) const {
  for (std::uint32_t c = s.com_begin; c < s.com_end; ++c) {
    if (lexer_.comments()[c].line == line) return lexer_.comments()[c].text;
  }
  return {};
}

// ---- structure -------------------------------------------------------------------------------

FxParse Parser::parse() {
  lexer_.run();
  const auto& st = lexer_.statements();
  std::size_t i = 0;
  std::int64_t first_other = 0;  // first line that is neither a module nor a comment
  while (i < st.size()) {
    const Statement& s = st[i];
    if (s.comment_only) {
      ++i;
      continue;
    }
    const bool is_class = is_keyword(s, "class");
    const bool is_def =
        is_keyword(s, "def") && s.tok_begin + 1 < s.tok_end && text(s.tok_begin + 1) == "forward";
    if (!is_class && !is_def) {
      // Text around the module (`ExportedProgram:`, `Graph signature: ...`): not part of the graph.
      if (first_other == 0) first_other = s.line;
      ++i;
      continue;
    }
    Graph g;
    if (is_class) {
      i = parse_class(i, g);
    } else {
      g.name = g.intern("forward");
      i = parse_forward(i, g);
    }
    if (!out_.graph) {
      out_.graph = std::move(g);
    } else {
      out_.graph->subgraphs.push_back(std::move(g));  // a second module at the top level: kept
    }
  }
  if (!out_.graph) {
    if (first_other != 0) {
      problem(first_other, "expected 'class ...(torch.nn.Module):' or 'def forward(...)'");
    } else {
      problem(1, "no FX module in the text");
    }
  }
  return std::move(out_);
}

// Index of the first statement after the block that statement i opens.
std::size_t Parser::skip_block(std::size_t i) const {
  const auto& st = lexer_.statements();
  const std::int32_t indent = st[i].indent;
  ++i;
  while (i < st.size() && (st[i].comment_only || st[i].indent > indent)) ++i;
  return i;
}

std::size_t Parser::parse_class(std::size_t i, Graph& g) {
  const auto& st = lexer_.statements();
  const Statement& s = st[i];
  const std::uint32_t e = s.tok_end;
  // The name as printed, whatever it is: `GraphModule`, `<lambda>`, `inner_f`, `Repro`.
  std::uint32_t p = s.tok_begin + 1;
  std::uint32_t q = p;
  while (q < e && !is_op(q, e, "(") && !is_op(q, e, ":")) ++q;
  g.name = g.intern(q > p ? span(p, q) : std::string_view("<unnamed>"));
  if (!s.error.empty()) problem(s.error_line, s.error);
  bool have_forward = false;
  ++i;
  while (i < st.size() && (st[i].comment_only || st[i].indent > s.indent)) {
    const Statement& b = st[i];
    if (b.comment_only) {
      ++i;
    } else if (is_keyword(b, "def") && b.tok_begin + 1 < b.tok_end && text(b.tok_begin + 1) == "forward" &&
               !have_forward) {
      have_forward = true;
      i = parse_forward(i, g);
    } else if (is_keyword(b, "class")) {
      Graph sub;
      i = parse_class(i, sub);
      g.subgraphs.push_back(std::move(sub));
    } else {
      // `def __init__`, class attributes, a docstring: nothing the graph holds.
      if (!b.error.empty()) problem(b.error_line, b.error);
      i = skip_block(i);
    }
  }
  if (!have_forward) problem(s.line, "class " + std::string(g.str(g.name)) + " has no forward()");
  return i;
}

std::size_t Parser::parse_forward(std::size_t i, Graph& g) {
  const auto& st = lexer_.statements();
  const Statement& s = st[i];
  Body body;
  body.g = &g;
  // At most a node per statement but for pytree lines: no regrowth of the node vector.
  const std::size_t statements = skip_block(i) - i;
  g.nodes.reserve(g.nodes.size() + statements);
  body.names.reserve(statements);
  g.strings.reserve(g.strings.size() + statements * 2);  // a name per node, and some targets
  if (!s.error.empty()) problem(s.error_line, s.error);
  try {
    parse_signature(s, body);
  } catch (const StatementError& e) {
    if (e.damage) problem(e.line, e.problem);
  }
  body.provisional = static_cast<std::uint32_t>(g.nodes.size());
  ++i;
  while (i < st.size() && (st[i].comment_only || st[i].indent > s.indent)) {
    // A comment at or left of the def's indent belongs to the enclosing scope.
    if (st[i].comment_only && st[i].indent <= s.indent) break;
    statement(st[i], body);
    ++i;
  }
  if (!body.has_output) {
    problem(s.line, "forward() of " + std::string(g.str(g.name)) + " has no return (payload cut short?)");
  }
  return i;
}

void Parser::parse_signature(const Statement& s, Body& body) {
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
    if (p >= close && !star.empty()) break;  // a bare `*` separator
    if (p >= close || tok(p).type != Tok::Name)
      fail(tok(std::min(p, close)).line, "expected a parameter name");
    const Token& name = tok(p++);
    TensorMeta meta;
    if (is_op(p, close, ":")) {
      ++p;
      const std::uint32_t ae = annotation_end(p, close);
      meta = annotation(p, ae, *body.g);
      p = ae;
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
}

// An annotation over tokens [b, e): a string literal ("f32[2]", "Sym(s0)") or unquoted text
// (`torch.Tensor`, `f32[2]`, `Sym(s0)`). An unknown dtype in a quoted annotation is damage
// (reported, kept verbatim); unquoted Python types are kept verbatim silently.
TensorMeta Parser::annotation(std::uint32_t b, std::uint32_t e, Graph& g) {
  if (b >= e) return {};
  const std::int64_t line = tok(b).line;
  std::string decoded;
  std::string_view a;
  const bool quoted = e == b + 1 && tok(b).type == Tok::String;
  if (quoted) {
    const std::string_view lit = text(b);
    // The common case, a plain "..." literal, is parsed in place without a copy.
    const auto plain = [](std::string_view v) {
      for (const char c : v) {
        if (c == '\\' || c == '"' || c == '\'') return false;
      }
      return true;
    };
    if (lit.size() >= 2 && (lit.front() == '"' || lit.front() == '\'') && lit.back() == lit.front() &&
        plain(lit.substr(1, lit.size() - 2))) {
      a = lit.substr(1, lit.size() - 2);
    } else {
      const auto s = decode_string(lit);
      if (!s) fail(line, "malformed string literal");
      decoded = *s;
      a = decoded;
    }
  } else {
    a = span(b, e);
  }
  try {
    return parse_fx_annotation(a, g, source_, first_line_ + line - 1);
  } catch (const InputError& err) {
    if (quoted) problem(line, err.problem());
    TensorMeta m;
    m.kind = TensorMeta::Kind::Other;
    m.sym = g.intern(a);
    return m;
  }
}

}  // namespace gparity::model::fx
