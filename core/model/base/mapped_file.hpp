#pragma once
// Read-only memory map of a whole file (RAII). Large checkpoints and logs are read through the
// page cache without a copy; an empty file maps to an empty span.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace gparity::model {

class MappedFile {
 public:
  /// Throws InputError naming the path when the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  [[nodiscard]] std::string_view text() const noexcept {
    return {reinterpret_cast<const char*>(data_), size_};
  }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  void release() noexcept;
  std::string path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gparity::model
