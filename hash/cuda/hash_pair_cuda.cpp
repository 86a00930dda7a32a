#include "hash/cuda/hash_pair_cuda.hpp"

#include <string>

#include "hash/cuda/launch_plan.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"

namespace gparity::hash {

void hash_pairs_cuda_batch(std::span<const DeviceBytes> bytes, std::span<const BlockView> blocks,
                           std::span<const GlobalPlacement> placements, std::uint64_t* device_out,
                           std::size_t out_stride, void* stream, bool check_pointers, ShardSpec spec,
                           std::uint32_t max_ctas) {
  if (bytes.size() != blocks.size())
    throw BlockError("hash_pairs_cuda_batch: " + std::to_string(bytes.size()) + " byte buffers for " +
                     std::to_string(blocks.size()) + " blocks");
  if (blocks.empty()) return;
  if (out_stride < 2) throw BlockError("hash_pairs_cuda_batch: out_stride must leave room for both hashes");
  void* side = cuda_detail::stream_capturing(stream) ? nullptr : cuda_detail::side_stream();
  // The block sums go first on `stream`, so the chains start as early as they can.
  xxh3_64_cuda_batch(bytes, device_out, out_stride, stream, check_pointers, side);
  shard_hash_cuda_batch(blocks, placements, device_out + 1, out_stride, stream, check_pointers, spec,
                        max_ctas);
  if (side != nullptr) cuda_detail::join_streams(stream, side);
}

}  // namespace gparity::hash
