// libFuzzer target: NCCL graph XML (expat). Any input parses or raises InputError. What parses
// must survive what `gparity nccl-rings` does with it: the ring rewrite (each pattern) either
// succeeds or raises InputError, and the file written afterwards, in NCCL's layout, must parse
// again to the same text (a dump we accept and then write unreadable would break NCCL's init).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/nccl_graph.hpp"

namespace {

void round_trip(const gparity::model::NcclGraphFile& f) {
  const std::string written = gparity::model::write_nccl_graph_xml(f);
  try {
    const auto again = gparity::model::parse_nccl_graph_xml(written, "fuzz (written)");
    if (gparity::model::write_nccl_graph_xml(again) != written) {
      std::fprintf(stderr, "fuzz_nccl_graph: writing the re-read file changed it\n");
      std::abort();
    }
  } catch (const gparity::model::InputError& e) {
    std::fprintf(stderr, "fuzz_nccl_graph: the written file does not parse: %s\n", e.what());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gparity::model;
  try {
    const auto f =
        parse_nccl_graph_xml(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.xml");
    for (const auto& g : f.graphs()) (void)g.is_ring();
    (void)f.ring_graph();
    round_trip(f);
    for (const auto p : {RingPattern::ReverseOdd, RingPattern::Rotate, RingPattern::Random}) {
      auto copy = f;
      try {
        const auto r = rewrite_ring_orders(copy, p, 7);
        for (const auto& order : r.after) (void)canonical_ring(order);
        round_trip(copy);
      } catch (const InputError&) {
      }
    }
  } catch (const InputError&) {
  }
  return 0;
}
