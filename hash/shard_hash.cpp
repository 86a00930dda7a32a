#include "hash/shard_hash.hpp"

#if defined(__x86_64__)
// GCC 12 reports its own AVX-512 intrinsics' _mm512_undefined_* operands as maybe uninitialised
// (a known false positive inside avx512fintrin.h) wherever they inline into run_avx512.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "hash/block_walk.hpp"

namespace gparity::hash {
namespace {

template <typename T>
[[gnu::always_inline]] inline std::uint64_t run_dense(const std::byte* data, std::size_t count,
                                                      std::uint64_t first) noexcept {
  // The portable path, also the tail of the AVX2 kernel.
  std::uint64_t acc = 0;
  const std::uint64_t key0 = index_key(first);
  for (std::size_t j = 0; j < count; ++j) {
    T bits;
    std::memcpy(&bits, data + j * sizeof(T), sizeof(T));
    acc += feistel_mix((key0 + j * kIndexStep) ^ static_cast<std::uint64_t>(bits));
  }
  return acc;
}

template <typename T>
[[gnu::always_inline]] inline std::uint64_t run_dense_v2(const std::byte* data, std::size_t count,
                                                         std::uint64_t first) noexcept {
  // Spec v2, portable: also the tail of its vector kernels. 8-byte elements keep v1's term.
  if constexpr (sizeof(T) == 8) {
    return run_dense<T>(data, count, first);
  } else {
    std::uint64_t acc = 0;
    std::uint32_t key = v2_key(first);
    for (std::size_t j = 0; j < count; ++j) {
      T bits;
      std::memcpy(&bits, data + j * sizeof(T), sizeof(T));
      const std::uint32_t x = key + static_cast<std::uint32_t>(bits);
      acc += static_cast<std::uint64_t>(x) * x;
      key += kV2KeyStep;
    }
    return acc;
  }
}

#if defined(__x86_64__)
// AVX2 kernel: four elements per 256-bit vector, each in a 64-bit lane laid out as the mixer's
// hi:lo word, so every Feistel round is one vpmuludq over the lane's low half (GCC does not
// vectorise the scalar loop above: the 64-bit key arithmetic defeats it). Four independent
// vectors per iteration keep the multiplier busy. The numbers are the spec's, lane by lane.
template <typename T>
[[gnu::target("avx2")]] inline __m256i load_zext4(const std::byte* p) noexcept {
  if constexpr (sizeof(T) == 1) {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(v));
  } else if constexpr (sizeof(T) == 2) {
    return _mm256_cvtepu16_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  } else if constexpr (sizeof(T) == 4) {
    return _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
}

template <typename T>
[[gnu::target("avx2")]] std::uint64_t run_avx2(const std::byte* data, std::size_t count,
                                               std::uint64_t first) noexcept {
  constexpr std::size_t kVecs = 4;
  constexpr std::size_t kBlock = 4 * kVecs;  // elements per iteration
  const __m256i r1 = _mm256_set1_epi64x(static_cast<long long>(kRound1));
  const __m256i r2 = _mm256_set1_epi64x(static_cast<long long>(kRound2));
  const __m256i r3 = _mm256_set1_epi64x(static_cast<long long>(kRound3));
  constexpr int kSwapHalves = 0xB1;  // 32-bit lanes (1, 0, 3, 2)
  constexpr int kHighHalves = 0xAA;  // odd 32-bit lanes: the hi halves
  constexpr int kLowHalves = 0x55;
  const __m256i key_step = _mm256_set1_epi64x(static_cast<long long>(kBlock * kIndexStep));
  __m256i key[kVecs];
  __m256i acc[kVecs];
  for (std::size_t v = 0; v < kVecs; ++v) {
    const auto k = [&](std::size_t lane) { return static_cast<long long>(index_key(first + 4 * v + lane)); };
    key[v] = _mm256_set_epi64x(k(3), k(2), k(1), k(0));
    acc[v] = _mm256_setzero_si256();
  }
  std::size_t j = 0;
  for (; j + kBlock <= count; j += kBlock) {
#pragma GCC unroll 4
    for (std::size_t v = 0; v < kVecs; ++v) {
      __m256i x = _mm256_xor_si256(key[v], load_zext4<T>(data + (j + 4 * v) * sizeof(T)));
      // hi ^= F(lo, R1). Swapping the halves of each product (pshufd) puts lo32 ^ hi32 in both
      // halves; a blend keeps the half being updated. No shifts: they share few ports on x86.
      __m256i p = _mm256_mul_epu32(x, r1);
      __m256i f = _mm256_xor_si256(p, _mm256_shuffle_epi32(p, kSwapHalves));
      x = _mm256_blend_epi32(x, _mm256_xor_si256(x, f), kHighHalves);
      // lo ^= F(hi, R2)
      p = _mm256_mul_epu32(_mm256_shuffle_epi32(x, kSwapHalves), r2);
      f = _mm256_xor_si256(p, _mm256_shuffle_epi32(p, kSwapHalves));
      x = _mm256_blend_epi32(x, _mm256_xor_si256(x, f), kLowHalves);
      // hi ^= F(lo, R3)
      p = _mm256_mul_epu32(x, r3);
      f = _mm256_xor_si256(p, _mm256_shuffle_epi32(p, kSwapHalves));
      x = _mm256_blend_epi32(x, _mm256_xor_si256(x, f), kHighHalves);
      acc[v] = _mm256_add_epi64(acc[v], x);
      key[v] = _mm256_add_epi64(key[v], key_step);
    }
  }
  const __m256i sum = _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3]));
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + run_dense<T>(data + j * sizeof(T), count - j, first + j);
}

