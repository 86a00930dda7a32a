#pragma once
// Writes a trace v1 run directory (docs/trace-format.md): manifest.json once, then one
// rank-<r>.jsonl per rank, one record a line. Each record is appended with a single write and
// flushed before the call returns, so a crash loses at most the line in flight. One writer per
// rank; a writer is not thread-safe (callers serialise their own records).

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/run/trace_schema.hpp"

namespace gparity::model {

/// Path of one rank's trace inside a run directory: <dir>/rank-<r>.jsonl.
std::filesystem::path rank_trace_path(const std::filesystem::path& run_dir, int rank);
/// Path of the manifest: <dir>/manifest.json.
std::filesystem::path manifest_path(const std::filesystem::path& run_dir);

/// Writes manifest.json (creating the directory) through an AtomicFile (base/atomic_file.hpp):
/// readers never see half a manifest. Throws OutputError naming the file and the OS error, or
/// std::filesystem::filesystem_error when the directory cannot be made. The manifest declares
/// the steps the run will record before any is written: a comparison counts every declared step
/// its trace lacks as missing evidence (INCOMPLETE, exit 1), so a run cut short by a full disk
/// is never taken for a complete one.
void write_manifest(const std::filesystem::path& run_dir, const RunManifest& manifest);

class TraceWriter {
 public:
  /// Opens <run_dir>/rank-<rank>.jsonl for appending (creating the directory). With
  /// `truncate`, an existing file is emptied first. Throws std::system_error on failure.
  TraceWriter(const std::filesystem::path& run_dir, int rank, bool truncate = true);
  /// Appends to exactly this file.
  explicit TraceWriter(const std::filesystem::path& file, bool truncate = true);
  ~TraceWriter();
  TraceWriter(TraceWriter&&) noexcept;
  TraceWriter& operator=(TraceWriter&&) noexcept;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  /// Writes the params table if it differs from the last one written (the first call always
  /// writes). Step hash arrays must be aligned with it.
  void write_params(const ParamsRecord& params);
  void write_step(const StepRecord& step);
  void write_buckets(const BucketsRecord& buckets);
  void write_devices(const DevicesRecord& devices);
  void write_graph(const GraphRef& graph);
  void write_event(const EventRecord& event);
  void write_node(const NodeRecord& node);
  /// Any JSON object with a "type" (for record types this writer does not model).
  void write_raw(const nlohmann::json& record);

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// Lines written by this writer.
  [[nodiscard]] std::int64_t lines_written() const noexcept { return lines_; }

 private:
  void append_line(std::string line);
  struct FileCloser {
    void operator()(std::FILE* f) const noexcept;
  };
  std::filesystem::path path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::optional<std::vector<ParamInfo>> last_params_;
  std::int64_t lines_ = 0;
};

}  // namespace gparity::model
