#pragma once
// Internals of the op recorder's C++ backend (op_recorder.hpp is its contract), by concern:
//   op_recorder.cpp            the step's state, begin/end of a step, the module stack, C entry points
//   op_recorder_ops.cpp        which ops are records (per overload: skipped, transparent, collective)
//   op_recorder_callbacks.cpp  the RecordFunction callbacks: an op's record, its phase, module, inputs
//   op_recorder_kernels.cpp    kernel records: a Triton launch, from Python's launcher hook
//   op_recorder_tensors.cpp    tensor identity within the step, versions, views and what gets hashed
//   op_recorder_hashing.cpp    the hashes enqueued on each device, and their one read-back
//   op_recorder_python.cpp     CPython frames (source lines, backward), a collective's group
//   op_recorder_launches.cpp   the launch hook around Inductor's launcher and the builtins a Triton
//                              launch's record goes through from Python
//   op_recorder_writer.cpp     the step's records as trace v1 JSON lines
//   op_recorder_sections.hpp   opt-in host time of these parts (a diagnostic)
// Internal to core/torchops.

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/util/SmallVector.h>
#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model/ops/op_log.hpp"
#include "core/torchops/op_recorder.hpp"
#include "core/torchops/op_recorder_sections.hpp"

struct _frame;  // CPython's PyFrameObject (op_recorder_python.cpp)

