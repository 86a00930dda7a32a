// libFuzzer target: torchtitan console logs (`[rankN]:` prefixes, ANSI colours, `step: N
// loss: X grad_norm: Y` lines). Any text gives ranks and issues; nothing may throw or crash.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/model/formats/import_titan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gparity::model::strip_ansi(text);
  const auto ranks = gparity::model::import_titan_text(text, "fuzz.log");
  for (const auto& r : ranks) {
    for (const auto& issue : r.issues) (void)issue.text();
  }
  return 0;
}