// AVX-512 kernel: the AVX2 one with eight lanes a vector (masked blends for the half updates).
template <typename T>
[[gnu::target("avx512f")]] inline __m512i load_zext8(const std::byte* p) noexcept {
  if constexpr (sizeof(T) == 1) {
    return _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  } else if constexpr (sizeof(T) == 2) {
    return _mm512_cvtepu16_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else if constexpr (sizeof(T) == 4) {
    return _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    return _mm512_loadu_si512(p);
  }
}

template <typename T>
[[gnu::target("avx512f")]] std::uint64_t run_avx512(const std::byte* data, std::size_t count,
                                                    std::uint64_t first) noexcept {
  constexpr std::size_t kVecs = 4;
  constexpr std::size_t kBlock = 8 * kVecs;  // elements per iteration
  const __m512i r1 = _mm512_set1_epi64(static_cast<long long>(kRound1));
  const __m512i r2 = _mm512_set1_epi64(static_cast<long long>(kRound2));
  const __m512i r3 = _mm512_set1_epi64(static_cast<long long>(kRound3));
  constexpr auto kSwapHalves = static_cast<_MM_PERM_ENUM>(0xB1);  // 32-bit lanes (1, 0, 3, 2)
  constexpr __mmask16 kHighHalves = 0xAAAA;                       // odd 32-bit lanes: the hi halves
  constexpr __mmask16 kLowHalves = 0x5555;
  const __m512i key_step = _mm512_set1_epi64(static_cast<long long>(kBlock * kIndexStep));
  __m512i key[kVecs];
  __m512i acc[kVecs];
  for (std::size_t v = 0; v < kVecs; ++v) {
    const auto k = [&](std::size_t lane) { return static_cast<long long>(index_key(first + 8 * v + lane)); };
    key[v] = _mm512_set_epi64(k(7), k(6), k(5), k(4), k(3), k(2), k(1), k(0));
    acc[v] = _mm512_setzero_si512();
  }
  std::size_t j = 0;
  for (; j + kBlock <= count; j += kBlock) {
#pragma GCC unroll 4
    for (std::size_t v = 0; v < kVecs; ++v) {
      __m512i x = _mm512_xor_si512(key[v], load_zext8<T>(data + (j + 8 * v) * sizeof(T)));
      __m512i p = _mm512_mul_epu32(x, r1);  // hi ^= F(lo, R1)
      __m512i f = _mm512_xor_si512(p, _mm512_shuffle_epi32(p, kSwapHalves));
      x = _mm512_mask_blend_epi32(kHighHalves, x, _mm512_xor_si512(x, f));
      p = _mm512_mul_epu32(_mm512_shuffle_epi32(x, kSwapHalves), r2);  // lo ^= F(hi, R2)
      f = _mm512_xor_si512(p, _mm512_shuffle_epi32(p, kSwapHalves));
      x = _mm512_mask_blend_epi32(kLowHalves, x, _mm512_xor_si512(x, f));
      p = _mm512_mul_epu32(x, r3);  // hi ^= F(lo, R3)
      f = _mm512_xor_si512(p, _mm512_shuffle_epi32(p, kSwapHalves));
      x = _mm512_mask_blend_epi32(kHighHalves, x, _mm512_xor_si512(x, f));
      acc[v] = _mm512_add_epi64(acc[v], x);
      key[v] = _mm512_add_epi64(key[v], key_step);
    }
  }
  const __m512i sum = _mm512_add_epi64(_mm512_add_epi64(acc[0], acc[1]), _mm512_add_epi64(acc[2], acc[3]));
  // Lanes summed as uint64 (mod 2^64, as the hash is defined), like the AVX2 kernel: GCC's
  // _mm512_reduce_add_epi64 ends in a signed long long addition, which overflows for most
  // inputs (undefined behaviour; UBSan stopped every AVX-512 shard hash in the asan build).
  alignas(64) std::uint64_t lanes[8];
  _mm512_store_si512(lanes, sum);
  std::uint64_t total = 0;
  for (const std::uint64_t lane : lanes) total += lane;
  return total + run_dense<T>(data + j * sizeof(T), count - j, first + j);
}

#ifndef GPARITY_V2_PREFETCH
#define GPARITY_V2_PREFETCH 2048
#endif
// Bytes ahead of the loads that the v2 kernels prefetch: one thread streaming from memory keeps
// more lines in flight than the hardware prefetcher alone gives it while it computes.
constexpr std::size_t kPrefetchAhead = GPARITY_V2_PREFETCH;

// Spec v2 kernels. A load of 32 (AVX2) or 64 (AVX-512) bytes is split into 4 / sizeof(T)
// "planes" of 32-bit lanes, plane r holding element r of every 32-bit word zero-extended (a shift
// and a mask); the key of every element of a plane is added with one 32-bit add (vpaddd: the sum
// mod 2^32 is the spec's x), and vpmuludq squares the even 32-bit lanes and, after a 64-bit
// shift, the odd ones: one multiply per element, four (eight) per instruction. No shuffles
// across lanes, no 64-bit key arithmetic: the planes' keys advance by one 32-bit add per load.
template <typename T>
[[gnu::target("avx2")]] std::uint64_t run_avx2_v2(const std::byte* data, std::size_t count,
                                                  std::uint64_t first) noexcept {
  if constexpr (sizeof(T) == 8) {
    return run_avx2<T>(data, count, first);
  } else {
    constexpr std::size_t kPlanes = 4 / sizeof(T);
    constexpr std::size_t kPerLoad = 32 / sizeof(T);
    constexpr std::size_t kLoads = 2;
    constexpr std::size_t kBlock = kPerLoad * kLoads;
    const __m256i mask =
        _mm256_set1_epi32(static_cast<int>(sizeof(T) == 4 ? 0xFFFFFFFFU : (1U << (8 * sizeof(T))) - 1));
    const __m256i key_step =
        _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(kBlock) * kV2KeyStep));
    __m256i key[kLoads][kPlanes];
    for (std::size_t u = 0; u < kLoads; ++u) {
      for (std::size_t r = 0; r < kPlanes; ++r) {
        alignas(32) std::uint32_t k[8];
        for (std::size_t lane = 0; lane < 8; ++lane)
          k[lane] = v2_key(first + u * kPerLoad + lane * kPlanes + r);
        key[u][r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(k));
      }
    }
    __m256i acc_even = _mm256_setzero_si256();
    __m256i acc_odd = _mm256_setzero_si256();
    std::size_t j = 0;
    for (; j + kBlock <= count; j += kBlock) {
#pragma GCC unroll 2
      for (std::size_t u = 0; u < kLoads; ++u) {
        _mm_prefetch(reinterpret_cast<const char*>(data + (j + u * kPerLoad) * sizeof(T) + kPrefetchAhead),
                     _MM_HINT_T0);
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + (j + u * kPerLoad) * sizeof(T)));
#pragma GCC unroll 4
        for (std::size_t r = 0; r < kPlanes; ++r) {
          __m256i plane = r == 0 ? v : _mm256_srli_epi32(v, static_cast<int>(8 * sizeof(T) * r));
          if (r + 1 < kPlanes) plane = _mm256_and_si256(plane, mask);
          const __m256i x = _mm256_add_epi32(plane, key[u][r]);
          acc_even = _mm256_add_epi64(acc_even, _mm256_mul_epu32(x, x));
          const __m256i x_odd = _mm256_srli_epi64(x, 32);
          acc_odd = _mm256_add_epi64(acc_odd, _mm256_mul_epu32(x_odd, x_odd));
          key[u][r] = _mm256_add_epi32(key[u][r], key_step);
        }
      }
    }
    alignas(32) std::uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(acc_even, acc_odd));
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] +
           run_dense_v2<T>(data + j * sizeof(T), count - j, first + j);
  }
}

