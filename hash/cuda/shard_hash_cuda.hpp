#pragma once
// Shard-invariant hash (docs/hashing.md) of a block that lives in CUDA device memory,
// bit-identical to hash::shard_hash on the same bytes and placement. Callers need no CUDA
// headers: the block's data pointer is a device address and a stream is a cudaStream_t passed
// as void* (nullptr: the legacy default stream). Built only with GPARITY_WITH_CUDA (target
// gparity_hash_cuda). Bad block descriptions throw BlockError, failing CUDA calls CudaError.

#include <cstddef>
#include <cstdint>
#include <span>

#include "hash/cuda/launch_plan.hpp"
#include "hash/shard_hash.hpp"

namespace gparity::hash {

/// Every function takes the spec to hash (docs/hashing.md); v1 unless asked.
/// Partial hash of a device-resident block; blocks until the result is on the host.
std::uint64_t shard_hash_cuda(const BlockView& device_block, const GlobalPlacement& placement,
                              void* stream = nullptr, ShardSpec spec = ShardSpec::V1);

/// Enqueues the block's partial hash on `stream` and adds it (mod 2^64) into the device word
/// *device_sum, without waiting: hashing many tensors into one word, or each into its own,
/// costs one copy back at the end. The caller zeroes *device_sum first.
void shard_hash_cuda_accumulate(const BlockView& device_block, const GlobalPlacement& placement,
                                std::uint64_t* device_sum, void* stream = nullptr,
                                ShardSpec spec = ShardSpec::V1);

/// Enqueues the partial hashes of many device blocks on `stream`, block i's added into
/// device_out[i * out_stride] (zeroed by the caller), without waiting: one kernel launch for
/// all dense blocks together, one per strided block. Validation as shard_hash_cuda_accumulate;
/// `check_pointers` false skips asking the driver whether each pointer is device memory (about
/// a microsecond each), for callers that know it is (PyTorch CUDA tensors). `max_ctas` > 0 caps
/// every launch's grid at that many CTAs of 256 threads, so that the hashes leave the rest of the
/// GPU to work on other streams (the same sums, in more steps a thread).
void shard_hash_cuda_batch(std::span<const BlockView> device_blocks,
                           std::span<const GlobalPlacement> placements, std::uint64_t* device_out,
                           std::size_t out_stride = 1, void* stream = nullptr, bool check_pointers = true,
                           ShardSpec spec = ShardSpec::V1, std::uint32_t max_ctas = 0);

/// CTAs of the batch kernel that fit on the current device at once (its SMs times the CTAs an
/// SM holds): the grid of an uncapped batch, and what callers take a share of for `max_ctas`.
std::uint32_t shard_hash_cuda_resident_ctas();

/// True when a CUDA device is usable from this process.
bool cuda_device_present() noexcept;

namespace cuda_detail {
/// Validates the block exactly as hash::shard_hash does (same BlockError messages) and
/// coalesces its dims the same way. Pure host code: never touches the data pointer.
LaunchPlan make_launch_plan(const BlockView& block, const GlobalPlacement& placement,
                            ShardSpec spec = ShardSpec::V1);
/// Reorders a plan's dims into memory order (largest local stride first) and merges those that
/// are contiguous in both the block and the global tensor (make_launch_plan does this).
void in_memory_order(LaunchPlan& plan);
}  // namespace cuda_detail

}  // namespace gparity::hash
