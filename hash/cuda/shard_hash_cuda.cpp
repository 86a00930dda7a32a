#include "hash/cuda/shard_hash_cuda.hpp"

namespace gparity::hash {

std::uint64_t shard_hash_cuda(const BlockView& device_block, const GlobalPlacement& placement, void* stream) {
  const cuda_detail::LaunchPlan plan = cuda_detail::make_launch_plan(device_block, placement);
  if (plan.total == 0) return 0;
  cuda_detail::require_device_pointer(plan.data);
  return cuda_detail::shard_hash_sync(plan, stream);
}

void shard_hash_cuda_accumulate(const BlockView& device_block, const GlobalPlacement& placement,
                                std::uint64_t* device_sum, void* stream) {
  const cuda_detail::LaunchPlan plan = cuda_detail::make_launch_plan(device_block, placement);
  if (plan.total == 0) return;
  cuda_detail::require_device_pointer(plan.data);
  cuda_detail::require_device_pointer(device_sum);
  cuda_detail::launch_shard_hash(plan, device_sum, stream);
}

bool cuda_device_present() noexcept {
  return cuda_detail::device_count() > 0;
}

}  // namespace gparity::hash
