#pragma once
// Reading another copy of an FX payload by its differences (issue 35: `graph ranks` over 1,024
// ranks' logs of one graph). A payload already parsed is cut into the statements the reader
// found, each a run of whole lines with the nodes it produced (FxStatements); a second text is
// then compared with it statement by statement (diff/graphs/rank_text.hpp), and only a statement
// that differs is parsed, alone, as the reader would parse it at its place in the first text
// (parse_fx_node_statement). The reader is the one of fx_text.hpp: same grammar, same IR.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/graph.hpp"

namespace gparity::model {

/// What a statement of a forward body is, as far as its effect on the graph goes.
enum class FxStatementKind : std::uint8_t {
  Comment,  // a comment line: the source location of the nodes after it (`# File: ...`)
  Module,   // `class ...:` or `def forward(...)` (placeholders of the signature)
  Node,     // `name[: "ann"] = expr`: a node
  Input,    // `name: "ann"`: a pytree placeholder (the first drops the signature's)
  Setitem,  // `x[i] = v;  setitem = x`: a node named by the statement after it
  Return,   // `return ...`: the output node
  Rename,   // `l_x_ = L_x_`: renames an earlier placeholder (and may re-annotate it)
  Inputs,   // `a, b, = fx_pytree.tree_flatten_spec(...)`: declares or replaces placeholders
  Other,    // text around the module, docstrings, damage: anything else
};

/// One statement: whole lines [line, line + lines) of the text (1-based, blank lines after it
/// included), bytes [begin, end) of the text, and the top-level nodes [node_begin, node_end)
/// whose line lies in it.
struct FxStatement {
  std::uint32_t begin = 0, end = 0;
  std::uint32_t line = 0, lines = 0;
  NodeId node_begin = 0, node_end = 0;
  FxStatementKind kind = FxStatementKind::Other;
  /// parse_fx_node_statement may read another text of this statement at its place: a node or
  /// setitem line giving one call, method, module or attribute node, after the last statement that declares,
  /// renames or drops inputs and the last opaque or multi-node one (so the names in scope there
  /// are the final graph's names of the nodes before it).
  bool alone = false;
};

/// The statements of `text`, which parsed (read_fx_text(text, ..., first_line)) to `g` without
/// problems. nullopt when the text does not cut so: nested modules (subgraphs), nodes out of
/// statement order, a statement the lexer could not read.
std::optional<std::vector<FxStatement>> fx_statements(std::string_view text, const Graph& g,
                                                      std::int64_t first_line);

/// Where a statement stands in the graph of the first text: the graph, its node names (every
/// node's name, by position), the statement's node position `at` (names of nodes before it
/// resolve, as the reader resolves them there) and the source location in effect.
struct FxStatementContext {
  const Graph* graph = nullptr;
  const StringIndex* names = nullptr;
  NodeId at = 0;
  SourceLoc source;  // ids in *graph's pool
};

/// Parses `text`, whole lines holding one FxStatementKind::Node or Setitem statement, whose first
/// line is line `first_line` of the log, as the
/// reader parses it at `ctx.at`: the node it gives, its strings interned in `into`, references
/// by position in ctx.graph. nullopt when the text is anything else (several statements, a
/// comment, a rename, damage, a statement the reader would make opaque): the caller then reads
/// the whole text.
std::optional<Node> parse_fx_node_statement(std::string_view text, std::int64_t first_line,
                                            const FxStatementContext& ctx, Graph& into);

}  // namespace gparity::model
