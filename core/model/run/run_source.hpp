#pragma once
// Opening a run for comparison, whatever form it is in: a trace v1 directory (manifest.json +
// rank-<r>.jsonl), a folder of the reference `rank<r>.jsonl` files, a torchtitan-style console
// log, or TensorBoard event files. Ranks load one at a time (load_rank), so comparing runs of
// many ranks holds only a rank or two in memory.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "core/model/run/trace_schema.hpp"

namespace gparity::model {

enum class RunFormat : std::uint8_t { Trace, SampleJsonl, TitanLog, TensorBoard };
std::string_view run_format_name(RunFormat f) noexcept;

struct RankEntry {
  int rank = 0;
  std::string path;  // the file holding this rank ("" when it is missing)
  bool present = true;
};

struct RunSource {
  std::string path;
  RunFormat format = RunFormat::Trace;
  RunManifest manifest;  // synthesised for imported formats
  std::vector<RankEntry> ranks;
  /// Values were parsed from rounded text: equality cannot prove bitwise parity.
  bool rounded = false;
  /// Run-level damage: rank files the manifest promises but that are missing, ...
  std::vector<TraceIssue> issues;
  /// Loads one rank (an index into `ranks` that is present). Throws InputError only when a file
  /// cannot be read at all; damage inside it goes into RankTrace::issues.
  std::function<RankTrace(const RankEntry&)> load;
};

/// What open_run reads, for messages.
inline constexpr std::string_view kRunFormats[] = {
    "trace v1 folder (manifest.json)", "folder of reference rank<r>.jsonl files",
    "TensorBoard event file or folder", "torchtitan console log (.log, .txt, .out)"};

/// Detects the format of `path` (files by content: core/model/formats/format_detect.hpp) and
/// opens it. Throws InputError naming the formats tried when it is none of them (an empty file,
/// a pickle, a console log that is not text).
RunSource open_run(const std::string& path);

/// Opens a trace v1 directory (manifest.json required).
RunSource open_trace_dir(const std::string& dir);

}  // namespace gparity::model
