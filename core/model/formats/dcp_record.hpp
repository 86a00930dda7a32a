#pragma once
// One chunk payload of a DCP data file: the torch.save zip record stored at a byte range
// (<archive>/data.pkl naming the storage, storage offset, size and stride; <archive>/data/<key>
// holding the storage bytes), read with libzip straight from that range. The pickle goes
// through the non-executing reader with torch.save's allow-list only. The storage is copied
// into a caller-owned buffer, so memory is bounded by one chunk.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/model/formats/pickle/pickle_interpret.hpp"

namespace gparity::model {

struct TorchSaveTensor {
  pickle::TensorRecord record;
  /// The storage bytes (the whole storage; the tensor starts at record.storage_offset elements).
  std::span<const std::byte> storage;
};

/// Reads the tensor of a torch.save zip held in `bytes`; the storage is copied into `buffer`
/// (reused across calls). `where` names the record in messages ("file @ offset").
/// Throws InputError on anything malformed, disallowed or out of bounds.
TorchSaveTensor read_torch_save_tensor(std::span<const std::byte> bytes, const std::string& where,
                                       std::vector<std::byte>& buffer);

}  // namespace gparity::model
