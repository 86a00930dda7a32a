#include "core/runtime/fsdp_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "core/runtime/debug_model.hpp"

namespace gparity::runtime {
namespace {

TEST(ShardDim0, UnevenRowsPadTheLastRanks) {
  const ParamDef def{"w", {5, 3}};
  const auto r0 = shard_dim0(def, 2, 0);
  const auto r1 = shard_dim0(def, 2, 1);
  EXPECT_EQ(r0.chunk_rows, 3);
  EXPECT_EQ(r0.local_rows, 3);
  EXPECT_EQ(r1.row_offset, 3);
  EXPECT_EQ(r1.local_rows, 2);
  EXPECT_EQ(r1.slot_numel(), 9);
  EXPECT_EQ(r1.local_shape(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(r1.local_offsets(), (std::vector<std::int64_t>{3, 0}));
  // More ranks than rows: the last rank holds nothing but still has a slot in every payload.
  const auto r3 = shard_dim0({"b", {3}}, 4, 3);
  EXPECT_EQ(r3.local_rows, 0);
  EXPECT_EQ(r3.slot_numel(), 1);
}

TEST(FsdpPlan, ExecutionOrderMovesMlpAndNormsInsideABlock) {
  const DebugModelConfig cfg{.vocab = 64, .dim = 32, .layers = 2, .heads = 2, .hidden = 64};
  const auto params = debug_model_params(cfg);
  const auto groups = debug_model_groups(cfg);
  const auto exec = debug_model_execution_order(cfg);
  const auto reg = make_fsdp_plan(params, groups, exec, BucketOrder::Registration, 2, 0);
  const auto ex = make_fsdp_plan(params, groups, exec, BucketOrder::Execution, 2, 0);
  ASSERT_EQ(reg.buckets.size(), 3u);  // layers.1, layers.0, root: backward issue order
  EXPECT_EQ(reg.buckets[0].name, "layers.1");
  EXPECT_EQ(reg.buckets[2].name, "root");

  const auto names = [&](const FsdpPlan& p, std::size_t b) {
    std::vector<std::string> n;
    for (const auto& m : p.buckets[b].members) n.push_back(p.shards[m.param].fqn);
    return n;
  };
  EXPECT_EQ(names(reg, 1).front(), "layers.0.attention.wq.weight");
  EXPECT_EQ(names(ex, 1).front(), "layers.0.attention_norm.weight");
  const auto pos = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) - v.begin();
  };
  EXPECT_LT(pos(names(reg, 1), "layers.0.feed_forward.w2.weight"),
            pos(names(reg, 1), "layers.0.feed_forward.w3.weight"));
  EXPECT_GT(pos(names(ex, 1), "layers.0.feed_forward.w2.weight"),
            pos(names(ex, 1), "layers.0.feed_forward.w3.weight"));
  // Same partition, same payload size; offsets tile the payload with no gap.
  for (std::size_t b = 0; b < reg.buckets.size(); ++b) {
    auto a = names(reg, b), c = names(ex, b);
    std::sort(a.begin(), a.end());
    std::sort(c.begin(), c.end());
    EXPECT_EQ(a, c);
    EXPECT_EQ(reg.buckets[b].numel_per_rank, ex.buckets[b].numel_per_rank);
    std::int64_t next = 0;
    for (const auto& m : ex.buckets[b].members) {
      EXPECT_EQ(m.offset_elems, next);
      next += m.numel;
    }
    EXPECT_EQ(next, ex.buckets[b].numel_per_rank);
  }
  // The root group is used in the same order it is registered: no change there.
  EXPECT_EQ(names(reg, 2), names(ex, 2));
}

TEST(FsdpPlan, RejectsInconsistentGroups) {
  const std::vector<ParamDef> params{{"a", {4}}, {"b", {4}}};
  const std::vector<std::string> exec{"a", "b"};
  EXPECT_THROW(make_fsdp_plan(params, std::vector<ParamGroup>{{"g", {"a", "c"}}}, exec,
                              BucketOrder::Registration, 2, 0),
               std::invalid_argument);
  EXPECT_THROW(
      make_fsdp_plan(params, std::vector<ParamGroup>{{"g", {"a"}}}, exec, BucketOrder::Registration, 2, 0),
      std::invalid_argument);
  EXPECT_THROW(make_fsdp_plan(params, std::vector<ParamGroup>{{"g", {"a", "b"}}, {"h", {"b"}}}, exec,
                              BucketOrder::Registration, 2, 0),
               std::invalid_argument);
  EXPECT_THROW(make_fsdp_plan(params, std::vector<ParamGroup>{{"g", {"a", "b"}}},
                              std::vector<std::string>{"a"}, BucketOrder::Execution, 2, 0),
               std::invalid_argument);
}

}  // namespace
}  // namespace gparity::runtime
