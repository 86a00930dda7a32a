// libFuzzer target: Flight Recorder JSON dumps. Any input must parse or raise InputError.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/flight_recorder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto d = gparity::model::parse_flight_recorder(
        std::string_view(reinterpret_cast<const char*>(data), size), "rank0_fuzz.json");
    for (const auto& g : d.groups) (void)d.sequence(g.name);
  } catch (const gparity::model::InputError&) {
  }
  return 0;
}
