#pragma once
// Reader for torch.fx `print_readable()` text, as printed (with strides and devices) and as
// embedded in TORCH_TRACE payloads: `class X(torch.nn.Module):` with `def forward(...)`,
// annotated placeholders (in the signature or as `name: "ann"  # comment` lines after a pytree
// signature), node lines `name: "f32[4, 64][64, 1]cuda:0" = torch.ops.aten.mm.default(a, b);
// a = None`, method calls, Python operators, indexing, get_attr lines, `return ...`, `# File:`
// comments, and nested module classes (higher-order op bodies) as subgraphs.
// The text is parsed, never evaluated. Anything that does not fit the grammar is an InputError
// naming the source and the line; the parse is linear in the text size.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/graph/graph.hpp"

namespace gparity::model {

/// Parses one print_readable() module (with its nested classes). `first_line` is the line of
/// text[0] in `source` (payloads embedded in a log start deeper in the file).
Graph parse_fx_text(std::string_view text, const std::string& source, std::int64_t first_line = 1);

/// Parses an FX annotation such as "f32[4, 64][64, 1]cuda:0", "i64[][]cuda:0", "bf16[s77, 96]",
/// "Sym(2*s0)". Throws InputError(source, line, ...) for an unknown dtype or bad brackets.
TensorMeta parse_fx_annotation(std::string_view annotation, Graph& g, const std::string& source,
                               std::int64_t line);

/// True when `text` looks like print_readable output (first code line is `class ...:` or
/// `def forward(`): how the trace reader tells graph payloads from other text.
bool looks_like_fx_text(std::string_view text) noexcept;

}  // namespace gparity::model
