// The trace schema's values (trace_schema.hpp): scalars, placements, hash-array names, the
// device-memory event. The hash arrays' base64 wire form is trace_hash_array.cpp's; every
// record's JSON form is trace_json.cpp's.

#include "core/model/run/trace_schema.hpp"

#include <bit>
#include <cmath>

#include "core/model/base/input_error.hpp"

namespace gparity::model {
namespace {

using nlohmann::json;

double float_from_half_bits(std::uint16_t h, bool bf16) noexcept {
  if (bf16) return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int frac = h & 0x3ff;
  double v = 0;
  if (exp == 0) {
    v = std::ldexp(frac, -24);
  } else if (exp == 31) {
    v = frac ? std::nan("") : INFINITY;
  } else {
    v = std::ldexp(frac + 1024, exp - 25);
  }
  return sign ? -v : v;
}

}  // namespace

TraceScalar TraceScalar::from_f32(float v) noexcept {
  return {static_cast<double>(v), std::bit_cast<std::uint32_t>(v), DType::F32};
}

TraceScalar TraceScalar::from_f64(double v) noexcept {
  return {v, std::bit_cast<std::uint64_t>(v), DType::F64};
}

TraceScalar TraceScalar::from_bits(std::uint64_t bits, DType dtype) noexcept {
  switch (dtype) {
    case DType::F64: return {std::bit_cast<double>(bits), bits, dtype};
    case DType::F32:
      bits &= 0xffffffffULL;
      return {static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits))), bits, dtype};
    case DType::F16:
    case DType::BF16:
      bits &= 0xffffULL;
      return {float_from_half_bits(static_cast<std::uint16_t>(bits), dtype == DType::BF16), bits, dtype};
    default: return {static_cast<double>(bits), bits, dtype};
  }
}

std::string placement_text(const Placement& p) {
  switch (p.kind) {
    case Placement::Kind::Replicate: return "R";
    case Placement::Kind::Partial: return "P";
    case Placement::Kind::Shard: return "S(" + std::to_string(p.dim) + ")";
  }
  return "R";
}

std::optional<Placement> parse_placement(std::string_view text) noexcept {
  if (text == "R") return Placement{Placement::Kind::Replicate, -1};
  if (text == "P") return Placement{Placement::Kind::Partial, -1};
  if (text.size() >= 4 && text.substr(0, 2) == "S(" && text.back() == ')') {
    int dim = 0;
    for (const char c : text.substr(2, text.size() - 3)) {
      if (c < '0' || c > '9' || dim > 1000) return std::nullopt;
      dim = dim * 10 + (c - '0');
    }
    return Placement{Placement::Kind::Shard, dim};
  }
  return std::nullopt;
}

std::uint8_t shard_spec_field(const json& record, const std::string& source, std::int64_t line) {
  const auto it = record.find("shard_spec");
  if (it == record.end()) return 1;
  if (it->is_number_integer() && (*it == 1 || *it == 2)) return it->get<std::uint8_t>();
  throw InputError(
      source, line,
      "shard_spec " + it->dump() + " is not a shard hash spec this gparity knows (1 or 2; docs/hashing.md)");
}

bool is_shard_invariant(std::string_view name) noexcept {
  return name.ends_with(".shard");
}

const HashArray* StepRecord::find_hashes(std::string_view name) const noexcept {
  for (const auto& h : hashes) {
    if (h.name == name) return &h;
  }
  return nullptr;
}

std::optional<DeviceMemoryPeaks> device_memory_peaks(std::span<const EventRecord> events) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->kind != "device_memory" || !it->data.is_object()) continue;
    const auto& d = it->data;
    const auto a = d.find("peak_allocated"), r = d.find("peak_reserved");
    // A record a newer writer changed shape is skipped, not trusted.
    if (a == d.end() || r == d.end() || !a->is_number_integer() || !r->is_number_integer()) continue;
    DeviceMemoryPeaks p;
    const auto m = d.find("mode");
    p.mode = m != d.end() && m->is_string() ? m->get<std::string>() : "eager";
    p.peak_allocated = a->get<std::int64_t>();
    p.peak_reserved = r->get<std::int64_t>();
    return p;
  }
  return std::nullopt;
}

}  // namespace gparity::model
