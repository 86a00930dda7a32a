#pragma once
// Private to the recorder's sources (recorder.cpp, recorder_deferred.cpp, recorder_steps.cpp,
// recorder_graph.cpp): how a block is placed, the CPU hash of one block, and the enqueue of a
// batch of CUDA blocks' hashes (hash/cuda) with the device words they go into.

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/runtime/recorder.hpp"
#include "hash/shard_hash.hpp"
#if GPARITY_WITH_CUDA_HASH
#include "hash/cuda/xxh3_cuda.hpp"  // DeviceBytes
#endif

// Asynchronous recording needs both the CUDA hash kernels and LibTorch's CUDA streams.
#define GPARITY_ASYNC_RECORDER (GPARITY_WITH_CUDA_HASH && GPARITY_TORCH_CUDA)

namespace gparity::runtime::detail {

/// A block's shape and strides, and where it sits in its global tensor.
struct Placed {
  std::vector<std::int64_t> shape, stride, offsets, global;
};

/// `t`'s placement; empty offsets / global shape: `t` is the whole tensor.
Placed placed(const at::Tensor& t, std::span<const std::int64_t> offsets,
              std::span<const std::int64_t> global_shape);

/// Both hashes of a CPU block (XXH3 left 0 when `xxh3` is false).
BlockHashes hash_cpu(const at::Tensor& t, const Placed& p, hash::ShardSpec spec = hash::ShardSpec::V1,
                     bool xxh3 = true);

/// Unpacks n (XXH3, shard) word pairs.
std::vector<BlockHashes> unpack(const std::int64_t* h, std::size_t n);

#if GPARITY_WITH_CUDA_HASH
/// Enqueues both hashes of every CUDA block (all on one device) on `stream`, one launch per
/// kernel where it can: block i's XXH3 into words[2i], its shard hash added into words[2i + 1]
/// (zeroed by the caller). Strided blocks are
/// made contiguous for XXH3 on PyTorch's current stream (the caller makes it `stream`); those
/// copies go into `keep`, which must outlive the stream's work.
/// `before_launch`, when given, runs after those copies and before the first kernel (a side
/// stream's wait for the current one); `max_ctas` caps the shard kernels' grids.
void enqueue_cuda(std::span<const at::Tensor> tensors, std::span<const Placed> placements,
                  std::uint64_t* words, void* stream, std::vector<at::Tensor>& keep, bool xxh3 = true,
                  hash::ShardSpec spec = hash::ShardSpec::V1, const std::function<void()>& before_launch = {},
                  std::uint32_t max_ctas = 0);

/// enqueue_cuda for whole tensors (each its own global tensor): their views read straight from
/// their sizes and strides, nothing copied (the op recorder sends hashes on the training thread).
void enqueue_whole_cuda(std::span<const at::Tensor> tensors, std::uint64_t* words, void* stream,
                        std::vector<at::Tensor>& keep, bool xxh3, hash::ShardSpec spec);

/// `t`'s bytes in row-major order for XXH3: `t` itself when contiguous, else a contiguous copy
/// made on PyTorch's current stream and held in `keep` (which must outlive the stream's work).
hash::DeviceBytes contiguous_bytes(const at::Tensor& t, std::vector<at::Tensor>& keep);

/// The device's current stream, as the hash kernels take it.
void* current_stream(const at::Device& device);

/// Zeroed words for `blocks` blocks' hashes on `device` (2 each: XXH3, shard hash).
at::Tensor hash_words(std::int64_t blocks, const at::Device& device);

std::uint64_t* words_of(const at::Tensor& words);
#endif

}  // namespace gparity::runtime::detail
