#pragma once
// Writes TensorBoard event files the way torch.utils.tensorboard does, for tests: TFRecord
// framing (uint64 length, masked CRC-32C of it, the Event protobuf, masked CRC-32C of it), a
// file_version event first, then one event per scalar (add_scalar -> Summary.Value.simple_value).
// Record offsets are kept so tests can damage a chosen record.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::testing {

class EventFileWriter {
 public:
  /// Starts with the file_version event ("brain.Event:2") every writer puts first.
  EventFileWriter();

  /// add_scalar(tag, value, step): a float32 simple_value.
  void scalar(std::int64_t step, const std::string& tag, float value);
  /// A new-style scalar: a rank-0 DT_FLOAT tensor holding `value` in float_val.
  void tensor_scalar(std::int64_t step, const std::string& tag, float value);
  /// A rank-0 DT_DOUBLE tensor whose value is in tensor_content (little-endian bytes).
  void tensor_content_f64(std::int64_t step, const std::string& tag, double value);
  /// A histogram summary value (not a scalar: importers skip it).
  void histogram(std::int64_t step, const std::string& tag);
  /// A graph_def event (opaque bytes here).
  void graph(std::string_view graph_bytes);

  /// The file so far.
  [[nodiscard]] const std::string& bytes() const noexcept { return bytes_; }
  /// Byte offset of each record, in order (record 0 is the file_version event).
  [[nodiscard]] const std::vector<std::size_t>& record_offsets() const noexcept { return offsets_; }
  /// Writes the file to `path` (folders created).
  void save(const std::string& path) const;

 private:
  void append_record(const std::string& payload);
  std::string bytes_;
  std::vector<std::size_t> offsets_;
  double wall_time_ = 1.7e9;
};

/// Frames `payload` as one TFRecord.
std::string tfrecord(std::string_view payload);

}  // namespace gparity::testing
