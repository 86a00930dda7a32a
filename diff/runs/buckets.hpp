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
// The pieces: bucket_plan.hpp (the values), bucket_plans_read.hpp (reading and deriving plans),
// bucket_compare.hpp (the comparison). This header includes them all.

#include "diff/runs/bucket_compare.hpp"
#include "diff/runs/bucket_plan.hpp"
#include "diff/runs/bucket_plans_read.hpp"
