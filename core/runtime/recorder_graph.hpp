#pragma once
// Private to the recorder (recorder_steps.cpp): an asynchronous step's whole device-side hashing
// (the memset of its words, every hash kernel of hash/cuda, the copy of the words into the step's
// pinned slot) captured once into a CUDA graph and replayed with one cudaGraphLaunch a step,
// instead of the ~20 launches and calls that cost 130-200 us of host time a step
// (docs/performance.md, "Where the recorder's host time goes"). A graph holds addresses, so it is
// used only while the hashed tensors keep their placements (parameters, gradients and optimizer
// state keep their storage across steps): each step's key (per tensor: address, bytes, dtype,
// sizes, strides, device; and the buffers the graph writes) is compared with the previous
// step's; a step whose key is new hashes directly (the first step, a re-allocated tensor, a dtype
// change at the same address) and the next step with that key captures again. Capture runs in
// cudaStreamCaptureModeThreadLocal (the training thread calls the recorder; other threads' CUDA
// calls are not affected). Falls back to the direct path for good when a capture fails or when
// the key has changed kMaxKeys times.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace gparity::runtime::detail {

/// How asynchronous steps launch their hashes: GPARITY_RECORDER_GRAPH=0 (also "off", "direct"):
/// one by one, every step; "slot": one graph per pinned slot (Recorder::kMaxPendingSteps of
/// them), the copy into the slot inside it; unset or anything else ("staging"): one graph writing
/// fixed device words, copied into the step's pinned slot by one cudaMemcpyAsync after it. Both
/// graph modes cost the same host time (docs/performance.md); staging captures once and holds
/// one graph's XXH3 scratch instead of three.
enum class StepGraphMode { Direct, PerSlot, Staging };
StepGraphMode step_graph_mode_from_env();
const char* step_graph_mode_name(StepGraphMode mode);

class StepGraphs {
 public:
  /// Keys captured before the direct path is used for good: a key that keeps changing would pay
  /// captures (several times a direct step's host time each) for little replay.
  static constexpr std::size_t kMaxKeys = 4;

  StepGraphs(StepGraphMode mode, std::size_t slots);
  ~StepGraphs();  // destroys the graphs (a launch in flight finishes first: CUDA frees it after)
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  [[nodiscard]] StepGraphMode mode() const noexcept { return mode_; }
  /// Records this step's key: `tensors` (all CUDA) and `buffers` (the device and pinned words'
  /// base addresses and the words per slot). True when a graph may run this step: the key equals
  /// the previous step's, every tensor is contiguous (XXH3 would otherwise copy it, an allocation
  /// inside the capture) and the graphs have not been given up. A changed key drops the graphs.
  bool observe(std::span<const at::Tensor> tensors, std::span<const std::uintptr_t> buffers);
  /// The graph a step of pinned slot `slot` launches (slot 0 in staging mode), if captured.
  [[nodiscard]] bool ready(std::size_t slot) const;
  /// Captures `body` (which enqueues the step's work on `stream`) into slot `slot`'s graph.
  /// False when the capture or instantiation failed: nothing was enqueued, the graphs are given
  /// up (a line on stderr says why, once) and the caller runs `body` directly.
  bool capture(std::size_t slot, void* stream, const std::function<void()>& body);
  /// Launches slot `slot`'s graph on `stream` (ready(slot) must be true).
  void launch(std::size_t slot, void* stream);
  /// Drops the graphs (a new params table: the placements they baked in are gone).
  void reset();
  [[nodiscard]] std::size_t captures() const noexcept { return captures_; }
  [[nodiscard]] bool given_up() const noexcept { return given_up_; }

 private:
  [[nodiscard]] std::size_t graph_index(std::size_t slot) const {
    return mode_ == StepGraphMode::Staging ? 0 : slot;
  }
  void drop();
  /// Gives up after a failed capture (clears CUDA's last error, says why on stderr); false.
  bool fail(const std::string& why);

  StepGraphMode mode_;
  std::vector<void*> execs_;  // cudaGraphExec_t, one per slot (one in staging mode); null: none
  std::vector<std::int64_t> key_, next_key_;
  std::size_t captures_ = 0, keys_captured_ = 0;
  bool given_up_ = false;
};

}  // namespace gparity::runtime::detail
