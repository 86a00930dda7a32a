#include "core/model/formats/safetensors.hpp"

#include <algorithm>
#include <limits>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"

namespace gparity::model {
namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100ULL << 20;  // the format's own limit

std::uint64_t read_le64(const std::byte* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

SafetensorsTensor parse_entry(const std::string& path, const std::string& name,
                              const nlohmann::ordered_json& entry, std::size_t data_size) {
  const auto fail = [&](const std::string& what) -> InputError {
    return InputError(path, "tensor '" + name + "': " + what);
  };
  if (!entry.is_object()) throw fail("header entry is not an object");
  const auto dt = entry.find("dtype");
  if (dt == entry.end() || !dt->is_string()) throw fail("missing \"dtype\" string");
  const auto dtype = parse_dtype(dt->get<std::string>());
  if (!dtype) throw fail("unknown dtype \"" + dt->get<std::string>() + "\"");

  SafetensorsTensor t{name, *dtype, {}, 0, 0};
  const auto sh = entry.find("shape");
  if (sh == entry.end() || !sh->is_array()) throw fail("missing \"shape\" array");
  std::uint64_t numel = 1;
  for (const auto& e : *sh) {
    if (!e.is_number_unsigned()) throw fail("shape entry " + e.dump() + " is not a non-negative integer");
    const auto v = e.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
        (v != 0 && numel > std::numeric_limits<std::uint64_t>::max() / v)) {
      throw fail("shape " + sh->dump() + " overflows");
    }
    numel *= v;
    t.shape.push_back(static_cast<std::int64_t>(v));
  }
  const auto off = entry.find("data_offsets");
  if (off == entry.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    throw fail("\"data_offsets\" must be two non-negative integers");
  }
  const auto b = (*off)[0].get<std::uint64_t>();
  const auto e = (*off)[1].get<std::uint64_t>();
  if (b > e || e > data_size) {
    throw fail("data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] outside the " +
               std::to_string(data_size) + "-byte data section (file truncated?)");
  }
  const std::uint64_t elem = dtype_size(*dtype);
  if (numel > std::numeric_limits<std::uint64_t>::max() / elem || numel * elem != e - b) {
    throw fail("shape " + sh->dump() + " of " + std::string(dtype_safetensors_name(*dtype)) + " needs " +
               std::to_string(numel) + " x " + std::to_string(elem) + " bytes but data_offsets span " +
               std::to_string(e - b));
  }
  t.data_begin = static_cast<std::size_t>(b);
  t.data_end = static_cast<std::size_t>(e);
  return t;
}

}  // namespace

bool looks_like_safetensors(std::span<const std::byte> head) noexcept {
  if (head.size() < 9) return false;
  const std::uint64_t n = read_le64(head.data());
  return n >= 2 && n <= kMaxHeaderBytes && static_cast<char>(head[8]) == '{';
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  const auto all = file_.bytes();
  if (all.size() < 8) {
    throw InputError(path, "truncated: " + std::to_string(all.size()) +
                               " bytes, too short for the 8-byte safetensors header length");
  }
  const std::uint64_t n = read_le64(all.data());
  if (n > kMaxHeaderBytes) {
    throw InputError(path, "header length " + std::to_string(n) + " exceeds the 100 MiB limit");
  }
  if (n > all.size() - 8) {
    throw InputError(path, "truncated: header length " + std::to_string(n) + " but only " +
                               std::to_string(all.size() - 8) + " bytes follow");
  }
  data_start_ = 8 + static_cast<std::size_t>(n);
  const std::string_view header(reinterpret_cast<const char*>(all.data()) + 8, static_cast<std::size_t>(n));
  const auto json = parse_ordered_json(header, path + " (header)");
  if (!json.is_object()) throw InputError(path, "header is not a JSON object");

  const std::size_t data_size = all.size() - data_start_;
  for (const auto& [name, entry] : json.items()) {
    if (name == "__metadata__") continue;
    tensors_.push_back(parse_entry(path, name, entry, data_size));
  }
  // Overlapping tensors would mean the header lies about the layout.
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->data_begin < b->data_begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->data_begin < by_offset[i - 1]->data_end) {
      throw InputError(path, "tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name +
                                 "' overlap in the data section");
    }
  }
}

std::span<const std::byte> SafetensorsFile::bytes(const SafetensorsTensor& t) const noexcept {
  return file_.bytes().subspan(data_start_ + t.data_begin, t.data_end - t.data_begin);
}

}  // namespace gparity::model
