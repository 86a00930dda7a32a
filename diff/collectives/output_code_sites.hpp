#pragma once
// Graph nodes for the Flight Recorder entries of a compiled run. A collective that Inductor's
// generated module issued has its call site in that module (`call (c477....py:120)`), a file the
// user never wrote; the run's TORCH_TRACE holds the same module as `inductor_output_code`, whose
// line above the call names the graph's source nodes and ATen op (`# Topologically Sorted Source
// Nodes: [tensor_1], Original ATen: [_c10d_functional.all_gather_into_tensor]`). Given the trace
// folders read with the dumps (a run folder's trace/), each such entry is named with its node, so
// a collective moved by a pass is reported with the graph node that issued it, as the graph streams
// are. Matched by the module's path (or, for dumps moved between machines, its file name, which is
// a content hash) and the line; an entry whose module or line the trace does not hold keeps its
// call site alone (never a guessed node).

#include <span>
#include <string>

#include "diff/collectives/collectives.hpp"

namespace gparity::diff {

/// Sets CollectiveOp::node (and adds it to `site`) on the Flight Recorder ops of `run` whose call
/// site lies in an output code that a TORCH_TRACE log in `trace_dirs` holds for the same rank.
/// Damage in a log is added to run.problems; returns how many ops were named.
std::size_t name_output_code_nodes(CollectiveRun& run, std::span<const std::string> trace_dirs);

}  // namespace gparity::diff
