#pragma once
// Streaming XXH3-64 state, compiled from the system's xxhash.h with its AVX2 kernels enabled
// beside the baseline (SSE2) ones and picked at run time by CPU: Debian's libxxhash is built
// for SSE2 only, and the digest is the same whichever kernel accumulates (xxHash's spec).
// Private to hash/ (Xxh3Stream).

#include <cstddef>
#include <cstdint>

namespace gparity::hash::detail {

struct Xxh3State;

/// A reset state; null when out of memory.
Xxh3State* xxh3_state_new() noexcept;
void xxh3_state_free(Xxh3State* s) noexcept;
void xxh3_state_reset(Xxh3State* s) noexcept;
void xxh3_state_update(Xxh3State* s, const void* data, std::size_t size) noexcept;
std::uint64_t xxh3_state_digest(const Xxh3State* s) noexcept;

}  // namespace gparity::hash::detail
