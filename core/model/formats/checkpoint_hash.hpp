#pragma once
// Fingerprints of every tensor in a checkpoint: a .safetensors file, a DCP checkpoint folder
// (.metadata + __<rank>_<n>.distcp), or a plain file's bytes: what `gparity hash` prints, what
// `gparity compare` compares, and what tests check against the Python reference hashes.
//
// For a DCP checkpoint, each tensor's shard-invariant hash is the sum of its chunks' partial
// hashes, and its XXH3-64 is that of the full tensor in row-major order, streamed chunk by chunk
// in global order (row bands of the chunk grid; no whole-tensor buffer). Both equal what the
// same tensor gives in a safetensors file, whatever the sharding.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/base/dtype.hpp"
#include "hash/shard_hash.hpp"

namespace gparity::model {

struct TensorDigest {
  std::string name;
  std::optional<DType> dtype;       // nullopt for a plain file (raw bytes)
  std::vector<std::int64_t> shape;  // for a plain file: {size in bytes}
  std::uint64_t xxh3 = 0;           // XXH3-64 of the raw bytes (full tensor, row-major)
  std::uint64_t shard_hash = 0;     // shard-invariant hash of the whole tensor
  std::string layout;               // "whole" or "4 chunks of [64, 128]"
};

struct FileDigest {
  std::string path;
  std::string format;  // "safetensors", "dcp" or "raw"
  std::vector<TensorDigest> tensors;
  std::vector<std::string> other_entries;            // DCP non-tensor (bytes) entries, by FQN
  hash::ShardSpec shard_spec = hash::ShardSpec::V1;  // the spec of every tensor's shard_hash
};

struct CheckpointHashOptions {
  unsigned threads = 0;                        // 0 = hardware concurrency; the result never depends on it
  hash::ShardSpec spec = hash::ShardSpec::V1;  // the shard hash spec (docs/hashing.md)
};

/// Hashes a DCP checkpoint folder, a .safetensors file tensor by tensor, or any other file as
/// one raw byte tensor (elements of 1 byte). Errors are InputError.
FileDigest hash_file(const std::string& path, const CheckpointHashOptions& options = {});

/// Hashes several paths with options.threads threads shared by all of them (paths are opened in
/// parallel, then every DCP tensor of every path is a work item, largest first; a DCP checkpoint
/// gets at most a thread per 8 MiB beyond one per path), results in the order of `paths`.
/// `done(k, path)` is called (serialised) after each path, k counting the paths done so far.
/// Errors: the first failing path in `paths` order (within a checkpoint, its first bad tensor in
/// registration order).
std::vector<FileDigest> hash_files(std::span<const std::string> paths,
                                   const CheckpointHashOptions& options = {},
                                   const std::function<void(std::size_t, const std::string&)>& done = {});

/// Hashes a DCP checkpoint folder (tensors in registration order).
FileDigest hash_dcp_checkpoint(const std::string& dir, const CheckpointHashOptions& options = {});

}  // namespace gparity::model
