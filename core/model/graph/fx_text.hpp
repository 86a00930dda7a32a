#pragma once
// Reader for torch.fx `print_readable()` text, as printed (with strides and devices) and as
// embedded in TORCH_TRACE payloads: `class X(torch.nn.Module):` with `def forward(...)`,
// annotated placeholders (in the signature or as `name: "ann"  # comment` lines after a pytree
// signature), node lines `name: "f32[4, 64][64, 1]cuda:0" = torch.ops.aten.mm.default(a, b);
// a = None`, method calls, Python operators, indexing, get_attr lines, `return ...`, `# File:`
// comments, and nested module classes (higher-order op bodies) as subgraphs.
// Written by PyTorch 2.1 through nightly: any class name (`<lambda>`, `GraphModule`, nested
// submodule classes), annotations quoted, unquoted or absent, `ExportedProgram:` text around the
// module. The text is parsed, never evaluated, in layers (fx_lexer, fx_module, fx_statement,
// fx_value); the parse is linear in the text size. A statement that does not fit the grammar
// becomes an Opaque node (graph.hpp) and never costs the rest of the graph; damage (a line that
// cannot be tokenized, a payload cut short, an unknown dtype) is reported as a problem with its
// line and the graph is still used as far as it goes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/graph.hpp"

namespace gparity::model {

struct FxProblem {
  std::int64_t line = 0;  // line in `source`
  std::string problem;
};

/// What the tolerant reader produced: the graph (none when the text holds no module at all) and
/// the damage found, in the order found (a line's own damage before the missing return it causes).
struct FxParse {
  std::optional<Graph> graph;
  std::vector<FxProblem> problems;
};

/// Parses one print_readable() module (with its nested classes), never throwing for content.
/// `first_line` is the line of text[0] in `source` (payloads embedded in a log start deeper).
FxParse read_fx_text(std::string_view text, const std::string& source, std::int64_t first_line = 1);

/// Strict form of read_fx_text: throws InputError(source, line, problem) for the first problem
/// or when there is no module; opaque nodes are not problems.
Graph parse_fx_text(std::string_view text, const std::string& source, std::int64_t first_line = 1);

/// Parses an FX annotation such as "f32[4, 64][64, 1]cuda:0", "i64[][]cuda:0", "bf16[s77, 96]",
/// "Sym(2*s0)". Throws InputError(source, line, ...) for an unknown dtype or bad brackets.
TensorMeta parse_fx_annotation(std::string_view annotation, Graph& g, const std::string& source,
                               std::int64_t line);

/// True when `text` looks like print_readable output (first code line is `class ...:`,
/// `def forward(` or `ExportedProgram:`): how the trace reader tells graph payloads from other text.
bool looks_like_fx_text(std::string_view text) noexcept;

}  // namespace gparity::model
