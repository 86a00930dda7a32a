#include "core/model/formats/import_tensorboard.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>

#include "core/model/base/crc32c.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/formats/proto/tensorboard_event.pb.h"

namespace gparity::model {
namespace {

namespace tb = gparity::tensorboard;

constexpr std::uint64_t kHeaderBytes = 12;  // uint64 length + masked CRC of it
constexpr std::uint64_t kFooterBytes = 4;   // masked CRC of the payload

// tensorflow.DataType values of the scalar types read.
constexpr int kDtFloat = 1;
constexpr int kDtDouble = 2;
constexpr int kDtBfloat16 = 14;
constexpr int kDtHalf = 19;

std::uint64_t load_le(const std::byte* p, int n) noexcept {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

std::string hex32(std::uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s = "0x00000000";
  for (int i = 9; i >= 2; --i, v >>= 4) s[static_cast<std::size_t>(i)] = kDigits[v & 0xFU];
  return s;
}

std::string plural(std::uint64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// The one element of a scalar tensor, in its own dtype; nullopt for anything else.
std::optional<TraceScalar> tensor_scalar(const tb::TensorProto& t) {
  if (t.tensor_shape().unknown_rank()) return std::nullopt;
  for (const auto& d : t.tensor_shape().dim()) {
    if (d.size() != 1) return std::nullopt;  // only shapes [], [1], [1, 1], ... hold one value
  }
  const auto& content = t.tensor_content();
  const auto content_bits = [&content](std::size_t width) -> std::optional<std::uint64_t> {
    if (content.size() != width) return std::nullopt;
    return load_le(reinterpret_cast<const std::byte*>(content.data()), static_cast<int>(width));
  };
  switch (t.dtype()) {
    case kDtFloat:
      if (t.float_val_size() == 1) return TraceScalar::from_f32(t.float_val(0));
      if (const auto b = content_bits(4)) return TraceScalar::from_bits(*b, DType::F32);
      return std::nullopt;
    case kDtDouble:
      if (t.double_val_size() == 1) return TraceScalar::from_f64(t.double_val(0));
      if (const auto b = content_bits(8)) return TraceScalar::from_bits(*b, DType::F64);
      return std::nullopt;
    case kDtHalf:
    case kDtBfloat16: {
      const DType d = t.dtype() == kDtHalf ? DType::F16 : DType::BF16;
      if (t.half_val_size() == 1)
        return TraceScalar::from_bits(static_cast<std::uint32_t>(t.half_val(0)) & 0xFFFFU, d);
      if (const auto b = content_bits(2)) return TraceScalar::from_bits(*b, d);
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

std::optional<TraceScalar> value_scalar(const tb::Summary::Value& v) {
  if (v.value_case() == tb::Summary::Value::kSimpleValue) return TraceScalar::from_f32(v.simple_value());
  if (v.value_case() == tb::Summary::Value::kTensor) return tensor_scalar(v.tensor());
  return std::nullopt;
}

/// Moves the first scalar named by `tags` (in priority order) out of `scalars`; failing that,
/// the only one whose name starts with `prefix` (when `prefix` is not empty).
std::optional<TraceScalar> take_tagged(std::vector<NamedScalar>& scalars,
                                       std::span<const std::string_view> tags, std::string_view prefix,
                                       std::string& tag_out) {
  auto found = scalars.end();
  for (const auto tag : tags) {
    found =
        std::find_if(scalars.begin(), scalars.end(), [tag](const NamedScalar& s) { return s.name == tag; });
    if (found != scalars.end()) break;
  }
  if (found == scalars.end() && !prefix.empty()) {
    const auto starts = [prefix](const NamedScalar& s) { return s.name.starts_with(prefix); };
    // Several "grad_norm/..." tags (per layer, ...) name no single total: take none.
    if (std::count_if(scalars.begin(), scalars.end(), starts) == 1)
      found = std::find_if(scalars.begin(), scalars.end(), starts);
  }
  if (found == scalars.end()) return std::nullopt;
  tag_out = found->name;
  TraceScalar v = found->value;
  scalars.erase(found);
  return v;
}

/// What one rank's files add up to, before the steps are assembled.
struct Collected {
  std::map<std::int64_t, std::vector<NamedScalar>> steps;  // tag order as first seen
  std::uint64_t skipped_values = 0;                        // histograms, images, non-scalar tensors
  std::uint64_t repeated_values = 0;
  std::string first_repeat;  // "step S tag T"
};

void collect_event(const tb::Event& ev, Collected& c) {
  if (ev.what_case() != tb::Event::kSummary) return;  // file_version, graph_def, ...: not data
  for (const auto& v : ev.summary().value()) {
    const auto scalar = value_scalar(v);
    if (!scalar) {
      ++c.skipped_values;
      continue;
    }
    auto& step = c.steps[ev.step()];
    const bool seen =
        std::any_of(step.begin(), step.end(), [&v](const NamedScalar& s) { return s.name == v.tag(); });
    if (seen) {
      if (c.repeated_values++ == 0) c.first_repeat = "step " + std::to_string(ev.step()) + " tag " + v.tag();
      continue;
    }
    step.push_back({v.tag(), *scalar});
  }
}

}  // namespace

bool is_tensorboard_event_file(std::string_view filename) noexcept {
  return filename.starts_with("events.out.tfevents.");
}

std::optional<TraceIssue> scan_tfrecords(
    std::span<const std::byte> bytes, const std::string& source,
    const std::function<bool(std::span<const std::byte> payload, std::uint64_t offset)>& on_record) {
  std::uint64_t offset = 0;
  std::uint64_t records = 0;
  const std::uint64_t size = bytes.size();
  const auto damage = [&](TraceIssue::Kind kind, const std::string& what) {
    return TraceIssue{kind, source, 0,
                      "record " + std::to_string(records + 1) + " at byte offset " + std::to_string(offset) +
                          ": " + what + "; the " + plural(records, "record") +
                          " before it are used, the last " + plural(size - offset, "byte") + " are not"};
  };
  while (offset < size) {
    const std::uint64_t left = size - offset;
    const std::byte* p = bytes.data() + offset;
    if (left < kHeaderBytes) {
      return damage(TraceIssue::Kind::TruncatedTail,
                    "truncated (" + plural(left, "byte") + " of a 12-byte record header)");
    }
    const std::uint32_t length_crc = mask_crc32c(crc32c(bytes.subspan(offset, 8)));
    const auto stored_length_crc = static_cast<std::uint32_t>(load_le(p + 8, 4));
    if (length_crc != stored_length_crc) {
      return damage(TraceIssue::Kind::CorruptLine, "length CRC mismatch (stored " + hex32(stored_length_crc) +
                                                       ", computed " + hex32(length_crc) + ")");
    }
    const std::uint64_t length = load_le(p, 8);
    if (length > left - kHeaderBytes || left - kHeaderBytes - length < kFooterBytes) {
      return damage(TraceIssue::Kind::TruncatedTail,
                    "truncated (" + std::to_string(left) + " bytes left of a " + std::to_string(length) +
                        "-byte record, " + std::to_string(length + kHeaderBytes + kFooterBytes) +
                        " bytes framed)");
    }
    const auto payload = bytes.subspan(offset + kHeaderBytes, length);
    const std::uint32_t data_crc = mask_crc32c(crc32c(payload));
    const auto stored_data_crc = static_cast<std::uint32_t>(load_le(p + kHeaderBytes + length, 4));
    if (data_crc != stored_data_crc) {
      return damage(TraceIssue::Kind::CorruptLine, "data CRC mismatch (stored " + hex32(stored_data_crc) +
                                                       ", computed " + hex32(data_crc) + ")");
    }
    if (!on_record(payload, offset)) {
      return damage(TraceIssue::Kind::CorruptLine, "CRCs match but the payload is not a valid record");
    }
    ++records;
    offset += kHeaderBytes + length + kFooterBytes;
  }
  return std::nullopt;
}

RankTrace import_tensorboard_rank(std::span<const std::string> paths, int rank) {
  RankTrace trace;
  trace.rank = rank;
  trace.source = paths.empty() ? std::string() : paths.front();
  Collected c;
  for (const auto& path : paths) {
    const MappedFile file(path);
    tb::Event ev;
    auto issue = scan_tfrecords(file.bytes(), path, [&](std::span<const std::byte> payload, std::uint64_t) {
      if (payload.size() > static_cast<std::size_t>(INT_MAX)) return false;
      if (!ev.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) return false;
      collect_event(ev, c);
      return true;
    });
    if (issue) trace.issues.push_back(std::move(*issue));
  }
  if (c.repeated_values > 0) {
    trace.issues.push_back({TraceIssue::Kind::Note, trace.source, 0,
                            plural(c.repeated_values, "value") + " for a step and tag already seen (first: " +
                                c.first_repeat + ") ignored: the first value of each step and tag is used"});
  }
  if (c.skipped_values > 0) {
    trace.issues.push_back({TraceIssue::Kind::Note, trace.source, 0,
                            plural(c.skipped_values, "summary value") +
                                " that are not scalars (histograms, images, tensors) not compared"});
  }
  for (auto& [step, scalars] : c.steps) {
    StepRecord r;
    r.step = step;
    std::string tag;
    if ((r.loss = take_tagged(scalars, kTensorBoardLossTags, "", tag))) r.extra["loss_tag"] = tag;
    if ((r.grad_norm = take_tagged(scalars, kTensorBoardGradNormTags, "grad_norm/", tag)))
      r.extra["grad_norm_tag"] = tag;
    r.scalars = std::move(scalars);
    trace.steps.push_back(std::move(r));
    trace.step_table.push_back(kNoParamsTable);
  }
  return trace;
}

}  // namespace gparity::model
