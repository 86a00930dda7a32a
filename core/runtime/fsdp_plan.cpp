#include "core/runtime/fsdp_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace gparity::runtime {

std::string_view bucket_order_name(BucketOrder order) noexcept {
  return order == BucketOrder::Registration ? "registration" : "execution";
}

std::vector<std::int64_t> ShardSpec::local_shape() const {
  std::vector<std::int64_t> s = global_shape;
  if (!s.empty()) s[0] = local_rows;
  return s;
}

std::vector<std::int64_t> ShardSpec::local_offsets() const {
  std::vector<std::int64_t> o(global_shape.size(), 0);
  if (!o.empty()) o[0] = row_offset;
  return o;
}

ShardSpec shard_dim0(const ParamDef& def, int world_size, int rank) {
  if (def.shape.empty()) throw std::invalid_argument(def.fqn + ": cannot shard a scalar along dim 0");
  ShardSpec s;
  s.fqn = def.fqn;
  s.global_shape = def.shape;
  const std::int64_t rows = def.shape[0];
  for (std::size_t d = 1; d < def.shape.size(); ++d) s.row_numel *= def.shape[d];
  s.chunk_rows = (rows + world_size - 1) / world_size;
  s.row_offset = std::min<std::int64_t>(rows, s.chunk_rows * rank);
  s.local_rows = std::min<std::int64_t>(rows, s.row_offset + s.chunk_rows) - s.row_offset;
  return s;
}

FsdpPlan make_fsdp_plan(std::span<const ParamDef> params, std::span<const ParamGroup> groups,
                        std::span<const std::string> execution_order, BucketOrder order, int world_size,
                        int rank) {
  if (world_size < 1 || rank < 0 || rank >= world_size) throw std::invalid_argument("bad rank / world size");
  FsdpPlan plan;
  plan.world_size = world_size;
  plan.rank = rank;
  plan.order = order;
  std::unordered_map<std::string, std::size_t> index;
  for (const auto& p : params) {
    index.emplace(p.fqn, plan.shards.size());
    plan.shards.push_back(shard_dim0(p, world_size, rank));
  }
  std::unordered_map<std::string, std::size_t> exec_pos;
  for (std::size_t i = 0; i < execution_order.size(); ++i) exec_pos.emplace(execution_order[i], i);

  std::vector<int> seen(params.size(), 0);
  for (const auto& g : groups) {
    std::vector<std::string> members = g.members;
    for (const auto& m : members) {
      const auto it = index.find(m);
      if (it == index.end()) throw std::invalid_argument("group " + g.name + " names unknown parameter " + m);
      if (seen[it->second]++) throw std::invalid_argument(m + " is in two groups");
      if (order == BucketOrder::Execution && !exec_pos.contains(m))
        throw std::invalid_argument("execution order misses " + m);
    }
    if (order == BucketOrder::Execution) {
      std::stable_sort(members.begin(), members.end(),
                       [&](const auto& a, const auto& b) { return exec_pos.at(a) < exec_pos.at(b); });
    }
    PlanBucket bucket;
    bucket.name = g.name;
    for (const auto& m : members) {
      const std::size_t i = index.at(m);
      PlanMember pm{i, bucket.numel_per_rank, plan.shards[i].slot_numel()};
      bucket.numel_per_rank += pm.numel;
      bucket.members.push_back(pm);
    }
    plan.buckets.push_back(std::move(bucket));
  }
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) throw std::invalid_argument(params[i].fqn + " is in no group");
  return plan;
}

}  // namespace gparity::runtime
