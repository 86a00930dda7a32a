#include <string>
#include <vector>

#include "hash/block_walk.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"

namespace gparity::hash::cuda_detail {

LaunchPlan make_launch_plan(const BlockView& block, const GlobalPlacement& placement) {
  // BlockWalk performs the CPU path's checks, so both paths reject the same blocks alike.
  const detail::BlockWalk walk(block, placement.offsets, placement.global_shape);
  const std::size_t rank = block.shape.size();
  const bool whole = placement.offsets.empty() && placement.global_shape.empty();

  LaunchPlan plan{};
  plan.data = reinterpret_cast<const unsigned char*>(block.data);
  plan.elem_size = static_cast<std::uint32_t>(block.elem_size);
  plan.total = walk.total();
  if (rank == 0) {
    plan.ndims = 1;
    plan.dims[0] = Dim{1, 1, 1};
    return plan;
  }
  if (rank > static_cast<std::size_t>(kMaxDims)) {
    throw BlockError("block rank " + std::to_string(rank) + " exceeds the CUDA kernel's " +
                     std::to_string(kMaxDims) + " dims");
  }

  const auto gext = [&](std::size_t d) { return whole ? block.shape[d] : placement.global_shape[d]; };
  const auto dim_full = [&](std::size_t d) {
    return whole || (placement.offsets[d] == 0 && block.shape[d] == placement.global_shape[d]);
  };
  std::vector<std::uint64_t> gstride(rank, 1);
  for (std::size_t d = rank - 1; d-- > 0;)
    gstride[d] = gstride[d + 1] * static_cast<std::uint64_t>(gext(d + 1));
  for (std::size_t d = 0; d < rank && !whole; ++d) {
    plan.global_base += static_cast<std::uint64_t>(placement.offsets[d]) * gstride[d];
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

  // Same rule as BlockWalk: dim d folds into the group inside it when the local layout continues
  // and the group spans its whole global extent (so global indices continue too).
  std::vector<Dim> dims{{block.shape[rank - 1], lstride[rank - 1], gstride[rank - 1]}};
  bool group_full = dim_full(rank - 1);
  for (std::size_t d = rank - 1; d-- > 0;) {
    Dim& inner = dims.back();
    if (group_full && lstride[d] == inner.extent * inner.local_stride) {
      inner.extent *= block.shape[d];
    } else {
      dims.push_back({block.shape[d], lstride[d], gstride[d]});
    }
    group_full = dim_full(d);
  }
  plan.ndims = static_cast<std::int32_t>(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) plan.dims[i] = dims[dims.size() - 1 - i];
  return plan;
}

}  // namespace gparity::hash::cuda_detail
