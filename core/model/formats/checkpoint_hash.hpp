#pragma once
// Fingerprints of every tensor in a checkpoint file (safetensors), or of a plain file's bytes:
// what `gparity hash` prints and what tests compare against the Python reference hashes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/base/dtype.hpp"

namespace gparity::model {

struct TensorDigest {
  std::string name;
  std::optional<DType> dtype;       // nullopt for a plain file (raw bytes)
  std::vector<std::int64_t> shape;  // for a plain file: {size in bytes}
  std::uint64_t xxh3 = 0;           // XXH3-64 of the raw bytes
  std::uint64_t shard_hash = 0;     // shard-invariant hash of the whole tensor
};

struct FileDigest {
  std::string path;
  std::string format;  // "safetensors" or "raw"
  std::vector<TensorDigest> tensors;
};

/// Hashes a .safetensors file tensor by tensor, or any other file as one raw byte tensor
/// (elements of 1 byte). A file named *.safetensors must parse; errors are InputError.
FileDigest hash_file(const std::string& path);

}  // namespace gparity::model
