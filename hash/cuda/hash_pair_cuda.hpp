#pragma once
// Both fingerprints of many device blocks in one call: XXH3-64 of each block's row-major bytes
// and its shard-invariant hash. XXH3's scramble chain is sequential per buffer (~16 ns a KiB on
// an H200, whatever the batching), so the chains run on a side stream while the shard kernels
// run on the caller's stream; the caller's stream waits for the chains before anything enqueued
// after the call. Under CUDA graph capture everything stays on the caller's stream.

#include <cstddef>
#include <cstdint>
#include <span>

#include "hash/cuda/xxh3_cuda.hpp"
#include "hash/shard_hash.hpp"

namespace gparity::hash {

/// Enqueues, without waiting, XXH3-64 of bytes[i] into device_out[i * out_stride] and the shard
/// hash of blocks[i] (placed by placements[i]) into device_out[i * out_stride + 1]. bytes[i] is
/// blocks[i] made contiguous (the same tensor when it already is). Everything must stay alive
/// and unchanged until `stream` reaches that point; `check_pointers` as in xxh3_64_cuda_batch;
/// `max_ctas` caps the shard kernels' grids as in shard_hash_cuda_batch (XXH3's block sums are
/// not capped; its chains are one warp a buffer anyway).
void hash_pairs_cuda_batch(std::span<const DeviceBytes> bytes, std::span<const BlockView> blocks,
                           std::span<const GlobalPlacement> placements, std::uint64_t* device_out,
                           std::size_t out_stride = 2, void* stream = nullptr, bool check_pointers = true,
                           ShardSpec spec = ShardSpec::V1, std::uint32_t max_ctas = 0);

}  // namespace gparity::hash
