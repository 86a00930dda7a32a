#pragma once
// The `.metadata` file of a torch.distributed.checkpoint (DCP) folder, read through the
// non-executing pickle reader: per state-dict entry (in registration order) the tensor's dtype,
// global size and chunks (offsets, sizes), or a non-tensor (bytes) entry; and where each chunk's
// bytes lie (file, byte offset, length). Only the DCP metadata classes are allowed in the pickle.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/base/dtype.hpp"

namespace gparity::model {

/// Where one chunk (or one bytes entry) is stored: a byte range of a data file in the folder.
struct DcpLocation {
  std::string file;  // relative_path, a plain file name inside the checkpoint folder
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool has_transforms = false;  // transform_descriptors present (e.g. compression): not readable
};

struct DcpChunk {
  std::vector<std::int64_t> offsets, sizes;
  std::optional<DcpLocation> where;  // nullopt when storage_data has no entry for it
};

struct DcpEntry {
  std::string fqn;
  bool is_tensor = true;
  DType dtype{};                           // tensors
  std::vector<std::int64_t> size;          // tensors: global size
  std::vector<DcpChunk> chunks;            // tensors
  std::optional<DcpLocation> bytes_where;  // non-tensor (BytesStorageMetadata) entries
};

struct DcpMetadata {
  std::string path;
  std::string version;            // "1.0.0" (absent in old checkpoints)
  std::vector<DcpEntry> entries;  // state_dict_metadata order
};

/// Parses a .metadata pickle; InputError (file, byte offset) on malformed or disallowed content.
DcpMetadata parse_dcp_metadata(std::span<const std::byte> bytes, const std::string& source);
DcpMetadata read_dcp_metadata(const std::string& path);

}  // namespace gparity::model
