#include "tests/support/tensorboard_writer.hpp"

#include <bit>
#include <filesystem>
#include <fstream>

#include "core/model/base/crc32c.hpp"
#include "core/model/formats/proto/tensorboard_event.pb.h"

namespace gparity::testing {
namespace {

namespace tb = gparity::tensorboard;

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i, v >>= 8) out += static_cast<char>(v & 0xFFU);
}

}  // namespace

std::string tfrecord(std::string_view payload) {
  std::string out;
  put_le(out, payload.size(), 8);
  put_le(out, model::mask_crc32c(model::crc32c(std::string_view(out))), 4);
  out += payload;
  put_le(out, model::mask_crc32c(model::crc32c(payload)), 4);
  return out;
}

EventFileWriter::EventFileWriter() {
  tb::Event ev;
  ev.set_wall_time(wall_time_);
  ev.set_file_version("brain.Event:2");
  append_record(ev.SerializeAsString());
}

void EventFileWriter::append_record(const std::string& payload) {
  offsets_.push_back(bytes_.size());
  bytes_ += tfrecord(payload);
  wall_time_ += 0.25;
}

void EventFileWriter::scalar(std::int64_t step, const std::string& tag, float value) {
  tb::Event ev;
  ev.set_wall_time(wall_time_);
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  append_record(ev.SerializeAsString());
}

void EventFileWriter::tensor_scalar(std::int64_t step, const std::string& tag, float value) {
  tb::Event ev;
  ev.set_wall_time(wall_time_);
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("scalars");
  v->mutable_tensor()->set_dtype(1);  // DT_FLOAT
  v->mutable_tensor()->add_float_val(value);
  append_record(ev.SerializeAsString());
}

void EventFileWriter::tensor_content_f64(std::int64_t step, const std::string& tag, double value) {
  tb::Event ev;
  ev.set_wall_time(wall_time_);
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->mutable_tensor()->set_dtype(2);  // DT_DOUBLE
  std::string content;
  put_le(content, std::bit_cast<std::uint64_t>(value), 8);
  v->mutable_tensor()->set_tensor_content(content);
  append_record(ev.SerializeAsString());
}

void EventFileWriter::histogram(std::int64_t step, const std::string& tag) {
  tb::Event ev;
  ev.set_wall_time(wall_time_);
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_histo(std::string("\x09\x00\x00\x00\x00\x00\x00\xf0\x3f", 9));  // HistogramProto{min: 1.0}
  append_record(ev.SerializeAsString());
}

void EventFileWriter::graph(std::string_view graph_bytes) {
  tb::Event ev;
  ev.set_wall_time(wall_time_);
  ev.set_graph_def(std::string(graph_bytes));
  append_record(ev.SerializeAsString());
}

void EventFileWriter::save(const std::string& path) const {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
}

}  // namespace gparity::testing
