#pragma once
// XXH3-64 (seed 0) of CUDA device buffers with the scramble chains walked on the host. The chain
// is sequential per buffer: ~16 ns a KiB on a GPU warp, ~2 ns on a CPU core (docs/hashing.md).
// The device sums every full 1 KiB block's lanes and gathers each buffer's tail (at most 1,088
// bytes), one copy on a copy stream brings both to pinned host memory (1/16 of the bytes), and
// walker threads (started once, shared by the process) walk the chains as soon as the copy is
// there; finish() waits for them. Nothing on the caller's stream waits for the copy or
// the chains: once enqueue()'s kernels have run, the buffers are not read again and may be freed
// or overwritten by later work on that stream. Not for use under CUDA graph capture (the copy
// and its buffers are the object's): callers capture with xxh3_64_cuda_batch. Digests equal
// xxh3_64 on the same bytes. Needs GPARITY_WITH_CUDA (target gparity_hash_cuda); failing CUDA
// calls throw CudaError.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hash/cuda/xxh3_cuda.hpp"

namespace gparity::hash {

class Xxh3HostDigests {
 public:
  Xxh3HostDigests();
  /// Waits for what is still being copied (its buffers are the object's), then frees them.
  ~Xxh3HostDigests();
  Xxh3HostDigests(const Xxh3HostDigests&) = delete;
  Xxh3HostDigests& operator=(const Xxh3HostDigests&) = delete;

  /// Enqueues the device half of the digests of `buffers` (contiguous device memory of the
  /// current device) on `stream`, and their copy to the host on `copy_stream` (nullptr: `stream`)
  /// once `stream` is there. Returns the position of the first one in finish()'s result.
  std::size_t enqueue(std::span<const DeviceBytes> buffers, void* stream, void* copy_stream = nullptr);

  /// Waits for the chains of everything enqueued since the last finish() (one walker a buffer,
  /// the longest first) and returns the digests in enqueue order; starts over (the device and
  /// pinned buffers are kept for the next round).
  std::vector<std::uint64_t> finish();

  /// Digests enqueued and not yet finished.
  [[nodiscard]] std::size_t pending() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gparity::hash
