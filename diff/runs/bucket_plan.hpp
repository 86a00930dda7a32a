#pragma once
// A bucket plan as values (buckets.hpp says what plans are and where they come from): which
// parameters share a reduce-scatter / all-gather payload, in which order, at which byte offset,
// per rank; and the FSDP2 parameters and groups a plan is derived from.

#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace gparity::diff
