#pragma once
// Reading bucket plans (`gparity buckets`): from trace v1 "buckets" records, from the samples'
// FSDP2 meta files (rank<r>_meta.json: packing order as listed), or derived as eager FSDP2 packs
// them (registration order, dim-0 shards padded to ceil(rows/world) rows, byte offsets inside
// one rank's payload). Bad input is an InputError naming the file.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/model/base/dtype.hpp"
#include "diff/runs/bucket_plan.hpp"

namespace gparity::diff {

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

}  // namespace gparity::diff
