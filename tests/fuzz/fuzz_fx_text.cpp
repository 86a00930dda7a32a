// libFuzzer target: FX print_readable text. The tolerant reader never throws for content: any
// input gives a graph and/or problems; the strict form parses or raises InputError.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/model/base/input_error.hpp"
#include "core/model/graph/fx_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = gparity::model::read_fx_text(text, "fuzz");
  if (r.graph) {
    (void)gparity::model::fingerprint(*r.graph);
    (void)gparity::model::topological_order(*r.graph);
    (void)r.graph->total_opaque();
  }
  try {
    (void)gparity::model::parse_fx_text(text, "fuzz");
  } catch (const gparity::model::InputError&) {
  }
  return 0;
}