template <typename T>
[[gnu::target("avx512f")]] std::uint64_t run_avx512_v2(const std::byte* data, std::size_t count,
                                                       std::uint64_t first) noexcept {
  if constexpr (sizeof(T) == 8) {
    return run_avx512<T>(data, count, first);
  } else {
    constexpr std::size_t kPlanes = 4 / sizeof(T);
    constexpr std::size_t kPerLoad = 64 / sizeof(T);
    constexpr std::size_t kLoads = 2;
    constexpr std::size_t kBlock = kPerLoad * kLoads;
    const __m512i mask =
        _mm512_set1_epi32(static_cast<int>(sizeof(T) == 4 ? 0xFFFFFFFFU : (1U << (8 * sizeof(T))) - 1));
    const __m512i key_step =
        _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(kBlock) * kV2KeyStep));
    __m512i key[kLoads][kPlanes];
    for (std::size_t u = 0; u < kLoads; ++u) {
      for (std::size_t r = 0; r < kPlanes; ++r) {
        alignas(64) std::uint32_t k[16];
        for (std::size_t lane = 0; lane < 16; ++lane)
          k[lane] = v2_key(first + u * kPerLoad + lane * kPlanes + r);
        key[u][r] = _mm512_load_si512(k);
      }
    }
    __m512i acc_even = _mm512_setzero_si512();
    __m512i acc_odd = _mm512_setzero_si512();
    std::size_t j = 0;
    for (; j + kBlock <= count; j += kBlock) {
#pragma GCC unroll 2
      for (std::size_t u = 0; u < kLoads; ++u) {
        _mm_prefetch(reinterpret_cast<const char*>(data + (j + u * kPerLoad) * sizeof(T) + kPrefetchAhead),
                     _MM_HINT_T0);
        const __m512i v = _mm512_loadu_si512(data + (j + u * kPerLoad) * sizeof(T));
#pragma GCC unroll 4
        for (std::size_t r = 0; r < kPlanes; ++r) {
          __m512i plane = r == 0 ? v : _mm512_srli_epi32(v, static_cast<unsigned>(8 * sizeof(T) * r));
          if (r + 1 < kPlanes) plane = _mm512_and_si512(plane, mask);
          const __m512i x = _mm512_add_epi32(plane, key[u][r]);
          acc_even = _mm512_add_epi64(acc_even, _mm512_mul_epu32(x, x));
          const __m512i x_odd = _mm512_srli_epi64(x, 32);
          acc_odd = _mm512_add_epi64(acc_odd, _mm512_mul_epu32(x_odd, x_odd));
          key[u][r] = _mm512_add_epi32(key[u][r], key_step);
        }
      }
    }
    alignas(64) std::uint64_t lanes[8];  // summed as uint64: see run_avx512
    _mm512_store_si512(lanes, _mm512_add_epi64(acc_even, acc_odd));
    std::uint64_t total = 0;
    for (const std::uint64_t lane : lanes) total += lane;
    return total + run_dense_v2<T>(data + j * sizeof(T), count - j, first + j);
  }
}

