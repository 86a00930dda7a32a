// libFuzzer target: run traces in JSON Lines, read by path as `gparity compare` reads a rank
// file: trace v1 (docs/trace-format.md; the fast path for step lines, raw scanner and base64 hash
// arrays, and the full parser for the rest) and the reference `rank<r>.jsonl` format of the
// bundled samples (as rank 3, so shard offsets are inferred). Damage is a TraceIssue with its
// line, never an exception (the readers throw only when the file cannot be opened), and nothing
// may crash.

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/model/formats/import_samples.hpp"
#include "core/model/run/trace_reader.hpp"
#include "tests/fuzz/fuzz_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = gparity::fuzz::write_scratch("rank0.jsonl", std::span(data, size));
  const auto trace = gparity::model::read_rank_trace(path, 0);
  for (std::size_t i = 0; i < trace.steps.size(); ++i) (void)trace.table_of(i);
  for (const auto& issue : trace.issues) (void)issue.text();
  const auto samples = gparity::model::import_sample_rank(path, 3);
  for (const auto& issue : samples.issues) (void)issue.text();
  return 0;
}
