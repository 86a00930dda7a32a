// libFuzzer target: FX print_readable text. Any input must parse or raise InputError.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/model/base/input_error.hpp"
#include "core/model/graph/fx_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto g = gparity::model::parse_fx_text(text, "fuzz");
    (void)gparity::model::fingerprint(g);
    (void)gparity::model::topological_order(g);
  } catch (const gparity::model::InputError&) {
  }
  return 0;
}
