// Statements of an FX payload read alone (fx_delta.hpp), with the reader's own layers
// (fx_parser.hpp): the same lexer cuts the text, the same statement parser reads a node line.
#include "core/model/graph/fx_delta.hpp"

#include "core/model/base/input_error.hpp"
#include "core/model/graph/fx_parser.hpp"

namespace gparity::model {

namespace fx {

FxStatementKind Parser::kind_of(const Statement& s) const {
  if (s.comment_only) return FxStatementKind::Comment;
  if (!s.error.empty() || s.tok_begin == s.tok_end) return FxStatementKind::Other;
  if (is_keyword(s, "class") || is_keyword(s, "def")) return FxStatementKind::Module;
  const std::uint32_t b = s.tok_begin;
  std::uint32_t e = s.tok_end;
  for (std::uint32_t p = b; p < e; ++p) {  // as body_statement: the release list after ';' is cut
    if (tok(p).type == Tok::Op && is_open(text_[tok(p).begin])) {
      p = skip_group(p, e) - 1;
    } else if (is_op(p, e, ";")) {
      e = p;
      break;
    }
  }
  if (tok(b).type != Tok::Name) return FxStatementKind::Other;
  if (text(b) == "return") return FxStatementKind::Return;
  if (is_op(b + 1, e, "[")) return FxStatementKind::Setitem;
  if (is_op(b + 1, e, ",")) return FxStatementKind::Inputs;  // a pytree flatten line
  std::uint32_t p = b + 1;
  if (is_op(p, e, ":")) {
    p = annotation_end(p + 1, e);
    if (p == e) return FxStatementKind::Input;
  }
  if (!is_op(p, e, "=")) return FxStatementKind::Other;
  ++p;
  if (p + 1 == e && tok(p).type == Tok::Name) return FxStatementKind::Rename;
  return FxStatementKind::Node;
}

std::optional<std::vector<FxStatement>> Parser::statements(const Graph& g) {
  if (!g.subgraphs.empty()) return std::nullopt;
  lexer_.run();
  const auto& lexed = lexer_.statements();
  if (lexed.empty()) return std::nullopt;
  std::vector<std::uint32_t> line_start{0};
  for (std::size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_start.push_back(static_cast<std::uint32_t>(i + 1));
  }
  const auto lines_total = static_cast<std::uint32_t>(line_start.size());
  std::vector<FxStatement> out(lexed.size());
  for (std::size_t i = 0; i < lexed.size(); ++i) {
    FxStatement& s = out[i];
    s.kind = kind_of(lexed[i]);
    // The first statement takes the lines before it, each one the blank lines after it.
    s.line = i == 0 ? 1 : static_cast<std::uint32_t>(lexed[i].line);
    const std::uint32_t next =
        i + 1 < lexed.size() ? static_cast<std::uint32_t>(lexed[i + 1].line) : lines_total + 1;
    if (next <= s.line || next - 1 > lines_total) return std::nullopt;
    s.lines = next - s.line;
    s.begin = line_start[s.line - 1];
    s.end = i + 1 < lexed.size() ? line_start[next - 1] : static_cast<std::uint32_t>(text_.size());
  }
  // Each top-level node belongs to the statement holding its line; statements in node order.
  std::size_t k = 0;
  NodeId i = 0;
  const auto n = static_cast<NodeId>(g.nodes.size());
  for (; k < out.size(); ++k) {
    out[k].node_begin = i;
    while (i < n) {
      const std::int64_t rel = g.nodes[i].line - first_line_ + 1;
      if (rel < out[k].line) return std::nullopt;
      if (rel >= static_cast<std::int64_t>(out[k].line) + out[k].lines) break;
      ++i;
    }
    out[k].node_end = i;
  }
  if (i != n) return std::nullopt;
  std::size_t first_alone = 0;
  for (std::size_t s = 0; s < out.size(); ++s) {
    const FxStatement& st = out[s];
    bool scope = st.kind == FxStatementKind::Module || st.kind == FxStatementKind::Rename ||
                 st.kind == FxStatementKind::Inputs || st.kind == FxStatementKind::Input ||
                 st.node_end > st.node_begin + 1;
    for (NodeId node = st.node_begin; node < st.node_end; ++node)
      scope = scope || g.nodes[node].kind == NodeKind::Placeholder || g.nodes[node].kind == NodeKind::Opaque;
    if (scope) first_alone = s + 1;
  }
  for (std::size_t s = first_alone; s < out.size(); ++s) {
    FxStatement& st = out[s];
    const bool one = st.node_end == st.node_begin + 1;
    const NodeKind kind = one ? g.nodes[st.node_begin].kind : NodeKind::Output;
    st.alone = (st.kind == FxStatementKind::Node || st.kind == FxStatementKind::Setitem) &&
               (kind == NodeKind::CallFunction || kind == NodeKind::CallMethod ||
                kind == NodeKind::CallModule || kind == NodeKind::GetAttr);
  }
  return out;
}

std::optional<Node> Parser::node_statement(const FxStatementContext& ctx, Graph& into) {
  lexer_.run();
  const auto& st = lexer_.statements();
  // Returns and pytree placeholders change more than their node: read whole.
  if (st.size() != 1) return std::nullopt;
  const FxStatementKind kind = kind_of(st[0]);
  if (kind != FxStatementKind::Node && kind != FxStatementKind::Setitem) return std::nullopt;
  const Statement& s = st[0];
  const Graph& g = *ctx.graph;
  Body body;
  body.g = &into;
  body.outer = ctx.names;
  body.outer_below = ctx.at;
  body.id_base = static_cast<NodeId>(ctx.at - into.nodes.size());
  body.loc.file = into.intern(g.str(ctx.source.file));
  body.loc.line = ctx.source.line;
  body.loc.function = into.intern(g.str(ctx.source.function));
  body.loc.code = into.intern(g.str(ctx.source.code));
  const std::size_t before = into.nodes.size();
  statement(s, body);
  if (!out_.problems.empty() || into.nodes.size() != before + 1) {
    into.nodes.resize(before);
    return std::nullopt;
  }
  Node n = std::move(into.nodes.back());
  into.nodes.pop_back();
  if (n.kind == NodeKind::Opaque || n.kind == NodeKind::Placeholder || n.kind == NodeKind::Output)
    return std::nullopt;
  return n;
}

}  // namespace fx

std::optional<std::vector<FxStatement>> fx_statements(std::string_view text, const Graph& g,
                                                      std::int64_t first_line) {
  const std::string source = "FX payload";
  try {
    fx::Parser p(text, source, first_line);
    return p.statements(g);
  } catch (const InputError&) {  // 4 GiB and more: not cut
    return std::nullopt;
  }
}

std::optional<Node> parse_fx_node_statement(std::string_view text, std::int64_t first_line,
                                            const FxStatementContext& ctx, Graph& into) {
  const std::string source = "FX payload";
  try {
    fx::Parser p(text, source, first_line);
    return p.node_statement(ctx, into);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

}  // namespace gparity::model
