#pragma once
// A read-only reduction kernel over device bytes: the bandwidth baseline of bench_hash_cuda.

#include <cstddef>
#include <cstdint>

namespace gparity::bench {

/// Enqueues, on the legacy default stream, a sum over the 16-byte words of `bytes` (a multiple
/// of 16, 16-byte aligned) into *device_sum.
void read_reduce_async(const void* device_bytes, std::size_t bytes, std::uint64_t* device_sum);

}  // namespace gparity::bench
