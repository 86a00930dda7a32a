#pragma once
// XXH3-64 (seed 0) of contiguous buffers in CUDA device memory, bit-identical to hash::xxh3_64
// (libxxhash's XXH3_64bits) on the same bytes, computed on the device: nothing is copied to the
// host but the 8-byte digests. Callers need no CUDA headers: a stream is a cudaStream_t passed
// as void* (nullptr: the legacy default stream). Strided blocks must be made contiguous first
// (on the device). Built only with GPARITY_WITH_CUDA (target gparity_hash_cuda); failing CUDA
// calls and host pointers throw CudaError.

#include <cstddef>
#include <cstdint>
#include <span>

#include "hash/cuda/launch_plan.hpp"

namespace gparity::hash {

/// `size` contiguous bytes at device address `data` (any alignment; may be null when empty).
struct DeviceBytes {
  const void* data = nullptr;
  std::size_t size = 0;
};

/// Digest of one device buffer; blocks until it is on the host.
std::uint64_t xxh3_64_cuda(DeviceBytes bytes, void* stream = nullptr);

/// Enqueues the digests of `buffers` on `stream`, digest i into device_out[i * out_stride],
/// without waiting (two kernel launches for the whole batch; the block sums' scratch, 64 bytes a
/// KiB hashed, is kept by the calling thread for its next call). The buffers must stay alive and
/// unchanged until the stream reaches that point. `check_pointers` false skips asking the driver
/// whether each pointer is device memory, for callers that know it is (PyTorch CUDA tensors).
/// With a `chain_stream`, the scramble chains run there once the block sums are done (see
/// cuda_detail::launch_xxh3); the caller joins it before reading the digests.
void xxh3_64_cuda_batch(std::span<const DeviceBytes> buffers, std::uint64_t* device_out,
                        std::size_t out_stride = 1, void* stream = nullptr, bool check_pointers = true,
                        void* chain_stream = nullptr);

}  // namespace gparity::hash
