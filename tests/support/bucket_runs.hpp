#pragma once
// Tiny traces of one reduce-scatter bucket plan, written by the trace writer: the runtime's tiny
// model (dim 32, hidden 64) on 2 ranks, one block, its members packed in a given order (what
// `gparity run --bucket-order registration|execution` records). For the tests of `gparity
// buckets` (tests/cli) and of gparity-view's bucket view (tests/gui).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/run/trace_writer.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::testing {

struct BucketParam {
  std::string fqn;
  std::int64_t slot_floats;  // the padded per-rank dim-0 shard
};

// The block's parameters in registration order.
inline const std::vector<BucketParam> kBucketRegistration{
    {"layers.0.attention.wq.weight", 512},     {"layers.0.attention.wk.weight", 512},
    {"layers.0.attention.wv.weight", 512},     {"layers.0.attention.wo.weight", 512},
    {"layers.0.feed_forward.w1.weight", 1024}, {"layers.0.feed_forward.w2.weight", 1024},
    {"layers.0.feed_forward.w3.weight", 1024}, {"layers.0.attention_norm.weight", 16},
    {"layers.0.ffn_norm.weight", 16}};
// Execution order, as indices into kBucketRegistration.
inline const std::vector<std::size_t> kBucketExecution{7, 0, 1, 2, 3, 8, 4, 6, 5};

/// 0, 1, ... : registration order as indices into kBucketRegistration.
inline std::vector<std::size_t> bucket_registration_order() {
  std::vector<std::size_t> reg(kBucketRegistration.size());
  for (std::size_t i = 0; i < reg.size(); ++i) reg[i] = i;
  return reg;
}

/// A trace directory `dir`/`name` whose ranks record the block's bucket packed in `order`;
/// `order_name` (if not empty): the record's "order" field.
inline std::string write_bucket_run(const TempDir& dir, const std::string& name,
                                    const std::vector<std::size_t>& order,
                                    const std::string& order_name = {}) {
  const auto run = dir.path() / name;
  for (int rank = 0; rank < 2; ++rank) {
    model::TraceWriter w(run, rank);
    model::Bucket b{"reduce_scatter", model::DType::F32, {}};
    std::int64_t offset = 0;
    for (auto i : order) {
      b.members.push_back({kBucketRegistration[i].fqn, offset, kBucketRegistration[i].slot_floats * 4});
      offset += kBucketRegistration[i].slot_floats * 4;
    }
    model::BucketsRecord rec;
    rec.groups.push_back({"dp", {b}});
    if (!order_name.empty()) rec.extra["order"] = order_name;
    rec.extra["bucket_names"] = nlohmann::json::array({"layers.0"});
    w.write_buckets(rec);
  }
  return run.string();
}

}  // namespace gparity::testing
