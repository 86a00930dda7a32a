#pragma once
// Test blocks shared by the CUDA kernel tests (GPU) and the plan tests (CPU only): each case is a
// host buffer plus a strided view into it and a placement, so the same case can be hashed by the
// CPU reference in place and, after a byte-exact upload, by the CUDA kernels.

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "hash/shard_hash.hpp"

namespace gparity::hash::testing {

using Shape = std::vector<std::int64_t>;

struct Case {
  std::string name;
  std::vector<std::byte> storage;  // random bytes the view reads from
  std::size_t first_byte = 0;      // where local element [0, ..., 0] sits in storage
  std::size_t elem_size = 0;
  Shape shape, strides, offsets, global;

  BlockView view(const std::byte* base) const {
    return BlockView{base + first_byte, elem_size, shape, strides};
  }
  GlobalPlacement placement() const { return GlobalPlacement{offsets, global}; }
};

inline std::vector<std::byte> random_storage(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t x = rng();
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) v[i + k] = static_cast<std::byte>(x >> (8 * k));
  }
  return v;
}

inline Shape row_major(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

inline std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (const auto e : s) n *= e;
  return n;
}

/// A block [offsets, offsets + shape) read in place from a row-major global tensor.
inline Case slice_case(std::string name, std::size_t es, Shape global, Shape offsets, Shape shape,
                       std::uint64_t seed) {
  Case c;
  c.name = std::move(name);
  c.elem_size = es;
  c.storage = random_storage(static_cast<std::size_t>(numel(global)) * es + 8, seed);
  c.strides = row_major(global);
  std::int64_t first = 0;
  for (std::size_t d = 0; d < global.size(); ++d) first += offsets[d] * c.strides[d];
  c.first_byte = static_cast<std::size_t>(first) * es;
  c.shape = std::move(shape);
  c.offsets = std::move(offsets);
  c.global = std::move(global);
  return c;
}

/// A whole tensor stored densely, starting `skew` elements into its buffer (unaligned starts).
inline Case dense_case(std::size_t es, std::int64_t count, std::size_t skew, std::uint64_t seed) {
  Case c;
  c.name = "dense es" + std::to_string(es) + " n" + std::to_string(count) + " skew" + std::to_string(skew);
  c.elem_size = es;
  c.storage = random_storage((static_cast<std::size_t>(count) + skew) * es, seed);
  c.first_byte = skew * es;
  c.shape = {count};
  return c;
}

/// Dense, sliced, strided, transposed, broadcast, scalar and empty blocks of every element size.
inline std::vector<Case> standard_cases() {
  std::vector<Case> cases;
  std::uint64_t seed = 1;
  for (const std::size_t es : {1UL, 2UL, 4UL, 8UL}) {
    const std::string tag = " es" + std::to_string(es);
    for (const std::int64_t n : {1L, 2L, 3L, 7L, 15L, 16L, 17L, 33L, 1000L, 4097L, 100003L}) {
      for (const std::size_t skew : {0UL, 1UL, 3UL}) cases.push_back(dense_case(es, n, skew, seed++));
    }
    cases.push_back(slice_case("rows of 37x23" + tag, es, {37, 23}, {10, 0}, {9, 23}, seed++));
    cases.push_back(slice_case("columns of 37x23" + tag, es, {37, 23}, {0, 12}, {37, 11}, seed++));
    cases.push_back(slice_case("mesh tile of 37x23" + tag, es, {37, 23}, {19, 5}, {11, 7}, seed++));
    cases.push_back(slice_case("3-d tile" + tag, es, {6, 9, 130}, {1, 3, 7}, {4, 5, 100}, seed++));
    cases.push_back(
        slice_case("4-d dense inner dims" + tag, es, {5, 4, 3, 64}, {2, 0, 0, 0}, {3, 4, 3, 64}, seed++));
    cases.push_back(slice_case("empty rows" + tag, es, {8, 8}, {3, 0}, {0, 8}, seed++));

    Case t = slice_case("transposed local layout" + tag, es, {40, 70}, {0, 0}, {40, 70}, seed++);
    t.strides = {1, 40};  // column-major storage of the same logical block
    cases.push_back(std::move(t));
    Case s = slice_case("every other element" + tag, es, {30, 50}, {0, 0}, {30, 50}, seed++);
    s.storage = random_storage(30 * 100 * es * 2, seed++);
    s.strides = {200, 2};
    cases.push_back(std::move(s));
    Case b = slice_case("broadcast (stride 0)" + tag, es, {16, 33}, {0, 0}, {16, 33}, seed++);
    b.strides = {0, 1};
    cases.push_back(std::move(b));
    Case p = slice_case("permuted 3-d with offsets" + tag, es, {10, 12, 14}, {2, 4, 6}, {5, 6, 7}, seed++);
    p.storage = random_storage(5 * 6 * 7 * es, seed++);
    p.first_byte = 0;
    p.strides = {1, 5 * 7, 5};  // dims stored in order (1, 2, 0)
    cases.push_back(std::move(p));
    Case scalar = dense_case(es, 1, 0, seed++);
    scalar.name = "scalar" + tag;
    scalar.shape = {};
    cases.push_back(std::move(scalar));
  }
  return cases;
}

}  // namespace gparity::hash::testing
