#pragma once
// Reader for .safetensors checkpoints: an 8-byte little-endian header length, a JSON header,
// then raw tensor bytes. Every field, offset and size is checked before any byte is touched.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/model/base/dtype.hpp"
#include "core/model/base/mapped_file.hpp"

namespace gparity::model {

struct SafetensorsTensor {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::size_t data_begin = 0;  // byte offsets inside the data section
  std::size_t data_end = 0;
};

class SafetensorsFile {
 public:
  /// Maps and validates `path`; throws InputError naming the file and the problem.
  explicit SafetensorsFile(const std::string& path);

  /// Tensors in header order.
  [[nodiscard]] const std::vector<SafetensorsTensor>& tensors() const noexcept { return tensors_; }
  /// The raw bytes of one tensor (already bounds-checked).
  [[nodiscard]] std::span<const std::byte> bytes(const SafetensorsTensor& t) const noexcept;
  [[nodiscard]] const std::string& path() const noexcept { return file_.path(); }

 private:
  MappedFile file_;
  std::size_t data_start_ = 0;
  std::vector<SafetensorsTensor> tensors_;
};

/// True when the file starts like a safetensors file (plausible header length, then '{').
bool looks_like_safetensors(std::span<const std::byte> head) noexcept;

}  // namespace gparity::model
