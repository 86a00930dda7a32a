#pragma once
// A torch.distributed.checkpoint folder: `.metadata` plus the data files it names
// (`__<rank>_<n>.distcp`). Chunk payloads are torch.save zip records at the byte ranges the
// metadata gives (dcp_record), or tensors of a safetensors blob when the checkpoint was saved in
// DCP's safetensors form. Every range is bounds-checked against its file and every chunk against
// its metadata (dtype, sizes) before it is handed out. Loading is thread-safe: data files are
// mapped once, each caller brings its own buffer (used only for members that cannot be read in
// place: torch.save's stored members are hashed straight from the mapping).

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

  [[nodiscard]] const DcpMetadata& metadata() const noexcept { return meta_; }
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }
  /// Data files, in name order, with their sizes.
  [[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> files() const;

  /// Loads one chunk of a tensor entry. Its bytes point into the mapped file (safetensors form,
  /// and torch.save members stored uncompressed), else into `buffer`, copied out through libzip.
  /// With CrcCheck::by_caller an in-place storage comes back unchecked (see DcpChunkView).
  /// The chunk's storage range is asked into memory ahead of use (page tables populated).
  [[nodiscard]] DcpChunkView load(const DcpEntry& entry, const DcpChunk& chunk,
                                  std::vector<std::byte>& buffer, CrcCheck crc = CrcCheck::now) const;

 private:
  struct DataFile {
    MappedFile map;
    std::unique_ptr<SafetensorsFile> safetensors;  // DCP's safetensors serialization
  };
  std::string dir_;
  DcpMetadata meta_;
  std::map<std::string, DataFile> files_;
};

/// True when `path` is a folder holding a `.metadata` file.
bool is_dcp_checkpoint(const std::string& path);

}  // namespace gparity::model
