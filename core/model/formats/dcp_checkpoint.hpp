#pragma once
// A torch.distributed.checkpoint folder: `.metadata` plus the data files it names
// (`__<rank>_<n>.distcp`). Chunk payloads are torch.save zip records at the byte ranges the
// metadata gives (dcp_record), or tensors of a safetensors blob when the checkpoint was saved in
// DCP's safetensors form. Every range is bounds-checked against its file and every chunk against
// its metadata (dtype, sizes) before it is handed out. Loading is thread-safe: each caller brings
// its own buffers. A chunk of at most kReadChunkBytes is read with pread into the caller's
// buffer (what `cat` does: for small chunks a copy costs less than mapping, populating and
// unmapping page tables, which also serialises threads on the process's mmap lock); larger chunks
// are read in place from a mapping of their file (torch.save's stored members are hashed straight
// from it), made once for files above that size.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/base/mapped_file.hpp"
#include "core/model/formats/dcp_metadata.hpp"
#include "core/model/formats/dcp_record.hpp"
#include "core/model/formats/safetensors.hpp"

namespace gparity::model {

/// Buffers a caller owns and reuses across loads: the chunk's record bytes (small chunks) and
/// members copied out through minizip (compressed ones). Memory stays bounded by one chunk.
struct DcpChunkBuffer {
  std::vector<std::byte> storage;       // members that cannot be read in place
  std::unique_ptr<std::byte[]> record;  // a small chunk's bytes, read from its file
  std::size_t record_capacity = 0;
};

/// One chunk's elements as a strided block (valid while the checkpoint and the buffer live).
struct DcpChunkView {
  const std::byte* data = nullptr;  // element [0, ..., 0]
  std::size_t elem_size = 0;
  std::vector<std::int64_t> shape, strides;  // strides in elements
  /// The whole storage member in place, its zip CRC-32 and where it is, when the caller chose
  /// CrcCheck::by_caller and the check is still to do (check_storage_crc32).
  std::span<const std::byte> storage;
  std::optional<std::uint32_t> unchecked_crc32;
  std::string crc_where;
};

class DcpCheckpoint {
 public:
  /// Reads `dir`/.metadata and maps every data file it names; InputError when anything is missing.
  explicit DcpCheckpoint(const std::string& dir);
  DcpCheckpoint(const DcpCheckpoint&) = delete;
  DcpCheckpoint& operator=(const DcpCheckpoint&) = delete;

  [[nodiscard]] const DcpMetadata& metadata() const noexcept { return meta_; }
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }
  /// Data files, in name order, with their sizes.
  [[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> files() const;

  /// Loads one chunk of a tensor entry. Its bytes point into `buffer` (a small chunk read from
  /// its file, or a member copied out through minizip) or into the mapped file (large chunks:
  /// safetensors form, and torch.save members stored uncompressed). With CrcCheck::by_caller an
  /// in-place storage comes back unchecked (see DcpChunkView). A mapped chunk's storage range is
  /// asked into memory ahead of use (page tables populated).
  [[nodiscard]] DcpChunkView load(const DcpEntry& entry, const DcpChunk& chunk, DcpChunkBuffer& buffer,
                                  CrcCheck crc = CrcCheck::now) const;

  /// Chunks up to this size are read with pread rather than through a mapping.
  static constexpr std::uint64_t kReadChunkBytes = std::uint64_t{1} << 20;
  /// Data files kept open for pread, by all checkpoints of the process together; past that,
  /// files are mapped (a mapping needs no open descriptor: checkpoints of 1,000 ranks, or many
  /// checkpoints hashed at once, must not run into the descriptor limit).
  static constexpr std::size_t kMaxOpenFiles = 256;

 private:
  struct DataFile {
    std::string path;
    std::uint64_t size = 0;
    std::optional<ReadOnlyFile> file;              // small chunks are read through it (pread)
    std::optional<MappedFile> map;                 // files over kReadChunkBytes, and files past kMaxOpenFiles
    std::unique_ptr<SafetensorsFile> safetensors;  // DCP's safetensors serialization
  };
  std::span<const std::byte> chunk_bytes(const DataFile& f, std::uint64_t offset, std::uint64_t length,
                                         DcpChunkBuffer& buffer) const;
  std::string dir_;
  DcpMetadata meta_;
  struct OpenSlots {  // this checkpoint's share of kMaxOpenFiles, given back when it goes
    std::size_t n = 0;
    OpenSlots() = default;
    OpenSlots(const OpenSlots&) = delete;
    OpenSlots& operator=(const OpenSlots&) = delete;
    ~OpenSlots();
  };
  OpenSlots open_files_;  // declared before files_: given back after they are closed
  std::map<std::string, DataFile> files_;
};

/// True when `path` is a folder holding a `.metadata` file.
bool is_dcp_checkpoint(const std::string& path);

}  // namespace gparity::model
