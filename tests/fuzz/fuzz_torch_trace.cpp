// libFuzzer target: TORCH_TRACE logs. Damage is reported in problems, never thrown.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/model/formats/torch_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto t =
      gparity::model::parse_torch_trace(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  for (const auto& r : t.records) (void)t.payload(r);
  return 0;
}
