// GPU assignment for more ranks than GPUs (core/runtime/gpu_share).

#include "core/runtime/gpu_share.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gparity::runtime {
namespace {

using Groups = std::map<std::string, std::vector<int>>;

/// Every group that fits the GPUs has its ranks on distinct GPUs.
void expect_valid(const std::vector<int>& gpu, int gpus, const Groups& groups) {
  for (const int g : gpu) {
    EXPECT_GE(g, 0);
    EXPECT_LT(g, gpus);
  }
  for (const auto& [name, ranks] : groups) {
    if (static_cast<int>(ranks.size()) <= gpus) {
      EXPECT_EQ(gpu_share_conflict(ranks, gpu), "") << name;
    }
  }
}

TEST(GpuShare, EnoughGpusGiveEveryRankItsOwn) {
  EXPECT_EQ(share_gpus(4, 8, {{"0", {0, 1, 2, 3}}}), (std::vector<int>{0, 1, 2, 3}));
}

TEST(GpuShare, TwoByTwoMeshOnTwoGpus) {
  // rank = 2 * dp + tp; the world group cannot fit two GPUs and is left to the conflict check.
  const Groups g = {{"0", {0, 1, 2, 3}}, {"tp0", {0, 1}}, {"tp1", {2, 3}}, {"dp0", {0, 2}}, {"dp1", {1, 3}}};
  const auto gpu = share_gpus(4, 2, g);
  EXPECT_EQ(gpu, (std::vector<int>{0, 1, 1, 0}));
  expect_valid(gpu, 2, g);
  EXPECT_NE(gpu_share_conflict(g.at("0"), gpu).find("both run on GPU"), std::string::npos);
}

TEST(GpuShare, TwoByFourMeshOnFourGpus) {
  Groups g;
  for (int dp = 0; dp < 2; ++dp) g["tp" + std::to_string(dp)] = {4 * dp, 4 * dp + 1, 4 * dp + 2, 4 * dp + 3};
  for (int tp = 0; tp < 4; ++tp) g["dp" + std::to_string(tp)] = {tp, tp + 4};
  const auto gpu = share_gpus(8, 4, g);
  expect_valid(gpu, 4, g);
  std::vector<int> load(4, 0);
  for (const int x : gpu) ++load[static_cast<std::size_t>(x)];
  EXPECT_EQ(load, (std::vector<int>{2, 2, 2, 2}));
}

TEST(GpuShare, ImpossibleAssignmentsAreErrors) {
  // Three ranks pairwise in groups of two: a triangle needs three colours.
  const Groups triangle = {{"a", {0, 1}}, {"b", {1, 2}}, {"c", {0, 2}}};
  EXPECT_THROW((void)share_gpus(3, 2, triangle), GpuShareError);
  EXPECT_THROW((void)share_gpus(2, 0, {}), GpuShareError);
  EXPECT_THROW((void)share_gpus(4, 2, {{"x", {0, 7}}}), GpuShareError);
}

TEST(GpuShare, ConflictNamesTheRanksAndGpu) {
  EXPECT_EQ(gpu_share_conflict({1, 3}, {0, 1, 0, 1}),
            "ranks 1 and 3 both run on GPU 1, and NCCL needs a GPU per rank of a group");
  EXPECT_EQ(gpu_share_conflict({0, 1}, {0, 1, 0, 1}), "");
}

}  // namespace
}  // namespace gparity::runtime
