#pragma once
// Read-only memory map of a whole file (RAII). Large checkpoints and logs are read through the
// page cache without a copy; an empty file maps to an empty span. ReadOnlyFile is the other way
// in, for many small reads: pread into the caller's memory, as `cat` does, costs less than
// mapping, populating and unmapping page tables for a few KiB.

#include <cstddef>
#include <cstdint>
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

/// A regular file open for reading at offsets (RAII; reads are thread-safe).
class ReadOnlyFile {
 public:
  /// Throws InputError naming the path when the file cannot be opened or is not a regular file
  /// (the messages MappedFile gives).
  explicit ReadOnlyFile(const std::string& path);
  ~ReadOnlyFile();
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// Reads exactly out.size() bytes at `offset`; InputError when the read fails or the file ends
  /// first (it shrank since it was opened).
  void read_at(std::uint64_t offset, std::span<std::byte> out) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace gparity::model
