// libFuzzer target: Inductor's provenance in a TORCH_TRACE log (inductor_output_code, the node
// mappings of 2.8 and of 2.9 to nightly, kernel stack traces, triton_kernel_info). Any text gives
// output codes and problems; nothing may throw, hang or crash. Each output code is also parsed on
// its own (parse_output_code), and every launch's provenance and kernel source looked up, as
// diff/kernels and `gparity collectives` do.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/ops/inductor_provenance.hpp"
#include "core/model/ops/kernel_launch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace ops = gparity::model::ops;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> problems;
  const auto alone = ops::parse_output_code(text, problems, "fuzz.py");
  const auto rank = ops::parse_provenance(std::move(text), "fuzz.log");
  std::size_t bytes = alone.launches.size() + problems.size() + rank.problems.size();
  for (const auto& code : rank.codes) {
    for (const auto& site : code.launches) {
      bytes += ops::kernel_family(site.kernel).size();
      if (const auto* o = code.origin_of(site)) {
        bytes += o->post_nodes.size() + o->pre_nodes.size();
        for (const auto& f : o->frames) bytes += f.text().size();
      }
      if (const auto* s = code.source_of(site.kernel)) bytes += s->lines.size();
      if (const auto* c = code.config_of(site.kernel)) bytes += c->size();
    }
  }
  if (bytes == static_cast<std::size_t>(-1)) __builtin_trap();  // keeps the reads from being dropped
  return 0;
}
