#pragma once
// The FX text reader's parser (internal to core/model/graph/fx_*.cpp), over the lexer's
// statements (fx_lexer.hpp), in three layers, one file each:
//   fx_module.cpp    module structure: classes (any name, nested), def forward and its signature,
//                    top-level text around the module (ExportedProgram: headers, signatures)
//   fx_statement.cpp one body statement: node lines, setitem, pytree lines, return, and the
//                    opaque node any statement becomes when it does not fit
//   fx_value.cpp     argument values: literals, node references, calls, sequences
// Errors inside one statement are thrown as StatementError and caught by the statement layer,
// which turns the statement into an Opaque node; only damage is recorded as a problem.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/fx_delta.hpp"
#include "core/model/graph/fx_lexer.hpp"
#include "core/model/graph/fx_text.hpp"

namespace gparity::model::fx {

/// Thrown inside a statement; `damage` false: valid text the reader does not model (no problem).
struct StatementError {
  std::int64_t line = 0;  // line in the text (1-based, relative)
  std::string problem;
  bool damage = true;
};

Device parse_device_text(std::string_view t, Graph& g);

/// A Python binary operator as FX prints operator.* calls.
struct BinaryOp {
  std::string_view text;
  std::string_view target;
  int precedence;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& source, std::int64_t first_line)
      : text_(text), source_(source), first_line_(first_line), lexer_(text, source) {}

  FxParse parse();
  /// fx_delta.hpp's entry points, over this text.
  std::optional<std::vector<FxStatement>> statements(const Graph& g);
  std::optional<Node> node_statement(const FxStatementContext& ctx, Graph& into);

 private:
  struct Body {
    Graph* g = nullptr;
    StringIndex names;              // node names in scope (views into the text or the graph's pool)
    std::uint32_t provisional = 0;  // signature placeholders that pytree lines may replace
    bool has_output = false;
    SourceLoc loc;
    // A statement read alone (fx_delta.hpp): names of another graph's nodes before
    // `outer_below` are in scope too, and node ids count from `id_base`.
    const StringIndex* outer = nullptr;
    NodeId outer_below = 0;
    NodeId id_base = 0;
  };
  [[nodiscard]] static const NodeId* lookup(const Body& body, std::string_view name) {
    if (const NodeId* id = body.names.find(name)) return id;
    if (body.outer != nullptr) {
      if (const NodeId* id = body.outer->find(name); id != nullptr && *id < body.outer_below) return id;
    }
    return nullptr;
  }

  // -- helpers over tokens (fx_module.cpp)
  [[noreturn]] static void fail(std::int64_t line, std::string problem) {
    throw StatementError{line, std::move(problem), true};
  }
  [[noreturn]] static void unsupported(std::int64_t line, std::string problem) {
    throw StatementError{line, std::move(problem), false};
  }
  void problem(std::int64_t line, std::string text) {
    out_.problems.push_back({first_line_ + line - 1, std::move(text)});
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
  [[nodiscard]] bool is_delim(std::uint32_t i) const;
  [[nodiscard]] bool is_keyword(const Statement& s, std::string_view kw) const {
    return s.tok_begin < s.tok_end && tok(s.tok_begin).type == Tok::Name && text(s.tok_begin) == kw;
  }
  [[nodiscard]] std::string_view span(std::uint32_t b, std::uint32_t e) const {
    return b >= e ? std::string_view{} : text_.substr(tok(b).begin, tok(e - 1).end - tok(b).begin);
  }
  void expect(std::uint32_t& p, std::uint32_t end, std::string_view op, std::int64_t line) const;
  [[nodiscard]] std::uint32_t skip_group(std::uint32_t p, std::uint32_t end) const;
  [[nodiscard]] std::uint32_t dotted_end(std::uint32_t p, std::uint32_t end) const;
  // End of an annotation starting at p: the first top-level ',' '=' or `end`.
  [[nodiscard]] std::uint32_t annotation_end(std::uint32_t p, std::uint32_t end) const;
  std::string_view comment_at(const Statement& s, std::int64_t line) const;

  // -- statements read alone (fx_delta.cpp)
  [[nodiscard]] FxStatementKind kind_of(const Statement& s) const;

  // -- structure (fx_module.cpp)
  std::size_t parse_class(std::size_t i, Graph& g);
  std::size_t skip_block(std::size_t i) const;
  std::size_t parse_forward(std::size_t i, Graph& g);
  void parse_signature(const Statement& s, Body& body);
  TensorMeta annotation(std::uint32_t b, std::uint32_t e, Graph& g);

  // -- statements (fx_statement.cpp)
  void statement(const Statement& s, Body& body);
  void body_statement(const Statement& s, Body& body);
  void opaque(const Statement& s, Body& body);
  NodeId add_node(Body& body, Node n, std::int64_t line);
  void drop_provisional(Body& body, std::int64_t line);
  void source_comment(std::string_view c, Body& body);
  void setitem(const Statement& s, std::uint32_t b, std::uint32_t e, Body& body);
  void output(const Statement& s, std::uint32_t p, std::uint32_t e, Body& body);
  void flatten_line(const Statement& s, std::uint32_t b, std::uint32_t e, Body& body);
  void rhs(const Statement& s, std::uint32_t p, std::uint32_t e, Body& body, Node n);
  void rename_placeholder(const Statement& s, std::string_view from, Body& body, Node& n);

  // -- values (fx_value.cpp)
  std::optional<std::pair<std::uint32_t, const BinaryOp*>> binary_split(std::uint32_t b,
                                                                        std::uint32_t e) const;
  void call_args(std::uint32_t& p, std::uint32_t e, Body& body, std::vector<Value>& args,
                 std::vector<Kwarg>& kwargs);
  Value value_until(std::uint32_t& p, std::uint32_t e, Body& body);
  Value value(std::uint32_t& p, std::uint32_t e, Body& body);
  Value sequence(std::uint32_t& p, std::uint32_t e, Body& body, std::string_view close, ValueKind kind);
  Value atom(std::uint32_t& p, std::uint32_t e, Body& body);
  static std::optional<Device> device_call(const std::vector<Value>& args, const std::vector<Kwarg>& kwargs,
                                           Graph& g);
  static Value number(std::string_view t, bool negative, Graph& g);

  std::string_view text_;
  const std::string& source_;
  std::int64_t first_line_;
  Lexer lexer_;
  FxParse out_;
};

}  // namespace gparity::model::fx
