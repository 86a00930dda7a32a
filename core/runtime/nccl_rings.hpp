#pragma once
// `gparity run --ring-orders PATTERN`: before the process group's NCCL communicator exists, one
// all-reduce on a throwaway communicator makes NCCL dump its graph of this machine (rank 0,
// NCCL_GRAPH_DUMP_FILE, NCCL_ALGO=Ring); rank 0 rewrites the ring orders
// (core/model/formats/nccl_graph) and every rank then sets NCCL_GRAPH_FILE, which NCCL reads when
// the real communicator is made at the first collective. Also what the manifest records of
// NCCL's orders, with or without --ring-orders.

#include <filesystem>

#include "core/model/run/trace_schema.hpp"
#include "core/runtime/comm.hpp"

namespace gparity::runtime {

struct RunOptions;

/// Where the dump and the rewritten graph go: <out>/nccl-graph-dump.xml, <out>/nccl-graph.xml.
std::filesystem::path nccl_dump_path(const std::filesystem::path& out_dir);
std::filesystem::path nccl_graph_path(const std::filesystem::path& out_dir);

/// Does the above when opts.ring_orders is set (all ranks call it, right after making `comm` and
/// before any collective on it). Throws std::invalid_argument on a conflicting environment
/// (NCCL_ALGO other than Ring, NCCL_GRAPH_FILE already set) and RankFailure when the dump or
/// the rewrite failed on rank 0.
void setup_ring_orders(const RunOptions& opts, const RankEnv& env, Comm& comm);

/// NCCL_ALGO and NCCL_GRAPH_FILE as this process sees them, the rings of that file, and the
/// --ring-orders pattern: the manifest's "nccl".
model::NcclGraphInfo nccl_graph_info(const RunOptions& opts);

}  // namespace gparity::runtime
