#include "hash/cuda/shard_hash_cuda.hpp"

#include <string>
#include <vector>

namespace gparity::hash {

std::uint64_t shard_hash_cuda(const BlockView& device_block, const GlobalPlacement& placement, void* stream,
                              ShardSpec spec) {
  const cuda_detail::LaunchPlan plan = cuda_detail::make_launch_plan(device_block, placement, spec);
  if (plan.total == 0) return 0;
  cuda_detail::require_device_pointer(plan.data);
  return cuda_detail::shard_hash_sync(plan, stream);
}

void shard_hash_cuda_accumulate(const BlockView& device_block, const GlobalPlacement& placement,
                                std::uint64_t* device_sum, void* stream, ShardSpec spec) {
  const cuda_detail::LaunchPlan plan = cuda_detail::make_launch_plan(device_block, placement, spec);
  if (plan.total == 0) return;
  cuda_detail::require_device_pointer(plan.data);
  cuda_detail::require_device_pointer(device_sum);
  cuda_detail::launch_shard_hash(plan, device_sum, stream);
}

void shard_hash_cuda_batch(std::span<const BlockView> device_blocks,
                           std::span<const GlobalPlacement> placements, std::uint64_t* device_out,
                           std::size_t out_stride, void* stream, bool check_pointers, ShardSpec spec,
                           std::uint32_t max_ctas) {
  if (placements.size() != device_blocks.size())
    throw BlockError("shard_hash_cuda_batch: " + std::to_string(placements.size()) + " placements for " +
                     std::to_string(device_blocks.size()) + " blocks");
  if (device_blocks.empty()) return;
  if (check_pointers) cuda_detail::require_device_pointer(device_out);
  std::vector<cuda_detail::LaunchPlan> plans;
  std::vector<std::uint64_t*> sums;
  plans.reserve(device_blocks.size());
  sums.reserve(device_blocks.size());
  for (std::size_t i = 0; i < device_blocks.size(); ++i) {
    plans.push_back(cuda_detail::make_launch_plan(device_blocks[i], placements[i], spec));
    if (check_pointers && plans.back().total > 0) cuda_detail::require_device_pointer(plans.back().data);
    sums.push_back(device_out + i * out_stride);
  }
  cuda_detail::launch_shard_hash_batch(plans.data(), plans.size(), sums.data(), stream, max_ctas);
}

std::uint32_t shard_hash_cuda_resident_ctas() {
  return cuda_detail::batch_resident_ctas();
}

bool cuda_device_present() noexcept {
  return cuda_detail::device_count() > 0;
}

}  // namespace gparity::hash
