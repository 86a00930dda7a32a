#pragma once
// The bookkeeping of CUDA-graph mode as plain values (no LibTorch, no CUDA), so it is tested on
// any machine with fake addresses. A captured graph reads and writes fixed device addresses: its
// static inputs (parameters, gradients, optimizer state, the input buffers it was captured on)
// must stay where they were, with the same size and dtype, and every non-tensor value baked into
// it at capture time (sizes, world size, dtype, bucket plan) must be unchanged; otherwise a replay
// computes silently wrong numbers. A GraphSignature is that state at one moment; check_signature
// compares the capture-time one with the state before a replay and names every difference.
// CopyStats counts what is copied into the graphs' input buffers per replay (the non-static
// inputs), which is all the data a replay moves besides the graphs' own work.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gparity::runtime {

/// A tensor a captured graph uses in place, as it is at one moment.
struct StaticTensor {
  std::string name;  // "param.<fqn>", "grad.<fqn>", "optim.exp_avg.<fqn>", "input.tokens", ...
  std::uintptr_t address = 0;
  std::vector<std::int64_t> shape;
  std::string dtype;  // "f32", "bf16", "i64", ...
  std::int64_t bytes = 0;
  friend bool operator==(const StaticTensor&, const StaticTensor&) = default;
};

/// A non-tensor value the graphs were captured with (a size, the world size, a dtype name).
struct NonTensorArg {
  std::string name;
  std::string value;
  friend bool operator==(const NonTensorArg&, const NonTensorArg&) = default;
};

struct GraphSignature {
  std::vector<StaticTensor> tensors;
  std::vector<NonTensorArg> args;
};

/// One difference between the capture-time signature and the current one.
struct Violation {
  enum class Kind : std::uint8_t { Moved, Resized, Retyped, Missing, Unexpected, ArgChanged, ArgMissing };
  Kind kind = Kind::Moved;
  std::string input;     // the static input or argument's name
  std::string captured;  // its capture-time value ("0x7f..", "[4, 64]", "bf16", "2")
  std::string now;       // its value now ("" when missing)
  /// "static input 'param.w' moved: captured at 0x1000, now at 0x2000".
  [[nodiscard]] std::string text() const;
};

/// Every violation, in the order of the captured signature (then inputs that are new). Empty:
/// replaying is safe as far as the signature can tell.
std::vector<Violation> check_signature(const GraphSignature& captured, const GraphSignature& now);

/// A replay was refused because a static input or argument changed since capture.
class CudaGraphCheckFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws CudaGraphCheckFailure naming the first violation (and how many more there are) and
/// the step, when check_signature finds any.
void require_unchanged(const GraphSignature& captured, const GraphSignature& now, std::int64_t step);

/// "0x7f3a00001000".
std::string address_text(std::uintptr_t address);
/// "[4, 33]".
std::string shape_text(const std::vector<std::int64_t>& shape);

/// The copies of non-static inputs into the graphs' buffers: per replay and in total.
struct CopyStats {
  std::int64_t replays = 0;
  std::int64_t copies = 0;  // over all replays
  std::int64_t bytes = 0;   // over all replays
  std::int64_t last_replay_copies = 0;
  std::int64_t last_replay_bytes = 0;
  /// One copy of `bytes` into a graph input buffer, for the replay in progress.
  void copied(std::int64_t copy_bytes);
  /// The replay in progress starts its graphs: what was copied since the last one counts for it.
  void replayed();
  [[nodiscard]] double copies_per_replay() const noexcept;
  [[nodiscard]] double bytes_per_replay() const noexcept;

 private:
  std::int64_t pending_copies_ = 0;
  std::int64_t pending_bytes_ = 0;
};

}  // namespace gparity::runtime
