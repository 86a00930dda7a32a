// libFuzzer target: TensorBoard event files (TFRecord framing with two masked CRC-32C per record,
// Event protobufs inside), read by path as `gparity compare` does. Damage is a TraceIssue, never
// an exception (the importer throws only when a file cannot be opened), and nothing may crash.
// Inputs are mostly rejected by the CRCs; the seeds are real files, so the mutations that
// matter (a payload changed together with its CRC) come from the fuzzer's CMP tracing.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/model/formats/import_tensorboard.hpp"
#include "tests/fuzz/fuzz_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The framing alone, with a callback that accepts every payload.
  std::uint64_t payload_bytes = 0;
  (void)gparity::model::scan_tfrecords(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz",
                                       [&](std::span<const std::byte> payload, std::uint64_t) {
                                         payload_bytes += payload.size();
                                         return true;
                                       });
  const std::vector<std::string> paths = {
      gparity::fuzz::write_scratch("events.out.tfevents.fuzz", std::span(data, size))};
  const auto trace = gparity::model::import_tensorboard_rank(paths, 0);
  for (std::size_t i = 0; i < trace.steps.size(); ++i) (void)trace.table_of(i);
  for (const auto& issue : trace.issues) (void)issue.text();
  return 0;
}
