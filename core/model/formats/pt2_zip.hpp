#pragma once
// Read-only zip archive over libzip for untrusted input (.pt2 archives): member count and sizes
// are capped (declared and actually inflated, so a zip bomb stops at the cap), and member names
// with path tricks (absolute paths, "..", backslashes, drive letters, NUL, duplicates) are
// rejected when the archive is opened. Errors are InputError naming "archive!member".

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gparity::model {

struct ZipLimits {
  std::size_t max_members = 65536;
  std::uint64_t max_member_bytes = 1ull << 30;  // inflated size of one member we read
};

class ZipArchive {
 public:
  explicit ZipArchive(const std::string& path, ZipLimits limits = {});
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  [[nodiscard]] const std::vector<std::string>& members() const noexcept { return members_; }
  [[nodiscard]] bool contains(const std::string& member) const;
  /// The inflated bytes of one member; throws InputError past the size cap or on corrupt data.
  [[nodiscard]] std::string read(const std::string& member) const;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  struct Handle;
  std::string path_;
  ZipLimits limits_;
  std::unique_ptr<Handle> zip_;
  std::vector<std::string> members_;
};

/// Why `name` is unsafe as a member path, or "" when it is fine.
std::string unsafe_member_reason(const std::string& name);

}  // namespace gparity::model
