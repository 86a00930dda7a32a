#include "hash/xxh3_dispatch.hpp"

// Every xxHash function static in this file (no clash with libxxhash's), the AVX2 kernels
// compiled with their own target attribute, and accumulators aligned for them.
#define XXH_INLINE_ALL
#define XXH_DISPATCH_AVX2 1
#define XXH_TARGET_AVX2 __attribute__((__target__("avx2")))
#define XXH_ACC_ALIGN 64
// clang-format off
#include <immintrin.h>  // xxhash.h uses the AVX2 types without including it for this mode
#include <xxhash.h>
// clang-format on

namespace gparity::hash::detail {
namespace {

[[gnu::target("avx2")]] void update_avx2(XXH3_state_t* s, const void* data, std::size_t size) noexcept {
  (void)XXH3_update(s, static_cast<const xxh_u8*>(data), size, XXH3_accumulate_512_avx2,
                    XXH3_scrambleAcc_avx2);
}

bool has_avx2() noexcept {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

XXH3_state_t* raw(Xxh3State* s) noexcept {
  return reinterpret_cast<XXH3_state_t*>(s);
}

}  // namespace

Xxh3State* xxh3_state_new() noexcept {
  XXH3_state_t* s = XXH3_createState();
  if (s) XXH3_64bits_reset(s);
  return reinterpret_cast<Xxh3State*>(s);
}

void xxh3_state_free(Xxh3State* s) noexcept {
  XXH3_freeState(raw(s));
}

void xxh3_state_reset(Xxh3State* s) noexcept {
  XXH3_64bits_reset(raw(s));
}

void xxh3_state_update(Xxh3State* s, const void* data, std::size_t size) noexcept {
  if (has_avx2())
    update_avx2(raw(s), data, size);
  else
    XXH3_64bits_update(raw(s), data, size);
}

std::uint64_t xxh3_state_digest(const Xxh3State* s) noexcept {
  return XXH3_64bits_digest(reinterpret_cast<const XXH3_state_t*>(s));
}

}  // namespace gparity::hash::detail
