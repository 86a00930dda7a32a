#pragma once
// Read-only zip archive over minizip for untrusted input (.pt2 archives, torch.save records inside
// DCP files): a file by path, or bytes the caller keeps alive. Member count and sizes are capped
// (declared and actually inflated, so a zip bomb stops at the cap); member names with path tricks
// (absolute paths, "..", backslashes, drive letters, NUL, duplicates) are rejected when the
// archive is opened; encrypted members and methods other than stored and deflate are refused;
// every member read is checked against its size and CRC-32. Errors are InputError naming
// "archive!member". Not thread-safe: reads move the archive's cursor.
//
// Why minizip (zlib's contrib) and not libzip: Debian ships libzip only as a shared library,
// which loads libcrypto, libbz2 and libz into every process: 1.9 ms of each `gparity` start on
// the CI machine, more than hashing the sample checkpoints takes. minizip ships an archive and
// needs only zlib (docs/performance.md).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace gparity::model {

struct ZipLimits {
  std::size_t max_members = 65536;
  std::uint64_t max_member_bytes = 1ull << 30;  // inflated size of one member we read
};

/// What the central directory says of one member.
struct ZipMemberInfo {
  std::uint64_t size = 0;             // inflated
  std::uint64_t compressed_size = 0;  // as stored
  std::uint32_t crc = 0;
  std::uint16_t method = 0;  // 0 stored, 8 deflate
  bool encrypted = false;

  /// Stored as is: the member's bytes are its data in the archive.
  [[nodiscard]] bool stored() const noexcept { return method == 0 && !encrypted && compressed_size == size; }
};

class ZipArchive {
 public:
  explicit ZipArchive(const std::string& path, ZipLimits limits = {});
  /// An archive held in memory; `bytes` must outlive this object. `name` is what errors call it.
  ZipArchive(std::span<const std::byte> bytes, std::string name, ZipLimits limits = {});
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  /// Member names in central-directory order.
  [[nodiscard]] const std::vector<std::string>& members() const noexcept { return members_; }
  [[nodiscard]] bool contains(const std::string& member) const { return index_.contains(member); }
  /// The member's central-directory entry, or nullptr.
  [[nodiscard]] const ZipMemberInfo* info(const std::string& member) const;
  /// The inflated bytes of one member; throws InputError past the size cap or on corrupt data.
  [[nodiscard]] std::string read(const std::string& member) const;
  /// The same into `out` (resized), with a cap of its own below the archive's.
  void read_into(const std::string& member, std::uint64_t cap, std::vector<std::byte>& out) const;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  struct Handle;
  struct Member;
  void list_members();
  template <class Sink>
  void read_member(const std::string& member, std::uint64_t cap, Sink&& sink) const;

  std::string path_;
  ZipLimits limits_;
  std::unique_ptr<Handle> zip_;
  std::vector<std::string> members_;
  std::vector<Member> entries_;  // parallel to members_
  std::unordered_map<std::string, std::size_t> index_;
};

/// Why `name` is unsafe as a member path, or "" when it is fine.
std::string unsafe_member_reason(const std::string& name);

}  // namespace gparity::model
