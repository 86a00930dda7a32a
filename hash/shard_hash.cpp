#include "hash/shard_hash.hpp"

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
  // Written as a plain loop over an induction key so GCC vectorises it (vpmuludq per lane).
  std::uint64_t acc = 0;
  const std::uint64_t key0 = index_key(first);
  for (std::size_t j = 0; j < count; ++j) {
    T bits;
    std::memcpy(&bits, data + j * sizeof(T), sizeof(T));
    acc += feistel_mix((key0 + j * kIndexStep) ^ static_cast<std::uint64_t>(bits));
  }
  return acc;
}

// One out-of-line function per element size, each cloned for AVX2 and a baseline, chosen at
// load time: the same binary runs everywhere and the result is the same on every path.
#define GPARITY_RUN_FN(NAME, T)                                                                          \
  [[gnu::target_clones("avx2", "default")]] std::uint64_t NAME(const std::byte* data, std::size_t count, \
                                                               std::uint64_t first) noexcept {           \
    return run_dense<T>(data, count, first);                                                             \
  }
GPARITY_RUN_FN(run_u8, std::uint8_t)
GPARITY_RUN_FN(run_u16, std::uint16_t)
GPARITY_RUN_FN(run_u32, std::uint32_t)
GPARITY_RUN_FN(run_u64, std::uint64_t)
#undef GPARITY_RUN_FN

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

std::uint64_t hash_row(const detail::Row& r, std::size_t es) noexcept {
  if (r.stride == 1 || r.count == 1) {
    return shard_hash_run(r.data, es, static_cast<std::size_t>(r.count), r.global_start);
  }
  std::uint64_t acc = 0;
  const std::int64_t step = r.stride * static_cast<std::int64_t>(es);
  for (std::int64_t i = 0; i < r.count; ++i) {
    acc += mix(r.global_start + static_cast<std::uint64_t>(i), element_bits(r.data + i * step, es));
  }
  return acc;
}

std::uint64_t hash_range(const detail::BlockWalk& walk, std::int64_t begin, std::int64_t end) {
  std::uint64_t acc = 0;
  walk.for_each_row(begin, end, [&](const detail::Row& r) { acc += hash_row(r, walk.elem_size()); });
  return acc;
}

}  // namespace

std::uint64_t shard_hash_run(const std::byte* data, std::size_t elem_size, std::size_t count,
                             std::uint64_t first_global_index) noexcept {
  switch (elem_size) {
    case 1: return run_u8(data, count, first_global_index);
    case 2: return run_u16(data, count, first_global_index);
    case 4: return run_u32(data, count, first_global_index);
    case 8: return run_u64(data, count, first_global_index);
    default: return 0;
  }
}

std::uint64_t shard_hash(const BlockView& block, const GlobalPlacement& placement,
                         const ShardHashOptions& options) {
  const detail::BlockWalk walk(block, placement.offsets, placement.global_shape);
  const std::int64_t total = walk.total();
  const auto bytes = static_cast<std::size_t>(total) * block.elem_size;
  unsigned threads = options.max_threads ? options.max_threads : std::thread::hardware_concurrency();
  threads = std::max(1U, threads);
  if (threads == 1 || bytes < options.parallel_threshold_bytes) return hash_range(walk, 0, total);

  // Addition mod 2^64 is associative and commutative: any split gives the same sum.
  threads = static_cast<unsigned>(std::min<std::int64_t>(threads, total));
  std::vector<std::uint64_t> partial(threads, 0);
  {
    std::vector<std::jthread> pool;
    pool.reserve(threads - 1);
    for (unsigned t = 1; t < threads; ++t) {
      pool.emplace_back(
          [&, t] { partial[t] = hash_range(walk, total * t / threads, total * (t + 1) / threads); });
    }
    partial[0] = hash_range(walk, 0, total / threads);
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
