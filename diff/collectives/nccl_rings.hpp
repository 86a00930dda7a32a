#pragma once
// Whether two runs reduced in different NCCL orders: another NCCL_GRAPH_FILE, other ring orders
// or another NCCL_ALGO change the order of sums inside reduce-scatter and all-reduce, and that
// alone changes bf16 results (docs/ring-orders.md). Read from the manifests' "nccl" fields.

#include <optional>

#include "core/model/run/trace_schema.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff {

/// A Warning "nccl_graph_differs" naming both sides when the runs' NCCL graphs or ring orders
/// differ (or when one run used a graph file and the other does not say); nullopt otherwise.
std::optional<Finding> nccl_graph_finding(const model::RunManifest& baseline,
                                          const model::RunManifest& candidate);

}  // namespace gparity::diff
