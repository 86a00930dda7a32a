#include <algorithm>
#include <string>
#include <vector>

#include "hash/block_walk.hpp"
#include "hash/cuda/shard_hash_cuda.hpp"

namespace gparity::hash::cuda_detail {

LaunchPlan make_launch_plan(const BlockView& block, const GlobalPlacement& placement,
                            ShardSpec placement_spec) {
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
  plan.spec = static_cast<std::uint32_t>(placement_spec);
  plan.total = walk.total();
  plan.global_base = walk.global_base();
  plan.ndims = static_cast<std::int32_t>(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    plan.dims[i] = Dim{dims[i].extent, dims[i].local_stride, dims[i].global_stride};
  }
  in_memory_order(plan);
  return plan;
}

void in_memory_order(LaunchPlan& plan) {
  // The strided kernel walks the flat index with the last dim fastest; the shard hash is a sum,
  // so any order of the elements gives it. In memory order (largest local stride outermost)
  // neighbouring threads load neighbouring elements: a transposed matrix is read coalesced
  // instead of one element per 32-byte sector. Dims that become contiguous in both the block and
  // the global tensor then merge into one.
  auto* first = plan.dims;
  auto* last = plan.dims + plan.ndims;
  std::stable_sort(first, last, [](const Dim& a, const Dim& b) { return a.local_stride > b.local_stride; });
  int out = 0;
  for (int d = 1; d < plan.ndims; ++d) {
    Dim& outer = plan.dims[out];
    const Dim& inner = plan.dims[d];
    if (outer.local_stride == inner.extent * inner.local_stride &&
        outer.global_stride == static_cast<std::uint64_t>(inner.extent) * inner.global_stride) {
      outer = Dim{outer.extent * inner.extent, inner.local_stride, inner.global_stride};
    } else {
      plan.dims[++out] = inner;
    }
  }
  if (plan.ndims > 0) plan.ndims = out + 1;
}

}  // namespace gparity::hash::cuda_detail
