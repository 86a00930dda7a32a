#pragma once
// One chunk payload of a DCP data file: the torch.save zip record stored at a byte range
// (<archive>/data.pkl naming the storage, storage offset, size and stride; <archive>/data/<key>
// holding the storage bytes), read straight from that range. The pickle goes through the
// non-executing reader with torch.save's allow-list only. A record whose members are all stored
// uncompressed (what torch.save writes) is read through its own central directory, without the
// zip library (bounds-checked, local headers matched, small members CRC-checked); any other
// record through the zip library (minizip, formats/zip_archive). A stored storage member is read
// in place either way, and its CRC-32 is checked (here, or by the caller in its own pass over the
// bytes). A deflated one is inflated through minizip into a caller-owned buffer, so memory is
// bounded by one chunk.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/formats/pickle/pickle_interpret.hpp"

namespace gparity::model {

struct TorchSaveTensor {
  pickle::TensorRecord record;
  /// The storage bytes (the whole storage; the tensor starts at record.storage_offset elements).
  std::span<const std::byte> storage;
  /// Set when `storage` lies in place in the record and its CRC-32 was not checked yet
  /// (CrcCheck::by_caller): the caller must check it (check_storage_crc32) before trusting it.
  std::optional<std::uint32_t> unchecked_crc32;
};

enum class CrcCheck {
  now,        // the storage's CRC-32 is checked before read_torch_save_tensor returns
  by_caller,  // an in-place storage comes back with unchecked_crc32 set, for a one-pass caller
};

/// CRC-32 (zip's) of `bytes`, continuing from `crc` (0 to start).
std::uint32_t zip_crc32(std::uint32_t crc, std::span<const std::byte> bytes) noexcept;

/// Throws InputError (at `where`) when `actual` differs from `expected`.
void check_storage_crc32(std::uint32_t actual, std::uint32_t expected, const std::string& where);

/// Reads the tensor of a torch.save zip held in `bytes`; the storage is copied into `buffer`
/// (reused across calls) unless it can be read in place. `where` names the record in messages
/// ("file @ offset"). Throws InputError on anything malformed, disallowed or out of bounds.
TorchSaveTensor read_torch_save_tensor(std::span<const std::byte> bytes, const std::string& where,
                                       std::vector<std::byte>& buffer, CrcCheck crc = CrcCheck::now);

}  // namespace gparity::model
