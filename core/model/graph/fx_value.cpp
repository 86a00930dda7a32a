// Values of the FX text reader (fx_parser.hpp): literals, node references, calls, sequences,
// and the binary operators FX prints as Python expressions.
#include <charconv>

#include "core/model/graph/fx_parser.hpp"

namespace gparity::model::fx {
namespace {

constexpr std::string_view kMemoryFormats[] = {"torch.contiguous_format", "torch.channels_last",
                                               "torch.channels_last_3d", "torch.preserve_format"};
constexpr std::string_view kLayouts[] = {"torch.strided",    "torch.sparse_coo", "torch.sparse_csr",
                                         "torch.sparse_csc", "torch.sparse_bsr", "torch.sparse_bsc",
                                         "torch._mkldnn",    "torch.jagged"};

constexpr BinaryOp kBinaryOps[] = {
    {"|", "operator.or_", 1},       {"^", "operator.xor", 2},     {"&", "operator.and_", 3},
    {"<<", "operator.lshift", 4},   {">>", "operator.rshift", 4}, {"+", "operator.add", 5},
    {"-", "operator.sub", 5},       {"*", "operator.mul", 6},     {"/", "operator.truediv", 6},
    {"//", "operator.floordiv", 6}, {"%", "operator.mod", 6},     {"@", "operator.matmul", 6},
    {"**", "operator.pow", 8},      {"<", "operator.lt", 0},      {">", "operator.gt", 0},
    {"<=", "operator.le", 0},       {">=", "operator.ge", 0},     {"==", "operator.eq", 0},
    {"!=", "operator.ne", 0},
};

}  // namespace

// Top-level binary operator in [b, e), lowest precedence, rightmost (left-associative).
std::optional<std::pair<std::uint32_t, const BinaryOp*>> Parser::binary_split(std::uint32_t b,
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

// Parses `( args )` starting at the '(' at p.
void Parser::call_args(std::uint32_t& p, std::uint32_t e, Body& body, std::vector<Value>& args,
                       std::vector<Kwarg>& kwargs) {
  const std::int64_t line = tok(p).line;
  expect(p, e, "(", line);
  // Items counted first (top-level commas; `name =` starts a keyword), so each vector is
  // allocated once.
  std::size_t positional = 0, keywords = 0;
  const std::uint32_t group_end = skip_group(p - 1, e);
  for (std::uint32_t q = p; q + 1 < group_end;) {
    if (tok(q).type == Tok::Name && is_op(q + 1, group_end, "=")) {
      ++keywords;
    } else {
      ++positional;
    }
    while (q + 1 < group_end && !is_op(q, group_end, ",")) {
      q = tok(q).type == Tok::Op && is_open(text_[tok(q).begin]) ? skip_group(q, group_end) : q + 1;
    }
    ++q;
  }
  args.reserve(args.size() + positional);
  kwargs.reserve(keywords);
  while (!is_op(p, e, ")")) {
    if (p >= e) unsupported(line, "unbalanced brackets in call");
    if (tok(p).type == Tok::Name && is_op(p + 1, e, "=")) {
      Kwarg k;
      k.name = body.g->intern(text(p));
      p += 2;
      k.value = value(p, e, body);
      kwargs.push_back(std::move(k));
    } else {
      if (!kwargs.empty()) unsupported(tok(p).line, "positional argument after keyword argument");
      args.push_back(value(p, e, body));
    }
    if (!is_op(p, e, ")")) expect(p, e, ",", line);
  }
  ++p;
}

Value Parser::value_until(std::uint32_t& p, std::uint32_t e, Body& body) {
  const std::uint32_t start = p;
  Value v = value(p, e, body);
  if (p != e) unsupported(tok(start).line, "unsupported operand '" + std::string(span(start, e)) + "'");
  return v;
}

// One argument value; an expression beyond a single atom becomes Symbolic text.
Value Parser::value(std::uint32_t& p, std::uint32_t e, Body& body) {
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

Value Parser::sequence(std::uint32_t& p, std::uint32_t e, Body& body, std::string_view close,
                       ValueKind kind) {
  const std::int64_t line = tok(p).line;
  // Its items counted first (top-level commas), so the vector is allocated once.
  std::size_t commas = 0;
  const std::uint32_t group_end = skip_group(p, e);
  for (std::uint32_t q = p + 1; q < group_end; ++q) {
    if (tok(q).type != Tok::Op) continue;
    const char c = text_[tok(q).begin];
    if (is_open(c)) {
      q = skip_group(q, group_end) - 1;
    } else if (c == ',') {
      ++commas;
    }
  }
  ++p;
  std::vector<Value> items;
  items.reserve(commas + 1);
  bool trailing_comma = false;
  while (!is_op(p, e, close)) {
    if (p >= e) unsupported(line, "unbalanced brackets");
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

Value Parser::atom(std::uint32_t& p, std::uint32_t e, Body& body) {
  Graph& g = *body.g;
  if (p >= e) unsupported(e > 0 ? tok(e - 1).line : 1, "expected a value");
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
    unsupported(t.line, "unexpected '" + std::string(tt) + "'");
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
    if (const NodeId* id = lookup(body, name)) return Value::ref(*id);
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

std::optional<Device> Parser::device_call(const std::vector<Value>& args, const std::vector<Kwarg>& kwargs,
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

Value Parser::number(std::string_view t, bool negative, Graph& g) {
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

}  // namespace gparity::model::fx