#endif

template <typename T>
std::uint64_t run_at(detail::SimdLevel level, const std::byte* data, std::size_t count,
                     std::uint64_t first) noexcept {
#if defined(__x86_64__)
  if (level == detail::SimdLevel::Avx512) return run_avx512<T>(data, count, first);
  if (level == detail::SimdLevel::Avx2) return run_avx2<T>(data, count, first);
#else
  (void)level;
#endif
  return run_dense<T>(data, count, first);
}

template <typename T>
std::uint64_t run_v2_at(detail::SimdLevel level, const std::byte* data, std::size_t count,
                        std::uint64_t first) noexcept {
#if defined(__x86_64__)
  if (level == detail::SimdLevel::Avx512) return run_avx512_v2<T>(data, count, first);
  if (level == detail::SimdLevel::Avx2) return run_avx2_v2<T>(data, count, first);
#else
  (void)level;
#endif
  return run_dense_v2<T>(data, count, first);
}

std::uint64_t element_bits(const std::byte* p, std::size_t elem_size) noexcept {
  switch (elem_size) {
    case 1: {
      std::uint8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case 2: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

template <typename T>
std::uint64_t strided_v2(const std::byte* data, std::size_t count, std::int64_t stride,
                         std::uint64_t first) noexcept {
  // Keys advance by one 32-bit add an element, data by the stride: no index arithmetic.
  std::uint64_t acc = 0;
  std::uint32_t key = v2_key(first);
  const std::int64_t step = stride * static_cast<std::int64_t>(sizeof(T));
  for (std::size_t i = 0; i < count; ++i) {
    T bits;
    std::memcpy(&bits, data + static_cast<std::int64_t>(i) * step, sizeof(T));
    const std::uint32_t x = key + static_cast<std::uint32_t>(bits);
    acc += static_cast<std::uint64_t>(x) * x;
    key += kV2KeyStep;
  }
  return acc;
}

std::uint64_t hash_row(const detail::Row& r, std::size_t es, ShardSpec spec) noexcept {
  if (r.stride == 1 || r.count == 1) {
    return shard_hash_run(spec, r.data, es, static_cast<std::size_t>(r.count), r.global_start);
  }
  return shard_hash_strided_run(spec, r.data, es, static_cast<std::size_t>(r.count), r.stride,
                                r.global_start);
}

std::uint64_t hash_range(const detail::BlockWalk& walk, std::int64_t begin, std::int64_t end,
                         ShardSpec spec) {
  std::uint64_t acc = 0;
  walk.for_each_row(begin, end, [&](const detail::Row& r) { acc += hash_row(r, walk.elem_size(), spec); });
  return acc;
}

}  // namespace

std::optional<ShardSpec> parse_shard_spec(std::string_view text) noexcept {
  if (text == "v1" || text == "1") return ShardSpec::V1;
  if (text == "v2" || text == "2") return ShardSpec::V2;
  return std::nullopt;
}

std::uint64_t shard_hash_run(const std::byte* data, std::size_t elem_size, std::size_t count,
                             std::uint64_t first_global_index) noexcept {
  static const detail::SimdLevel best = detail::best_simd_level();
  return detail::shard_hash_run_at(best, data, elem_size, count, first_global_index);
}

std::uint64_t shard_hash_run(ShardSpec spec, const std::byte* data, std::size_t elem_size, std::size_t count,
                             std::uint64_t first_global_index) noexcept {
  if (spec != ShardSpec::V2) return shard_hash_run(data, elem_size, count, first_global_index);
  static const detail::SimdLevel best = detail::best_simd_level();
  return detail::shard_hash_run_v2_at(best, data, elem_size, count, first_global_index);
}

std::uint64_t shard_hash_strided_run(ShardSpec spec, const std::byte* data, std::size_t elem_size,
                                     std::size_t count, std::int64_t stride,
                                     std::uint64_t first_global_index) noexcept {
  if (spec == ShardSpec::V2 && elem_size != 8) {
    switch (elem_size) {
      case 1: return strided_v2<std::uint8_t>(data, count, stride, first_global_index);
      case 2: return strided_v2<std::uint16_t>(data, count, stride, first_global_index);
      case 4: return strided_v2<std::uint32_t>(data, count, stride, first_global_index);
      default: return 0;
    }
  }
  std::uint64_t acc = 0;
  const std::int64_t step = stride * static_cast<std::int64_t>(elem_size);
  for (std::size_t i = 0; i < count; ++i) {
    acc += mix(first_global_index + i, element_bits(data + static_cast<std::int64_t>(i) * step, elem_size));
  }
  return acc;
}

namespace detail {

SimdLevel best_simd_level() noexcept {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return SimdLevel::Avx512;
  if (__builtin_cpu_supports("avx2")) return SimdLevel::Avx2;
#endif
  return SimdLevel::Scalar;
}

std::uint64_t shard_hash_run_at(SimdLevel level, const std::byte* data, std::size_t elem_size,
                                std::size_t count, std::uint64_t first_global_index) noexcept {
  switch (elem_size) {
    case 1: return run_at<std::uint8_t>(level, data, count, first_global_index);
    case 2: return run_at<std::uint16_t>(level, data, count, first_global_index);
    case 4: return run_at<std::uint32_t>(level, data, count, first_global_index);
    case 8: return run_at<std::uint64_t>(level, data, count, first_global_index);
    default: return 0;
  }
}

std::uint64_t shard_hash_run_v2_at(SimdLevel level, const std::byte* data, std::size_t elem_size,
                                   std::size_t count, std::uint64_t first_global_index) noexcept {
  switch (elem_size) {
    case 1: return run_v2_at<std::uint8_t>(level, data, count, first_global_index);
    case 2: return run_v2_at<std::uint16_t>(level, data, count, first_global_index);
    case 4: return run_v2_at<std::uint32_t>(level, data, count, first_global_index);
    case 8: return run_v2_at<std::uint64_t>(level, data, count, first_global_index);
    default: return 0;
  }
}

}  // namespace detail

std::uint64_t shard_hash(const BlockView& block, const GlobalPlacement& placement,
                         const ShardHashOptions& options) {
  const detail::BlockWalk walk(block, placement.offsets, placement.global_shape);
  const std::int64_t total = walk.total();
  const auto bytes = static_cast<std::size_t>(total) * block.elem_size;
  const ShardSpec spec = options.spec;
  if (bytes < options.parallel_threshold_bytes) return hash_range(walk, 0, total, spec);
  // Asked once per process: glibc answers hardware_concurrency() by opening, reading and closing
  // /sys/devices/system/cpu/online, which cost more than hashing a small block (a replayed
  // graph's node outputs on the CPU spent half their time there).
  static const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  unsigned threads = options.max_threads ? options.max_threads : cores;
  if (threads == 1) return hash_range(walk, 0, total, spec);

  // Addition mod 2^64 is associative and commutative: any split gives the same sum.
  threads = static_cast<unsigned>(std::min<std::int64_t>(threads, total));
  std::vector<std::uint64_t> partial(threads, 0);
  {
    std::vector<std::jthread> pool;
    pool.reserve(threads - 1);
    for (unsigned t = 1; t < threads; ++t) {
      pool.emplace_back(
          [&, t] { partial[t] = hash_range(walk, total * t / threads, total * (t + 1) / threads, spec); });
    }
    partial[0] = hash_range(walk, 0, total / threads, spec);
  }
  std::uint64_t sum = 0;
  for (const std::uint64_t p : partial) sum += p;
  return sum;
}

std::uint64_t shard_hash_contiguous(std::span<const std::byte> bytes, std::size_t elem_size,
                                    const ShardHashOptions& options) {
  if (elem_size == 0 || bytes.size() % elem_size != 0) {
    throw BlockError(std::to_string(bytes.size()) + " bytes is not a whole number of " +
                     std::to_string(elem_size) + "-byte elements");
  }
  const std::int64_t n = static_cast<std::int64_t>(bytes.size() / elem_size);
  const std::int64_t shape[1] = {n};
  return shard_hash(BlockView{bytes.data(), elem_size, shape, {}}, GlobalPlacement{}, options);
}

}  // namespace gparity::hash
