#include "hash/block_walk.hpp"

#include <algorithm>
#include <string>

namespace gparity::hash::detail {
namespace {

std::string dims_text(std::span<const std::int64_t> v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

}  // namespace

BlockWalk::BlockWalk(const BlockView& block, std::span<const std::int64_t> offsets,
                     std::span<const std::int64_t> global_shape)
    : data_(block.data), elem_size_(block.elem_size) {
  validate(block);
  const std::size_t rank = block.shape.size();
  const bool whole = offsets.empty() && global_shape.empty();
  if (!whole && (offsets.size() != rank || global_shape.size() != rank)) {
    throw BlockError("block rank " + std::to_string(rank) + " but offsets " + dims_text(offsets) +
                     " and global shape " + dims_text(global_shape));
  }
  total_ = element_count(block.shape);
  if (total_ > 0 && data_ == nullptr) throw BlockError("non-empty block with a null data pointer");

  // Global row-major strides and the check that the block fits.
  std::vector<std::uint64_t> gstride(rank, 1);
  for (std::size_t d = rank; d-- > 0;) {
    const std::int64_t gext = whole ? block.shape[d] : global_shape[d];
    const std::int64_t off = whole ? 0 : offsets[d];
    if (gext < 0 || off < 0 || off + block.shape[d] > gext) {
      throw BlockError("block " + dims_text(block.shape) + " at offsets " + dims_text(offsets) +
                       " does not fit in global shape " + dims_text(global_shape));
    }
    if (d + 1 < rank) {
      const std::int64_t inner = whole ? block.shape[d + 1] : global_shape[d + 1];
      gstride[d] = gstride[d + 1] * static_cast<std::uint64_t>(inner);
    }
    global_base_ += static_cast<std::uint64_t>(off) * gstride[d];
  }

  std::vector<std::int64_t> lstride(rank);
  if (block.strides.empty()) {
    std::int64_t s = 1;
    for (std::size_t d = rank; d-- > 0;) {
      lstride[d] = s;
      s *= block.shape[d];
    }
  } else {
    lstride.assign(block.strides.begin(), block.strides.end());
  }

  // Coalesce from the inside out: dim d folds into the group inside it when the local layout
  // continues (stride_d == extent * stride of the group) and the group spans its whole global
  // extent (so global indices continue too).
  if (rank == 0) {
    dims_.push_back({1, 1, 1});
    return;
  }
  const auto dim_full = [&](std::size_t d) {
    return whole || (offsets[d] == 0 && block.shape[d] == global_shape[d]);
  };
  dims_.push_back({block.shape[rank - 1], lstride[rank - 1], gstride[rank - 1]});
  bool group_full = dim_full(rank - 1);
  for (std::size_t d = rank - 1; d-- > 0;) {
    Dim& inner = dims_.back();
    if (group_full && lstride[d] == inner.extent * inner.local_stride) {
      inner.extent *= block.shape[d];
      group_full = dim_full(d);
    } else {
      dims_.push_back({block.shape[d], lstride[d], gstride[d]});
      group_full = dim_full(d);
    }
  }
  std::reverse(dims_.begin(), dims_.end());
}

Row BlockWalk::locate(std::int64_t row) const noexcept {
  std::int64_t local = 0;
  std::uint64_t global = global_base_;
  for (std::size_t d = dims_.size() - 1; d-- > 0;) {
    const std::int64_t idx = row % dims_[d].extent;
    row /= dims_[d].extent;
    local += idx * dims_[d].local_stride;
    global += static_cast<std::uint64_t>(idx) * dims_[d].global_stride;
  }
  return Row{data_ + local * static_cast<std::int64_t>(elem_size_), 0, dims_.back().local_stride, global};
}

}  // namespace gparity::hash::detail
