// libFuzzer target: torch.export `.pt2` archives. An input that starts like a zip is read by
// path as `gparity graph` does (members listed, the exported programs' JSON converted); any
// other input is taken as one serialized ExportedProgram (the JSON a `.pt2` holds), which is
// where most of the reader's logic is. Either gives graphs or raises InputError; each graph is
// fingerprinted and ordered as the commands do.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/formats/pt2.hpp"
#include "tests/fuzz/fuzz_files.hpp"

namespace {

void use(const gparity::model::Graph& g) {
  (void)gparity::model::fingerprint(g);
  (void)gparity::model::topological_order(g);
  for (const auto& sub : g.subgraphs) use(sub);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gparity::model;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    if (text.starts_with("PK")) {
      ZipLimits limits;  // small caps so the fuzzer explores instead of allocating
      limits.max_members = 256;
      limits.max_member_bytes = 1 << 20;
      for (const auto& e : read_pt2(gparity::fuzz::write_scratch("fuzz.pt2", std::span(data, size)), limits))
        use(e.graph);
    } else {
      use(exported_program_to_graph(parse_json(text, "fuzz.json"), "fuzz.json"));
    }
  } catch (const InputError&) {
  }
  return 0;
}