namespace gparity::torchops::oprec_detail {

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// ---- ops (op_recorder_ops.cpp) ------------------------------------------------------------------

/// What the recorder does with one operator overload (cached per schema).
struct OpInfo {
  std::string name;          // "aten::add.Tensor" ("default" overloads without it), as Python writes it
  bool transparent = false;  // CompositeImplicitAutograd: its parts are the records
  bool skip = false;         // profiler:: bookkeeping and gparity's own ops: neither it nor its parts
  bool collective = false;   // c10d ops: outputs not complete at the call
  bool waits = false;        // wait_tensor: a collective's completion
  /// Per schema return: its "unhashed" marker (docs/trace-format.md, "op"), "" for a value. The
  /// attention ops' RNG state (philox_seed, philox_offset, rng_state, ...) and debug_attn_mask
  /// hold no value of the computation and may be uninitialized bytes on CUDA (dropout 0).
  std::vector<const char*> unhashed_returns;
  bool any_unhashed = false;
  // Per schema argument: an `out=` buffer (keyword-only, written: `Tensor(a!) out`). What it held
  // before the op is no input of it (Inductor hands extern kernels reused buffers): recorded as
  // "name": "out", never hashed before the op; what the op wrote is its output.
  std::vector<bool> out_arguments;
  bool any_out = false;
  // Per schema argument: one the op writes (`Tensor(a!)`: in-place, `out=`). An op without a
  // schema (`known_writes` false) may write any of its tensors. What a batch of hashes waits for
  // (op_recorder_hashing.cpp).
  std::vector<bool> written_arguments;
  bool any_written = false;
  bool known_writes = false;
};

/// The op's info, or null for a RecordFunction that is not an operator call.
const OpInfo* op_info(const at::RecordFunction& fn);

// ---- the step's state -----------------------------------------------------------------------------

struct TensorRef {
  std::int64_t id = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  c10::SmallVector<std::int64_t, 6> shape;  // inline: no allocation a tensor for the usual ranks
  int device = -1;                          // index into State::devices; -1: not hashed
  int chunk = 0;
  std::int64_t slot = 0;
  std::int64_t view_base = -1;  // a view (issue 24): the id of the hashed tensor it lies in; no hash
  const char* unhashed = "";    // RNG state / debug output ("rng_state", "debug"): no hash
  // A kernel launch's argument (kernel records only): its name in the kernel's signature
  // ("in_ptr0") and role ("in", "out", "in_out", "unnamed").
  std::string name;
  const char* role = "";
};

/// What the step has seen of a tensor: its id, the version its hash is of. The weak reference
/// keeps the TensorImpl's address from being reused while the step runs (not its storage).
struct Known {
  explicit Known(const at::Tensor& t) : keep(t.getIntrusivePtr()) {}
  c10::weak_intrusive_ptr<c10::TensorImpl> keep;
  std::int64_t id = 0;
  std::int64_t version = 0;
  bool fresh = false;
  // A view: the hashed tensor it lies in (never itself a view), by key and id. Its value is the
  // base's while the base is fresh (views share their base's version counter).
  const c10::TensorImpl* base = nullptr;
  std::int64_t base_id = -1;
  const char* unhashed = "";  // an RNG state / debug output: read later, still no value
  // A hashed tensor whose elements fill [cover_lo, cover_hi) of its storage (non-overlapping and
  // dense: contiguous or a permutation of it) covers that range for its dtype: an alias inside
  // it reads values hashed here, while it is fresh, even after the tensor itself is gone
  // (covering_hashed, op_recorder_tensors.cpp).
  bool covers = false;
  c10::ScalarType cover_dtype = c10::ScalarType::Undefined;
  std::int64_t cover_lo = 0;
  std::int64_t cover_hi = 0;
};

/// The step's tensors in one storage. The weak reference keeps the StorageImpl's address from
/// being another storage's while the step runs (its memory goes when its last tensor does):
/// without it a freed storage's tensors would pile up under its reused address, and every
/// output there would walk them all (quadratic in the step's ops).
struct StorageTensors {
  c10::weak_intrusive_ptr<c10::StorageImpl> keep;
  std::vector<const c10::TensorImpl*> tensors;
};

struct DeviceWords {
  c10::Device device{c10::kCPU};
  std::vector<at::Tensor> chunks;
  std::vector<std::int64_t> used;
};

/// Hashes asked for inside a batch (op_recorder_hashing.cpp) and not launched yet: their slots
/// are taken (consecutive, from `first` in one chunk of one device), their tensors kept alive
/// (the allocator cannot hand their memory to another tensor), and they go to the device in one
/// launch when something is about to write the memory one of them reads, when the batch ends,
/// when a hash for another device, stream or chunk is asked for, or past a bound.
struct PendingHashes {
  int device = -1;                    // into State::devices; -1: none pending
  std::optional<c10::Stream> stream;  // the stream they go on (the callers' current stream)
  int chunk = 0;
  std::int64_t first = 0;  // slot of tensors[0]
  std::vector<at::Tensor> tensors;
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;  // bytes each batched one reads [lo, hi)
  std::int64_t bytes = 0;
};

enum class Phase : std::uint8_t { forward, backward, optimizer };

struct Record {
  const OpInfo* op = nullptr;
  Phase phase = Phase::forward;
  int module = -1;  // index into State::module_names
  int code = -1;    // index into State::codes
  int line = 0;
  std::vector<TensorRef> args, outs;
  std::vector<at::Tensor> collective_inputs;  // a collective's outputs when it returns none (1.13)
  std::string group;  // a collective's group fields (`"group":...,"group_ranks":[...]`); empty: default
  // While the op runs: each input's storage and TensorImpl, to tell its views among the outputs.
  std::vector<std::pair<const c10::StorageImpl*, const c10::TensorImpl*>> input_storages;
  bool async_collective = false;
  // A kernel launch (op_recorder_kernels.cpp; op is null): its call site, which holds the
  // kernel's name and the record's "kernel" object.
  int kernel_site = -1;                    // into State::kernel_sites
  std::vector<at::Tensor> kernel_written;  // between kernel_begin and kernel_end: what it writes
  std::vector<std::size_t> kernel_at;      // their positions in the kernel's signature
};

/// A call site of a kernel (python/gparity registers each once): its name, the record's "kernel"
/// object (site, handle, source hash, config) as JSON text made by python/gparity, its arguments'
/// names and roles by position.
struct KernelSite {
  std::string kernel, kernel_json;
  std::vector<std::string> names;
  std::vector<model::ops::ArgRole> roles;
  // Where the tensors are among the launch's positional arguments (registered by
  // python/gparity; empty: not said), which a launch through oprec_launch_begin must match.
  std::vector<std::int64_t> positions;
  /// The role of argument `i` (unnamed past the signature's end).
  [[nodiscard]] model::ops::ArgRole role(std::size_t i) const {
    return i < roles.size() ? roles[i] : model::ops::ArgRole::Unnamed;
  }
};

struct CodeInfo {
  std::string file, function;
};

struct State {
  std::mutex mutex;
  bool active = false;
  OpRecorderOptions options;
  std::thread::id thread;
  std::vector<at::CallbackHandle> handles;
  std::vector<Record> records;
  std::size_t last_step_records = 0;  // what the next step reserves
  std::unordered_map<const c10::TensorImpl*, Known> known;
  // The tensors of `known` by storage: a write through one (an in-place op, a kernel writing
  // through an alias that autograd does not know as a view: Inductor's reinterpret_tensor) makes
  // the hashes of the others stale (no shared version counter tells).
  std::unordered_map<const c10::StorageImpl*, StorageTensors> by_storage;
  std::vector<DeviceWords> devices;
  PendingHashes pending;
  std::int64_t next_id = 0;
  bool backward_seen = false;
  std::vector<int> modules;  // the module stack, as indices into module_names
  std::vector<std::string> module_names;
  std::unordered_map<std::string, int> module_index;
  std::vector<CodeInfo> codes;           // user code objects seen (file, function)
  std::vector<KernelSite> kernel_sites;  // kept across steps (a process has few)
  std::string error;                     // the first failure inside a callback
};

/// The one recorder of the process (op_recorder.cpp).
State& state();

// ---- callbacks (op_recorder_callbacks.cpp) ------------------------------------------------------

/// The step's global RecordFunction callback (every thread, operator calls, inputs and outputs).
at::CallbackHandle add_callbacks();
/// A diagnostic (bench/ops_recorder_host_parts.py): a global callback like add_callbacks' that
/// does nothing, so that RecordFunction's own cost per operator call is measured apart from the
/// recorder's; with `inputs_and_outputs` it asks for what the recorder asks for (boxed).
at::CallbackHandle add_probe_callbacks(bool inputs_and_outputs);

/// While set on this thread no op is recorded: a kernel launch is in flight (kernel_begin sets
/// it, kernel_end clears it).
void set_in_kernel(bool in_kernel);

/// While above 0 no op of any thread is recorded: Dynamo or Inductor compiles (gparity_oprec_compiling,
/// from python/gparity's compile callbacks; docs/ops.md, "Compiled steps").
std::atomic<int>& compiling();

/// A new record's phase (backward on another thread or under autograd's backward; optimizer once
/// a backward was seen; else forward), module (forward only) and user source line. Caller holds
/// the state's mutex.
void place_record(State& s, Record& r, bool main_thread, bool in_backward, int code, int line);

// ---- kernel launches (op_recorder_kernels.cpp) ---------------------------------------------------

/// Registers a kernel's call site (torch.ops.gparity.oprec_kernel_site): its name, the record's
/// "kernel" JSON, its tensor arguments' names and roles ("in", "out", "in_out", other: unnamed)
/// and their positions among the launch's arguments. Returns the site's id, valid for the process.
std::int64_t kernel_site(std::string kernel, std::string kernel_json, std::vector<std::string> names,
                         std::vector<std::string> roles, std::vector<std::int64_t> positions);
/// A Triton kernel about to launch at `site` (python/gparity's launcher hook, through the
/// oprec_launch_begin builtin or torch.ops.gparity.oprec_kernel_begin): its record, the arguments it reads
/// hashed as an op's inputs are (an "out" argument: written only, never hashed before), phase, module and
/// source as an op's; no op is recorded on this thread until kernel_end. Returns the record's index, or -1
/// when no step is being recorded. `positions`: where `args` were among the launch's arguments;
/// kSignatureChanged when they are not where the site said (nothing recorded: the caller
/// registers a site for the new signature).
constexpr std::int64_t kSignatureChanged = -2;
std::int64_t kernel_begin(std::int64_t site, const std::vector<at::Tensor>& args,
                          const std::vector<std::int64_t>* positions = nullptr);
/// After the launch (gparity_oprec_kernel_end), on the kernel's stream: the arguments it wrote,
/// hashed as outputs (none when the launch failed).
void kernel_end(std::int64_t index, bool launched);

// ---- tensors (op_recorder_tensors.cpp) ----------------------------------------------------------

/// The dtype's name as the trace writes it, or null for a dtype that is not hashed.
const char* dtype_name(c10::ScalarType t);
/// A dtype that is not hashed, by c10's name, lower case.
std::string other_dtype_name(c10::ScalarType t);

/// The first and last storage element `t` reaches; false for an empty tensor or a negative stride.
bool element_range(const at::Tensor& t, std::int64_t& lo, std::int64_t& hi);

/// Appends the defined tensors in `v` (a tensor, a tensor list, nested lists and tuples).
void add_tensors(const c10::IValue& v, std::vector<at::Tensor>& out);
std::vector<at::Tensor> flat_tensors(c10::ArrayRef<const c10::IValue> values);

/// Refs of an op's tensors, hashing those the rules want hashed (op_recorder_tensors.cpp says
/// which). `inputs`: for outputs, the op's inputs' storages; `unhashed`: per output, its marker.
/// Caller holds the state's mutex.
std::vector<TensorRef> refs_of(
    State& s, const std::vector<at::Tensor>& tensors, bool as_input, bool hash_now,
    const std::vector<std::pair<const c10::StorageImpl*, const c10::TensorImpl*>>& inputs = {},
    const std::vector<const char*>& unhashed = {});

/// Refs of an op's or a launch's inputs where `written_only[i]` marks a buffer it only writes (an
/// `out=` argument, a kernel's out_ptr): hashed as inputs are, but those never (what a buffer
/// held before is no input). In the tensors' order. Caller holds the state's mutex.
std::vector<TensorRef> input_refs(State& s, const std::vector<at::Tensor>& tensors,
                                  const std::vector<bool>& written_only);

// ---- hashing (op_recorder_hashing.cpp) ----------------------------------------------------------

/// Takes slots for both hashes of `todo`'s tensors and fills them in `refs[todo[i].first]`; the
/// hashes are enqueued now (one hash_blocks_into call per device), or, inside a batch on this
/// thread, when the batch's pending hashes go (State::pending); `outputs`: they are a record's
/// outputs (their bytes count toward the batch's bound), else its inputs. Caller holds the state's
/// mutex.
void hash_many(State& s, const std::vector<std::pair<std::size_t, at::Tensor>>& todo,
               std::vector<TensorRef>& refs, bool outputs);

/// A batch of hashes on this thread (gparity_oprec_batch): while one is open, hashes wait in
/// State::pending for a reason to go. Python opens one for the run of Inductor's generated
/// `call` function, where every write to device memory is a kernel launch or an operator call
/// that the recorder sees before it runs (docs/ops.md, "Hashes in batches"). Nested: counted.
void enter_batch();
/// Closes this thread's innermost batch; the last one out sends the pending hashes. Caller does
/// not hold the state's mutex.
void leave_batch();
/// Enqueues the pending hashes (nothing pending: nothing). Caller holds the state's mutex.
void flush_hashes(State& s);
/// Before a record runs: when it writes bytes a pending hash reads (`written[i]` marks the
/// tensors it writes; empty: all of them), the pending hashes go first, and the writer's stream
/// waits for them when it is another. Caller holds the state's mutex.
void flush_if_written(State& s, const std::vector<at::Tensor>& tensors, const std::vector<bool>& written);

/// Per device, per chunk: the hash words (xxh3, shard per slot) of the step, read back with one
/// wait per device.
using HashWords = std::vector<std::vector<std::vector<std::int64_t>>>;
HashWords read_back(std::vector<DeviceWords>& devices);

// ---- Python frames (op_recorder_python.cpp) ------------------------------------------------------

#if GPARITY_OPREC_PYTHON
/// The innermost user frame (code index, line) and whether autograd's backward is on the stack;
/// false: the op is the profiler's bookkeeping (not a record).
bool python_caller(State& s, int& code, int& line, bool& in_backward);

/// A collective's group fields, from the Python recorder's rules (empty: none found).
std::string collective_group(const std::string& op, c10::ArrayRef<const c10::IValue> inputs);

/// The bytecode offset of `frame`'s current instruction (Python's frame.f_lasti).
int bytecode_offset(::_frame* frame);

// ---- launches from Python (op_recorder_launches.cpp) ---------------------------------------------

/// The builtins oprec_launch_begin(site, args) and oprec_launch_end(index, launched) (a new
/// tuple), for launches of torch.Tensor `tensor`'s arguments; null with a Python error set.
void* launch_functions(void* tensor);
/// The launch hook's builtins (a new tuple; after launch_functions): make_hook(run, python_hook),
/// set_hook_mode(mode), remember(autotuner, frame, launcher, site, watched); null with a Python
/// error set.
void* launch_hook_functions();

/// Takes the code objects and the group callable gparity_oprec_begin is given (a tuple: backward
/// codes, bookkeeping codes, optionally the callable), after releasing the last step's.
void take_codes(void* codes);
void release_codes();
#endif

// ---- output (op_recorder_writer.cpp) ------------------------------------------------------------

/// The step's records, one trace v1 "op" JSON line each, with each hash's 16 hex digits left as
/// a hole (`holes`) to fill once read back: the text is made while the device still runs the
/// step's last kernels and hashes, not after the wait.
struct StepText {
  struct Hole {
    std::size_t offset;  // of the 16 digits in `text`
    int device, chunk;   // HashWords[device][chunk]
    std::int64_t word;   // index into it
  };
  std::string text;
  std::vector<Hole> holes;
};
StepText records_jsonl(const State& s, const std::vector<Record>& records);
/// The holes of `step` filled with `words` (read_back's).
void fill_hashes(StepText& step, const HashWords& words);

}  // namespace gparity::torchops::oprec_detail
