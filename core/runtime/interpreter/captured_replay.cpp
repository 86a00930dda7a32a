#include "core/runtime/interpreter/captured_replay.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

#include "core/runtime/interpreter/collectives.hpp"
#include "core/runtime/interpreter/inputs.hpp"

namespace gparity::runtime {

namespace {

/// The non-static inputs, with the values every execution must start from.
struct Restorer {
  std::vector<at::Tensor> buffers;   // the graph's own input tensors
  std::vector<at::Tensor> pristine;  // their values before any run
  std::vector<std::string> names;

  void restore(CopyStats* stats) {
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      buffers[i].copy_(pristine[i]);
      if (stats) stats->copied(static_cast<std::int64_t>(buffers[i].nbytes()));
    }
  }
};

/// Sets the collectives' capture mode for a scope.
class CaptureMode {
 public:
  explicit CaptureMode(GroupComm* comm) : comm_(comm) {
    if (comm_) comm_->set_graph_capture(true);
  }
  ~CaptureMode() {
    if (comm_) comm_->set_graph_capture(false);
  }
  CaptureMode(const CaptureMode&) = delete;
  CaptureMode& operator=(const CaptureMode&) = delete;

 private:
  GroupComm* comm_;
};

}  // namespace

GraphSignature bound_signature(const Interpreter& interp) {
  GraphSignature sig;
  for (const auto& [name, t] : interp.input_tensors())
    sig.tensors.push_back(static_tensor("input." + name, t));
  for (const auto& [name, value] : interp.bound_symbols())
    sig.args.push_back({"sym." + name, std::to_string(value)});
  return sig;
}

CapturedReplayResult run_captured(Interpreter& interp, InputSource& inputs,
                                  const CapturedReplayOptions& options, const NodeSink& uncaptured_sink,
                                  const NodeSink& captured_sink) {
  if (!cuda_graphs_available())
    throw std::invalid_argument("--cuda-graph needs a LibTorch with CUDA; this build has none");
  if (options.runs < 1) throw std::invalid_argument("--cuda-graph needs at least one run");
  CapturedReplayResult result;
  Restorer restorer;
  const auto mutated = interp.mutated_inputs();
  for (const auto& [name, t] : interp.input_tensors()) {
    if (std::find(mutated.begin(), mutated.end(), name) != mutated.end()) {
      restorer.buffers.push_back(t);
      restorer.pristine.push_back(t.clone());
      restorer.names.push_back(name);
    } else {
      ++result.static_inputs;
      result.static_bytes += static_cast<std::int64_t>(t.nbytes());
    }
  }
  result.copied_inputs = restorer.names;
  const int dev = options.device_index;
  const CaptureStream stream(dev);

  // Without capture.
  reset_peak_device_memory(dev);
  for (int r = 0; r < options.runs; ++r) {
    restorer.restore(nullptr);
    const bool last = r + 1 == options.runs;
    result.uncaptured_ms.push_back(
        timed_on_device(dev, [&] { (void)interp.rerun(inputs, {.keep_values = last}); }));
  }
  result.uncaptured_outputs = interp.hash_kept(uncaptured_sink);
  interp.release_values();
  result.uncaptured_memory = device_memory(dev);

  // Captured.
  release_cached_device_memory();
  reset_peak_device_memory(dev);
  StepGraphs graphs(dev);
  for (int w = 0; w < options.warmup; ++w) {
    restorer.restore(nullptr);
    graphs.warm_up_in_pool([&] { (void)interp.rerun(inputs, {}); });
  }
  restorer.restore(nullptr);
  interp.reseed();  // outside the capture: it registers the generators' state, each replay resets it
  synchronize_device(dev);
  const auto captured = bound_signature(interp);
  {
    const CaptureMode mode(options.comm);
    graphs.capture_forward([&] { (void)interp.rerun(inputs, {.keep_values = true, .reseed = false}); });
  }
  for (int r = 0; r < options.runs; ++r) {
    restorer.restore(&result.copies);
    if (options.check) require_unchanged(captured, bound_signature(interp), r);
    result.copies.replayed();
    interp.reseed();  // random ops draw what the uncaptured run drew
    result.replay_ms.push_back(timed_on_device(dev, [&] { graphs.replay(); }));
  }
  result.captured_outputs = interp.hash_kept(captured_sink);
  result.captured_memory = device_memory(dev);
  interp.release_values();
  graphs.release();  // before the process group can go away
  synchronize_device(dev);
  return result;
}

}  // namespace gparity::runtime
