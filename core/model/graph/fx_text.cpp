// Entry points of the FX text reader (fx_text.hpp); the layers are fx_lexer, fx_module,
// fx_statement, fx_value and fx_annotation.
#include "core/model/graph/fx_text.hpp"

#include "core/model/base/input_error.hpp"
#include "core/model/graph/fx_parser.hpp"

namespace gparity::model {

FxParse read_fx_text(std::string_view text, const std::string& source, std::int64_t first_line) {
  fx::Parser p(text, source, first_line);
  return p.parse();
}

Graph parse_fx_text(std::string_view text, const std::string& source, std::int64_t first_line) {
  FxParse r = read_fx_text(text, source, first_line);
  if (!r.problems.empty()) throw InputError(source, r.problems.front().line, r.problems.front().problem);
  if (!r.graph) throw InputError(source, first_line, "no FX module in the text");
  return std::move(*r.graph);
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
         rest.starts_with("def forward(") || rest.starts_with("ExportedProgram:");
}

}  // namespace gparity::model
