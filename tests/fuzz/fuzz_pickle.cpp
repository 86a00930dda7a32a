// libFuzzer target: the non-executing pickle reader and its interpretations (DCP metadata,
// torch.save tensor records, pickled Flight Recorder dumps). Any input must decode or raise
// InputError; nothing may crash, leak, hang or recurse without bound.

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/dcp_metadata.hpp"
#include "core/model/formats/flight_recorder_pickle.hpp"
#include "core/model/formats/pickle/pickle_interpret.hpp"
#include "core/model/formats/pickle/pickle_machine.hpp"

namespace pk = gparity::model::pickle;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
  pk::Limits limits;  // small caps so the fuzzer explores instead of allocating
  limits.max_values = 1 << 16;
  limits.max_memo = 1 << 12;
  limits.max_stack = 1 << 12;
  limits.max_container = 1 << 16;
  try {
    const auto doc = pk::decode(bytes, "fuzz.pkl", limits);
    try {
      (void)pk::to_json(doc, *doc.root).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } catch (const gparity::model::InputError&) {
    }
    try {
      pk::require_allowed(doc, pk::torch_save_allow_list());
      (void)pk::as_tensor(doc, *doc.root);
    } catch (const gparity::model::InputError&) {
    }
  } catch (const gparity::model::InputError&) {
  }
  try {
    (void)gparity::model::parse_dcp_metadata(bytes, "fuzz/.metadata");
  } catch (const gparity::model::InputError&) {
  }
  try {
    (void)gparity::model::parse_flight_recorder_pickle(bytes, "fuzz_rank0.pkl");
  } catch (const gparity::model::InputError&) {
  }
  return 0;
}
