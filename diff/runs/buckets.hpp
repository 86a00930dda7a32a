#pragma once
// Bucket plans (`gparity buckets`, graph-diff issue): which parameters share a reduce-scatter /
// all-gather payload, in which order, at which byte offset. Plans come from trace "buckets"
// records (docs/trace-format.md) or from the samples' FSDP2 parameter groups (rank<r>_meta.json:
// registration_order, fsdp_buckets with params in packing order and shapes). Eager FSDP2 packs a
// group's parameters in registration order, each as its dim-0 shard padded to ceil(rows/world)
// rows; when only registration order and the groups are known the plan is derived that way, and
// offsets are bytes inside one rank's payload, as the runtime records them.
// The comparison answers: same partition? same member order? for each moved member, its byte
// offset in both plans. Results go to a FindingConsumer; nothing here formats for a terminal.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/base/dtype.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff {

struct PlanMember {
  std::string fqn;
  std::int64_t offset_bytes = 0;
  std::int64_t size_bytes = 0;
};

struct PlanBucket {
  std::string name;                 // FSDP2 module ("root" for ""), trace bucket name, or "bucket <i>"
  std::string collective;           // "reduce_scatter", ...
  std::string dtype;                // canonical name
  std::vector<PlanMember> members;  // payload order
};

struct BucketPlan {
  std::string label;  // file, and record / group when a file holds several plans
  std::int32_t rank = 0;
  std::string origin;               // how the plan was obtained (trace record, FSDP2 packing order, derived)
  std::vector<PlanBucket> buckets;  // issue order as recorded
};

struct BucketPlans {
  std::string path;
  std::vector<BucketPlan> plans;      // ascending rank, then file order
  std::vector<std::string> problems;  // damaged trace lines (the records before them are used)
};

/// A parameter FSDP2 shards: its name and global shape, in registration order.
struct FsdpParam {
  std::string fqn;
  std::vector<std::int64_t> shape;
};
/// A fully_shard unit: its module path ("" for the root) and, when known, its parameters in
/// packing order (empty: derive them from registration order by module prefix).
struct FsdpGroup {
  std::string module;
  std::vector<std::string> params;
};

/// Eager FSDP2's plan: each group's members in the given packing order, or, for a group that
/// names none, the registered parameters under its module path (deepest module wins, the root
/// takes the rest) in registration order; offsets of dim-0 shards padded to ceil(rows/world).
/// Throws InputError (source `label`) for unknown or doubly grouped parameters.
BucketPlan derive_fsdp2_plan(std::span<const FsdpParam> registration, std::span<const FsdpGroup> groups,
                             model::DType dtype, std::int32_t world, const std::string& label);

struct BucketLoadOptions {
  /// Ignore the packing order a meta file lists and derive it from registration order.
  bool derive = false;
  /// Element type when the input does not say (meta files without a rank<r>.jsonl beside them).
  model::DType dtype = model::DType::F32;
  /// World size when the meta file does not say.
  std::int32_t world = 0;
};

/// What `gparity buckets` reads, for messages.
inline constexpr std::string_view kBucketFormats[] = {"gparity trace (rank-<r>.jsonl, JSON lines)",
                                                      "FSDP2 meta file (rank<r>_meta.json)"};

/// Reads a trace v1 directory or rank-<r>.jsonl file (every "buckets" record, every group), or a
/// samples folder / rank<r>_meta.json. A file that is not JSON by content (format_detect.hpp) is
/// an InputError naming the formats tried; so is a path that holds no plan.
BucketPlans load_bucket_plans(const std::string& path, const BucketLoadOptions& options = {});

/// Compares the plans: every rank of each side against its first rank, then the baseline's
/// rank r against the candidate's rank r (plans matched by rank, then position; a side with a
/// single plan is compared with the other's plans whatever their ranks). Emits begin/findings/
/// checks/end; returns the exit code (0 same, 1 differences).
int report_buckets(const BucketPlans& baseline, const BucketPlans& candidate, FindingConsumer& out);

}  // namespace gparity::diff
