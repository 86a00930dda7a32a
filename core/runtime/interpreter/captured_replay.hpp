#pragma once
// `gparity replay --cuda-graph` (docs/cuda-graphs.md): a replayed graph captured as one CUDA graph
// and replayed beside the same graph run without capture, to prove the capture keeps every bit.
// The graph's placeholder values are bound once and are the graph's static inputs (left in place,
// at their capture-time addresses); the placeholders the graph writes in place are the non-static
// ones: before every run, warm-up, the capture and every replay they are copied back from a
// pristine copy, so every execution starts from the same values (CopyStats counts those copies
// per replay). Warm-up, capture and replay run on one side stream (CaptureStream); functional
// collectives inside the capture are enqueued on the graph (GroupComm::set_graph_capture).
//
// Both executions keep every node's value and hash it when they are done (a captured graph
// cannot hash while it runs): a value a later op writes in place is hashed as the run left it,
// in both alike.
//
// Without CUDA in this LibTorch, run_captured throws std::invalid_argument.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/run/trace_schema.hpp"
#include "core/runtime/cuda_graph.hpp"
#include "core/runtime/interpreter/interpreter.hpp"
#include "core/runtime/static_inputs.hpp"

namespace gparity::runtime {

class GroupComm;
class InputSource;

struct CapturedReplayOptions {
  int device_index = 0;
  int warmup = 2;      // uncaptured runs on the capture stream before the capture
  int runs = 1;        // uncaptured runs and replays (timed); the last of each is hashed
  bool check = false;  // verify the static inputs and symbols before every replay
  GroupComm* comm = nullptr;
};

struct CapturedReplayResult {
  std::vector<model::NodeRecord> uncaptured_outputs;  // the graph outputs' records, no capture
  std::vector<model::NodeRecord> captured_outputs;    // and after the last replay
  std::size_t static_inputs = 0;                      // tensors left in place
  std::int64_t static_bytes = 0;
  std::vector<std::string> copied_inputs;  // the non-static (mutated) inputs, copied per replay
  CopyStats copies;
  std::vector<double> uncaptured_ms, replay_ms;     // each run, synchronised
  DeviceMemory uncaptured_memory, captured_memory;  // peaks of each part (reset in between)
};

/// Runs `interp`'s graph, once its inputs are bound (Interpreter::bind_inputs) and before any
/// run, without capture and then captured and replayed. Every node's tensors go to
/// `uncaptured_sink` / `captured_sink` after the last run of each.
CapturedReplayResult run_captured(Interpreter& interp, InputSource& inputs,
                                  const CapturedReplayOptions& options, const NodeSink& uncaptured_sink,
                                  const NodeSink& captured_sink);

/// The static-input signature of a bound graph: its placeholder tensors ("input.<name>") and
/// symbols ("sym.<name>").
GraphSignature bound_signature(const Interpreter& interp);

}  // namespace gparity::runtime
