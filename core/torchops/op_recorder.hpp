#pragma once
// The op recorder's C++ backend (python/gparity/op_recorder.py, backend="cpp"; docs/ops.md): global
// at::RecordFunction callbacks, registered only while a step is recorded, turn every outermost
// dispatcher call of every thread into an op record (the Python backend's TorchDispatchMode pays
// ~75 us of Python an op; this pays a few). Per op: the op and overload, phase, the innermost
// module (pushed by Python forward hooks), the innermost user source line (CPython frames, when
// built with Python's headers), and each tensor read or written: an id (TensorImpl identity within
// the step), dtype, shape and, for outputs and inputs that are not a fresh earlier output, both
// hashes enqueued on the tensor's device without a wait; a view (an output sharing an input's
// storage, or an input that is a view of a fresh hashed tensor) is not hashed and names its base. end_step()
// reads the hashes back once and returns the step's records as trace v1 JSON lines (docs/trace-format.md,
// "op").
//
// Records the Python backend also writes, with the same rules: which tensors are hashed (ids and
// version counters), collectives' outputs unhashed and marked (c10d ops), profiler ops skipped.
// What RecordFunction sees differs from the Python dispatch mode (docs/ops.md): ops called inside
// another op's kernel are nested and not recorded; CompositeImplicitAutograd ops are transparent
// (their parts are recorded, as the Python mode sees them below autograd).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::torchops {

struct OpRecorderOptions {
  std::int64_t step = 0;
  std::int64_t first_tensor_id = 0;  // ids go on across a recorder's steps
  bool hash = true;                  // false: no hashes at all (the recorder's own cost)
  bool xxh3 = true;                  // false: the shard-invariant hash alone
  // The shard hash's spec (docs/hashing.md): 2 for op records since issue 32 (one multiply an
  // element: the recorded step's hashes cost about half of v1's on bf16); records say so.
  int shard_spec = 2;
  std::vector<std::string> library_prefixes;  // frames in files under these are not user code
};

/// Starts recording on every thread (throws if a step is being recorded). The calling thread is
/// the step's thread: ops on other threads (autograd's device threads) are backward.
void begin_step(const OpRecorderOptions& options);

/// Stops recording, waits for the step's hashes, returns its records (one JSON line each) and
/// sets `next_tensor_id`.
std::string end_step(std::int64_t& next_tensor_id);

/// Module stack (forward pre/post hooks): the innermost one names forward ops.
void push_module(std::string_view name);
void pop_module();

bool recording();

}  // namespace gparity::torchops
