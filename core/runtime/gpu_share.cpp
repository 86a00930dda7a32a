// GPU assignment for ranks that outnumber the GPUs (gpu_share.hpp).

#include "core/runtime/gpu_share.hpp"

#include <set>

namespace gparity::runtime {
namespace {

/// Ranks that share a group (of at most `gpus` ranks) with each rank.
std::vector<std::set<int>> neighbours(int world_size, int gpus,
                                      const std::map<std::string, std::vector<int>>& groups) {
  std::vector<std::set<int>> near(static_cast<std::size_t>(world_size));
  for (const auto& [name, ranks] : groups) {
    if (static_cast<int>(ranks.size()) > gpus) continue;
    for (const int a : ranks) {
      if (a < 0 || a >= world_size)
        throw GpuShareError("process group \"" + name + "\" names rank " + std::to_string(a) +
                            ", but the run has " + std::to_string(world_size) + " ranks");
      for (const int b : ranks)
        if (a != b) near[static_cast<std::size_t>(a)].insert(b);
    }
  }
  return near;
}

}  // namespace

std::vector<int> share_gpus(int world_size, int gpus, const std::map<std::string, std::vector<int>>& groups) {
  if (gpus < 1) throw GpuShareError("no GPU to run on");
  std::vector<int> gpu(static_cast<std::size_t>(world_size > 0 ? world_size : 0), -1);
  if (world_size <= gpus) {
    for (int r = 0; r < world_size; ++r) gpu[static_cast<std::size_t>(r)] = r;
    return gpu;
  }
  const auto near = neighbours(world_size, gpus, groups);
  for (int r = 0; r < world_size; ++r) {
    std::vector<bool> taken(static_cast<std::size_t>(gpus), false);
    for (const int n : near[static_cast<std::size_t>(r)])
      if (const int g = gpu[static_cast<std::size_t>(n)]; g >= 0) taken[static_cast<std::size_t>(g)] = true;
    int pick = 0;
    while (pick < gpus && taken[static_cast<std::size_t>(pick)]) ++pick;
    if (pick == gpus)
      throw GpuShareError("rank " + std::to_string(r) + " shares process groups with ranks on all " +
                          std::to_string(gpus) +
                          " GPUs: NCCL needs a GPU per rank of a group; use more GPUs");
    gpu[static_cast<std::size_t>(r)] = pick;
  }
  return gpu;
}

std::string gpu_share_conflict(const std::vector<int>& ranks, const std::vector<int>& gpu_of_rank) {
  std::map<int, int> holder;  // GPU -> first rank of the group on it
  for (const int r : ranks) {
    if (r < 0 || static_cast<std::size_t>(r) >= gpu_of_rank.size()) continue;
    const int g = gpu_of_rank[static_cast<std::size_t>(r)];
    if (const auto [it, fresh] = holder.emplace(g, r); !fresh)
      return "ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " both run on GPU " +
             std::to_string(g) + ", and NCCL needs a GPU per rank of a group";
  }
  return {};
}

}  // namespace gparity::runtime
