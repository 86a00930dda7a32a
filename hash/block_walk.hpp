#pragma once
// Internal: decomposes a strided block into rows of consecutive global indices, merging
// dimensions where both the local layout and the global placement are contiguous, so a dense
// tensor becomes one long row and the hash kernels see long runs.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hash/block_view.hpp"

namespace gparity::hash::detail {

struct Row {
  const std::byte* data;       // first element of the row
  std::int64_t count;          // elements in the row
  std::int64_t stride;         // local stride between them, in elements
  std::uint64_t global_start;  // global flat index of the first element (then +1 each)
};

class BlockWalk {
 public:
  /// offsets/global_shape may be empty: the block is then the whole tensor.
  BlockWalk(const BlockView& block, std::span<const std::int64_t> offsets,
            std::span<const std::int64_t> global_shape);

  [[nodiscard]] std::int64_t total() const noexcept { return total_; }

  /// Calls fn(Row) for every row piece covering local flat elements [begin, end).
  template <typename Fn>
  void for_each_row(std::int64_t begin, std::int64_t end, Fn&& fn) const {
    if (begin >= end) return;
    const std::int64_t row_len = dims_.back().extent;
    std::int64_t row = begin / row_len;
    std::int64_t col = begin % row_len;
    while (begin < end) {
      const std::int64_t n = std::min(row_len - col, end - begin);
      Row r = locate(row);
      r.data += col * dims_.back().local_stride * static_cast<std::int64_t>(elem_size_);
      r.global_start += static_cast<std::uint64_t>(col);
      r.count = n;
      fn(r);
      begin += n;
      ++row;
      col = 0;
    }
  }

  [[nodiscard]] std::size_t elem_size() const noexcept { return elem_size_; }

  struct Dim {
    std::int64_t extent;
    std::int64_t local_stride;    // elements
    std::uint64_t global_stride;  // elements of the global row-major tensor
  };
  /// Coalesced dims, outermost first; the innermost has global stride 1. Never empty (a scalar
  /// is one dim of extent 1). The CUDA planner copies these, so both paths walk alike.
  [[nodiscard]] std::span<const Dim> dims() const noexcept { return dims_; }
  /// Global flat index of local element [0, ..., 0].
  [[nodiscard]] std::uint64_t global_base() const noexcept { return global_base_; }

 private:
  [[nodiscard]] Row locate(std::int64_t row) const noexcept;

  const std::byte* data_;
  std::size_t elem_size_;
  std::int64_t total_ = 0;
  std::uint64_t global_base_ = 0;
  std::vector<Dim> dims_;  // coalesced, outermost first; never empty
};

}  // namespace gparity::hash::detail
