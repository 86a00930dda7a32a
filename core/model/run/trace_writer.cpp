#include "core/model/run/trace_writer.hpp"

#include <cerrno>
#include <system_error>

#include "core/model/base/atomic_file.hpp"
#include "core/model/base/json_output.hpp"

namespace gparity::model {
namespace {

[[noreturn]] void io_error(const std::filesystem::path& path, const char* what) {
  throw std::system_error(errno, std::generic_category(), std::string(what) + " " + path.string());
}

}  // namespace

std::filesystem::path rank_trace_path(const std::filesystem::path& run_dir, int rank) {
  return run_dir / ("rank-" + std::to_string(rank) + ".jsonl");
}

std::filesystem::path manifest_path(const std::filesystem::path& run_dir) {
  return run_dir / "manifest.json";
}

void write_manifest(const std::filesystem::path& run_dir, const RunManifest& manifest) {
  std::filesystem::create_directories(run_dir);
  write_file_atomically(manifest_path(run_dir), json_output(to_json(manifest)) + '\n');
}

void TraceWriter::FileCloser::operator()(std::FILE* f) const noexcept {
  std::fclose(f);
}

TraceWriter::TraceWriter(const std::filesystem::path& run_dir, int rank, bool truncate)
    : TraceWriter(rank_trace_path(run_dir, rank), truncate) {}

TraceWriter::TraceWriter(const std::filesystem::path& file, bool truncate) : path_(file) {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  file_.reset(std::fopen(file.c_str(), truncate ? "wb" : "ab"));
  if (!file_) io_error(file, "cannot open");
}

TraceWriter::~TraceWriter() = default;
TraceWriter::TraceWriter(TraceWriter&&) noexcept = default;
TraceWriter& TraceWriter::operator=(TraceWriter&&) noexcept = default;

void TraceWriter::append_line(std::string line) {
  line += '\n';
  // One fwrite of the whole line, then a flush: a reader (or a crash) sees whole lines only,
  // except for the one being written.
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size() || std::fflush(file_.get()) != 0) {
    io_error(path_, "cannot write");
  }
  ++lines_;
}

void TraceWriter::write_params(const ParamsRecord& params) {
  if (last_params_ && *last_params_ == params.params) return;
  append_line(to_json(params).dump());
  last_params_ = params.params;
}

void TraceWriter::write_step(const StepRecord& step) {
  append_line(step_to_line(step));
}

void TraceWriter::write_buckets(const BucketsRecord& buckets) {
  append_line(to_json(buckets).dump());
}

void TraceWriter::write_devices(const DevicesRecord& devices) {
  append_line(to_json(devices).dump());
}

void TraceWriter::write_graph(const GraphRef& graph) {
  append_line(to_json(graph).dump());
}

void TraceWriter::write_event(const EventRecord& event) {
  append_line(to_json(event).dump());
}

void TraceWriter::write_node(const NodeRecord& node) {
  append_line(to_json(node).dump());
}

void TraceWriter::write_raw(const nlohmann::json& record) {
  if (!record.is_object() || !record.contains("type") || !record["type"].is_string()) {
    throw std::invalid_argument("trace record needs a string \"type\"");
  }
  append_line(record.dump());
}

}  // namespace gparity::model
