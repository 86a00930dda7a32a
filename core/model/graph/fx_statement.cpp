// Statements of the FX text reader (fx_parser.hpp): node lines, setitem, pytree lines, return;
// any statement that does not fit becomes an Opaque node here.
#include <charconv>

#include "core/model/graph/fx_parser.hpp"

namespace gparity::model::fx {

void Parser::statement(const Statement& s, Body& body) {
  if (s.comment_only) {
    source_comment(lexer_.comments()[s.com_begin].text, body);
    return;
  }
  if (!s.error.empty()) {
    problem(s.error_line, s.error);
    return opaque(s, body);
  }
  // A docstring or `pass`: nothing the graph holds.
  if (s.tok_end == s.tok_begin + 1 && (tok(s.tok_begin).type == Tok::String || text(s.tok_begin) == "pass"))
    return;
  const std::size_t before = body.g->nodes.size();
  try {
    body_statement(s, body);
  } catch (const StatementError& e) {
    if (e.damage) problem(e.line, e.problem);
    // The statement may have added nothing or (pytree lines) several nodes before failing.
    if (body.g->nodes.size() == before) opaque(s, body);
  }
}

// The statement as an Opaque node: its text verbatim, the name it assigns, the nodes it mentions.
void Parser::opaque(const Statement& s, Body& body) {
  Graph& g = *body.g;
  Node n;
  n.kind = NodeKind::Opaque;
  n.line = first_line_ + s.line - 1;
  n.source = body.loc;
  n.target = g.intern(text_.substr(s.text_begin, s.text_end - s.text_begin));
  const std::uint32_t b = s.tok_begin;
  const std::uint32_t e = s.tok_end;
  // Names it binds: `a = ...`, `a: ann = ...`, `a, b = ...`.
  std::vector<std::string_view> bound;
  std::uint32_t p = b;
  while (p < e && tok(p).type == Tok::Name && text(p) != "return") {
    bound.push_back(text(p++));
    if (is_op(p, e, ",")) {
      ++p;
      continue;
    }
    break;
  }
  if (!(is_op(p, e, "=") || (bound.size() == 1 && is_op(p, e, ":")))) bound.clear();
  std::vector<NodeId> uses;
  for (std::uint32_t q = bound.empty() ? b : p; q < e; ++q) {
    if (tok(q).type != Tok::Name || (q > b && is_op(q - 1, e, "."))) continue;
    const NodeId* id = lookup(body, text(q));
    if (id == nullptr) continue;
    bool seen = false;
    for (const auto u : uses) seen = seen || u == *id;
    if (!seen) uses.push_back(*id);
  }
  for (const auto u : uses) n.args.push_back(Value::ref(u));
  n.comment = g.intern(b < e ? comment_at(s, tok(b).line) : std::string_view{});
  std::string name = bound.empty() ? std::string() : std::string(bound.front());
  if (name.empty() || lookup(body, name) != nullptr) {
    name = "opaque_" + std::to_string(n.line);
    for (int k = 1; lookup(body, name) != nullptr; ++k)
      name = "opaque_" + std::to_string(n.line) + "_" + std::to_string(k);
  }
  n.name = g.intern(name);
  const auto id = static_cast<NodeId>(body.id_base + g.nodes.size());
  body.names.insert(g.str(n.name), id);
  g.nodes.push_back(std::move(n));
  for (std::size_t k = 1; k < bound.size(); ++k) body.names.insert(bound[k], id);
  if (b < e && tok(b).type == Tok::Name && text(b) == "return") body.has_output = true;
}

NodeId Parser::add_node(Body& body, Node n, std::int64_t line) {
  const auto id = static_cast<NodeId>(body.id_base + body.g->nodes.size());
  const auto name = body.g->str(n.name);
  if (lookup(body, name) != nullptr || !body.names.insert(name, id))
    fail(line, "node '" + std::string(name) + "' is defined twice");
  body.g->nodes.push_back(std::move(n));
  return id;
}

// Drops the signature's pytree parameters once the body declares the real placeholders.
void Parser::drop_provisional(Body& body, std::int64_t line) {
  if (body.provisional == 0) return;
  if (body.g->nodes.size() != body.provisional) fail(line, "graph inputs declared after node lines");
  for (std::uint32_t k = 0; k < body.provisional; ++k) body.names.erase(body.g->str(body.g->nodes[k].name));
  body.g->nodes.erase(body.g->nodes.begin(), body.g->nodes.begin() + body.provisional);
  body.names.for_each([&](std::string_view, NodeId& id) { id -= body.provisional; });
  body.provisional = 0;
}

void Parser::source_comment(std::string_view c, Body& body) {
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

void Parser::body_statement(const Statement& s, Body& body) {
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
  if (tok(b).type != Tok::Name) unsupported(s.line, "expected a node line");
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
    const std::uint32_t ae = annotation_end(p, e);
    n.meta = annotation(p, ae, *body.g);
    p = ae;
    if (p == e) {  // `name: "ann"  # comment`: a placeholder of a pytree signature
      drop_provisional(body, s.line);
      n.kind = NodeKind::Placeholder;
      n.target = n.name;
      n.source = {};
      add_node(body, std::move(n), s.line);
      return;
    }
  }
  if (!is_op(p, e, "=")) unsupported(s.line, "expected '=' in node line");
  ++p;
  if (p >= e) unsupported(s.line, "expected an expression after '='");
  rhs(s, p, e, body, std::move(n));
}

// `x[idx] = v;  setitem = x;  ...`: FX prints operator.setitem as a Python assignment and
// binds the node's name in the statement after it.
void Parser::setitem(const Statement& s, std::uint32_t b, std::uint32_t e, Body& body) {
  Graph& g = *body.g;
  Node n;
  n.kind = NodeKind::CallFunction;
  n.target = g.intern("operator.setitem");
  n.line = first_line_ + s.line - 1;
  n.source = body.loc;
  std::uint32_t p = b;
  n.args.push_back(atom(p, e, body));
  if (n.args[0].kind != ValueKind::Node)
    unsupported(s.line, "item assignment to unknown node '" + std::string(text(b)) + "'");
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

void Parser::output(const Statement& s, std::uint32_t p, std::uint32_t e, Body& body) {
  if (body.has_output) unsupported(s.line, "a second return in forward()");
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
    if (p != e)
      unsupported(tok(p).line, "unexpected '" + std::string(text(p)) + "' after the returned value");
  } else {
    n.args.push_back(Value::none());
  }
  body.has_output = true;
  add_node(body, std::move(n), s.line);
}

void Parser::flatten_line(const Statement& s, std::uint32_t b, std::uint32_t e, Body& body) {
  std::uint32_t p = b;
  std::vector<std::uint32_t> names;
  while (p < e && tok(p).type == Tok::Name) {
    names.push_back(p++);
    if (!is_op(p, e, ",")) break;
    ++p;
  }
  if (!is_op(p, e, "=") || p + 1 >= e ||
      span(p + 1, dotted_end(p + 1, e)).find("tree_flatten_spec") == std::string_view::npos) {
    unsupported(s.line, "expected 'a, b, = fx_pytree.tree_flatten_spec(...)'");
  }
  drop_provisional(body, s.line);
  for (const auto t : names) {
    if (lookup(body, text(t)) != nullptr) continue;  // declared by an annotation line above
    Node n;
    n.kind = NodeKind::Placeholder;
    n.name = n.target = body.g->intern(text(t));
    n.line = first_line_ + tok(t).line - 1;
    add_node(body, std::move(n), tok(t).line);
  }
}

void Parser::rhs(const Statement& s, std::uint32_t p, std::uint32_t e, Body& body, Node n) {
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
  if (tok(p).type != Tok::Name) unsupported(s.line, "expected a call, an attribute or an operator after '='");
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
    unsupported(s.line, "unsupported node expression '" + std::string(callee) + "'");
  }
  if (is_op(de, e, "[") && parts == 1) {  // tuple indexing: operator.getitem
    const NodeId* id = lookup(body, callee);
    if (id == nullptr) unsupported(s.line, "indexing unknown node '" + std::string(callee) + "'");
    n.kind = NodeKind::CallFunction;
    n.target = g.intern("operator.getitem");
    n.args.push_back(Value::ref(*id));
    std::uint32_t q = de + 1;
    n.args.push_back(value(q, e, body));
    expect(q, e, "]", s.line);
    if (q != e) unsupported(s.line, "unexpected text after ']'");
    add_node(body, std::move(n), s.line);
    return;
  }
  if (!is_op(de, e, "(")) unsupported(s.line, "expected '(' after '" + std::string(callee) + "'");
  std::uint32_t q = de;
  if (callee.starts_with("self.")) {
    n.kind = NodeKind::CallModule;
    n.target = g.intern(callee.substr(5));
  } else if (parts == 2 && lookup(body, text(p)) != nullptr) {
    n.kind = NodeKind::CallMethod;
    n.target = g.intern(text(p + 2));
    n.args.push_back(Value::ref(*lookup(body, text(p))));
  } else {
    n.kind = NodeKind::CallFunction;
    n.target = g.intern(callee.starts_with("torch.ops.") ? callee.substr(10) : callee);
  }
  call_args(q, e, body, n.args, n.kwargs);
  if (q != e) unsupported(tok(q).line, "unexpected '" + std::string(text(q)) + "' after the call");
  add_node(body, std::move(n), s.line);
}

// `l_x_ = L_x_`: Dynamo names its placeholders by the source and renames them here.
void Parser::rename_placeholder(const Statement& s, std::string_view from, Body& body, Node& n) {
  const NodeId* found = lookup(body, from);
  if (found == nullptr || body.g->nodes[*found].kind != NodeKind::Placeholder ||
      body.g->nodes[*found].name != body.g->nodes[*found].target) {
    fail(s.line, "assignment from '" + std::string(from) + "', which is not an input of the graph");
  }
  const NodeId id = *found;
  Node& ph = body.g->nodes[id];
  body.names.erase(from);
  ph.name = n.name;
  if (!body.names.insert(body.g->str(ph.name), id)) {
    fail(s.line, "node '" + std::string(body.g->str(ph.name)) + "' is defined twice");
  }
  if (n.meta.kind != TensorMeta::Kind::None) ph.meta = std::move(n.meta);
}

}  // namespace gparity::model::fx
