#pragma once
// FSDP-style sharding and reduce-scatter bucket plans, as plain data (no LibTorch), so the plan
// can be tested and recorded without a model. Every parameter is sharded along dim 0 in
// ceil(rows / world) chunks (FSDP2's padding rule); a bucket's per-rank payload is its members'
// padded chunks back to back, in registration order (eager FSDP2) or execution order (what a
// graph-order bucketer produces).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::runtime {

enum class BucketOrder { Registration, Execution };
std::string_view bucket_order_name(BucketOrder order) noexcept;

/// A parameter as the model registers it.
struct ParamDef {
  std::string fqn;
  std::vector<std::int64_t> shape;
};

/// A group of parameters reduced together (one FSDP2 `fully_shard` unit): members named in
/// registration order.
struct ParamGroup {
  std::string name;
  std::vector<std::string> members;
};

/// One parameter's dim-0 shard on this rank.
struct ShardSpec {
  std::string fqn;
  std::vector<std::int64_t> global_shape;
  std::int64_t chunk_rows = 0;  // rows per rank slot (padded)
  std::int64_t row_numel = 1;   // elements per row (product of dims 1..)
  std::int64_t row_offset = 0;  // first global row of this rank's block
  std::int64_t local_rows = 0;  // real rows this rank holds (may be < chunk_rows, even 0)

  [[nodiscard]] std::int64_t slot_numel() const noexcept { return chunk_rows * row_numel; }
  [[nodiscard]] std::vector<std::int64_t> local_shape() const;
  [[nodiscard]] std::vector<std::int64_t> local_offsets() const;
};

struct PlanMember {
  std::size_t param = 0;          // index into FsdpPlan::shards (registration order)
  std::int64_t offset_elems = 0;  // inside the bucket's per-rank payload
  std::int64_t numel = 0;         // the padded slot
};

struct PlanBucket {
  std::string name;
  std::vector<PlanMember> members;  // payload order
  std::int64_t numel_per_rank = 0;
};

struct FsdpPlan {
  int world_size = 1;
  int rank = 0;
  BucketOrder order = BucketOrder::Registration;
  std::vector<ShardSpec> shards;    // registration order
  std::vector<PlanBucket> buckets;  // reduce-scatter issue order
};

ShardSpec shard_dim0(const ParamDef& def, int world_size, int rank);

/// Builds the plan. `groups` are in issue order; `execution_order` lists every fqn in the order
/// the forward uses it. Throws std::invalid_argument when a group names an unknown parameter,
/// a parameter is in no group or in two, or the execution order misses a member.
FsdpPlan make_fsdp_plan(std::span<const ParamDef> params, std::span<const ParamGroup> groups,
                        std::span<const std::string> execution_order, BucketOrder order, int world_size,
                        int rank);

}  // namespace gparity::runtime
