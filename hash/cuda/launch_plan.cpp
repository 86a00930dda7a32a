#include <string>
#include <vector>

#include "hash/block_walk.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"

namespace gparity::hash::cuda_detail {

LaunchPlan make_launch_plan(const BlockView& block, const GlobalPlacement& placement) {
  // BlockWalk performs the CPU path's checks, so both paths reject the same blocks alike.
  const detail::BlockWalk walk(block, placement.offsets, placement.global_shape);
  const auto dims = walk.dims();
  if (block.shape.size() > static_cast<std::size_t>(kMaxDims)) {
    throw BlockError("block rank " + std::to_string(block.shape.size()) + " exceeds the CUDA kernel's " +
                     std::to_string(kMaxDims) + " dims");
  }
  LaunchPlan plan{};
  plan.data = reinterpret_cast<const unsigned char*>(block.data);
  plan.elem_size = static_cast<std::uint32_t>(block.elem_size);
  plan.total = walk.total();
  plan.global_base = walk.global_base();
  plan.ndims = static_cast<std::int32_t>(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    plan.dims[i] = Dim{dims[i].extent, dims[i].local_stride, dims[i].global_stride};
  }
  return plan;
}

}  // namespace gparity::hash::cuda_detail
