// libFuzzer target: PyTorch DebugMode logs (debug_string() text with record_ids, hashes, stack
// lines, [nn.Mod] and [triton] entries; nightly's dump_tensor_hashes blocks). Any text gives
// records and issues; nothing may throw, hang or crash, and every record's strings must be
// readable (the zipping of hash trees with outputs is where a mismatch would index out of range).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/model/ops/debugmode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gparity::model::ops::looks_like_debugmode(text.substr(0, 1024));
  const auto log = gparity::model::ops::parse_debugmode_text(text, "fuzz.debug.txt", 0, 0);
  std::size_t bytes = 0;
  for (const auto& r : log.records) {
    bytes += log.op_name(r).size() + log.source_text(r).size();
    for (std::uint32_t i = 0; i < r.arg_count; ++i) bytes += log.tensor_text(log.arg(r, i)).size();
    for (std::uint32_t i = 0; i < r.out_count; ++i) {
      const auto& t = log.out(r, i);
      bytes += log.tensor_text(t).size();
      for (std::uint32_t h = 0; h < t.hash_count; ++h) bytes += log.hash_text(log.hash(t, h)).size();
    }
  }
  for (const auto& issue : log.issues) bytes += issue.problem.size();
  if (bytes == static_cast<std::size_t>(-1)) __builtin_trap();  // keeps the reads from being dropped
  return 0;
}
