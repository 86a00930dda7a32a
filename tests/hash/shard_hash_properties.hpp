#pragma once
// Inputs and the per-element properties every shard hash spec must keep (docs/hashing.md): one
// flipped bit changes the hash; swapping two different elements changes it. Shared by the v1 and
// v2 tests, which check them against their own spec.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace gparity::hash::testing {

inline std::vector<std::byte> iota_bytes(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i & 0xFF);
  return v;
}

inline std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng() & 0xFF);
  return v;
}

/// `hash(raw, element_size)` of a contiguous buffer changes when any one bit of it flips, for
/// every element size.
template <typename Hash>
void expect_every_bit_flip_changes(Hash hash) {
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    auto raw = random_bytes(es * 64, 100 + es);
    const std::uint64_t base = hash(raw, es);
    for (std::size_t byte = 0; byte < raw.size(); ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        raw[byte] ^= static_cast<std::byte>(1 << bit);
        EXPECT_NE(hash(raw, es), base) << "es " << es << " byte " << byte << " bit " << bit;
        raw[byte] ^= static_cast<std::byte>(1 << bit);
      }
    }
  }
}

/// ... and when any two different elements of it swap places.
template <typename Hash>
void expect_swaps_of_different_elements_change(Hash hash) {
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    auto raw = random_bytes(es * 40, 200 + es);
    const std::uint64_t base = hash(raw, es);
    for (std::size_t i = 0; i < 40; ++i) {
      for (std::size_t j = i + 1; j < 40; ++j) {
        if (std::memcmp(&raw[i * es], &raw[j * es], es) == 0) continue;
        std::swap_ranges(raw.begin() + i * es, raw.begin() + (i + 1) * es, raw.begin() + j * es);
        EXPECT_NE(hash(raw, es), base) << "es " << es << " swap " << i << "," << j;
        std::swap_ranges(raw.begin() + i * es, raw.begin() + (i + 1) * es, raw.begin() + j * es);
      }
    }
  }
}

}  // namespace gparity::hash::testing
