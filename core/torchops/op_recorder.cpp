// The op recorder's C++ backend (op_recorder.hpp; docs/ops.md, "The C++ recorder").

#if GPARITY_OPREC_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#endif

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/intrusive_ptr.h>

#include <array>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/runtime/recorder.hpp"
#include "core/torchops/op_recorder.hpp"

namespace gparity::torchops {
namespace {

constexpr std::int64_t kSlotsPerChunk = 1 << 15;  // hash slots per device buffer (2 int64 words each)

// ---- ops ----------------------------------------------------------------------------------------

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
};

/// The Python recorder's rule (op_recorder.py, _unhashed_return; core/model/ops/op_log.hpp).
const char* unhashed_return(std::string_view name) {
  for (const std::string_view rng : {"philox_seed", "philox_offset", "rng_state", "unused", "seed", "offset"})
    if (name == rng) return "rng_state";
  return name == "debug_attn_mask" ? "debug" : "";
}

std::string display_name(const c10::OperatorName& op) {
  if (op.overload_name.empty() || op.overload_name == "default") return op.name;
  return op.name + "." + op.overload_name;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::unique_ptr<OpInfo> classify(const c10::OperatorName& op) {
  auto info = std::make_unique<OpInfo>();
  info->name = display_name(op);
  info->skip = starts_with(op.name, "profiler::") || starts_with(op.name, "gparity::");
  info->collective = starts_with(op.name, "c10d::") || starts_with(op.name, "_c10d_functional::") ||
                     starts_with(op.name, "c10d_functional::");
  info->waits = info->collective && op.name.find("wait_tensor") != std::string::npos;
  if (auto handle = c10::Dispatcher::singleton().findOp(op)) {
    if (handle->hasSchema()) {
      for (const auto& ret : handle->schema().returns()) {
        info->unhashed_returns.push_back(unhashed_return(ret.name()));
        info->any_unhashed = info->any_unhashed || info->unhashed_returns.back()[0] != '\0';
      }
    }
    // An op with only a CompositeImplicitAutograd kernel is decomposed above autograd: the
    // Python dispatch mode sees its parts, so they are the records here too.
    // (Not checking the Autograd alias: linear and matmul register one there for nested tensors.)
    info->transparent = handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
                        !handle->hasKernelForDispatchKey(c10::DispatchKey::CPU) &&
                        !handle->hasKernelForDispatchKey(c10::DispatchKey::CUDA);
  }
  return info;
}

/// The op's info, or null for a RecordFunction that is not an operator call. Schema names live as
/// long as their operator, so the name's address identifies the overload: one lookup per thread
/// and overload, one classification per overload.
const OpInfo* op_info(const at::RecordFunction& fn) {
  static std::mutex registry_mutex;
  static std::unordered_map<const char*, std::unique_ptr<OpInfo>> registry;
  thread_local std::unordered_map<const char*, const OpInfo*> cache;
  const char* key = fn.name();
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const auto op = fn.operator_name();
  if (!op) return nullptr;  // a named scope (not cached: its name's address is not stable)
  std::lock_guard lock(registry_mutex);
  auto& slot = registry[key];
  if (!slot) slot = classify(*op);
  cache.emplace(key, slot.get());
  return slot.get();
}

// ---- tensors ------------------------------------------------------------------------------------

const char* dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::ComplexFloat: return "complex64";
    case c10::ScalarType::ComplexDouble: return "complex128";
    default: return nullptr;  // not hashed (as the Python recorder's dtype table)
  }
}

std::string other_dtype_name(c10::ScalarType t) {
  std::string s = c10::toString(t);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool hashable(const at::Tensor& t) {
  return t.layout() == at::kStrided && (t.is_cpu() || t.is_cuda()) && dtype_name(t.scalar_type()) &&
         t.has_storage() && !t.key_set().has(c10::DispatchKey::Python);
}

std::int64_t version_of(const at::Tensor& t) {
  auto* impl = t.unsafeGetTensorImpl();
  return impl->is_inference() ? 0 : static_cast<std::int64_t>(impl->version_counter().current_version());
}

void add_tensors(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) out.push_back(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector())
      if (t.defined()) out.push_back(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) add_tensors(e, out);
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) add_tensors(e, out);
  }
}

std::vector<at::Tensor> flat_tensors(c10::ArrayRef<const c10::IValue> values) {
  std::vector<at::Tensor> out;
  for (const auto& v : values) add_tensors(v, out);
  return out;
}

struct TensorRef {
  std::int64_t id = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  std::vector<std::int64_t> shape;
  int device = -1;  // index into Step::devices; -1: not hashed
  int chunk = 0;
  std::int64_t slot = 0;
  std::int64_t view_base = -1;  // a view (issue 24): the id of the hashed tensor it lies in; no hash
  const char* unhashed = "";    // RNG state / debug output ("rng_state", "debug"): no hash
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
};

struct DeviceWords {
  c10::Device device{c10::kCPU};
  std::vector<at::Tensor> chunks;
  std::vector<std::int64_t> used;
  // CUDA with GPARITY_OPREC_SIDE_STREAM=1: the hashes run on a stream of the pool, after an
  // event of the op's stream, so that they overlap the step's next kernels; each hashed tensor's memory is
  // recorded on it (the allocator does not reuse it before the hash ran) and end_step waits for it.
  std::optional<c10::Stream> side;
  std::shared_ptr<c10::Event> ready;  // recorded on the op's stream before each batch
};

/// GPARITY_OPREC_SIDE_STREAM=1 hashes on a side stream. Off by default: on an H100 it was faster
/// at dim 2048 (1.33x against 1.40x) and slower at dim 4096 (1.85x against 1.60x), where the
/// step is short and the hashes queued on the side stream are what end_step waits for (docs/ops.md).
bool side_stream_wanted() {
  const char* v = std::getenv("GPARITY_OPREC_SIDE_STREAM");
  return v && v[0] == '1';
}

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
  std::unordered_map<const c10::TensorImpl*, Known> known;
  std::vector<DeviceWords> devices;
  std::int64_t next_id = 0;
  bool backward_seen = false;
  std::vector<int> modules;  // the module stack, as indices into module_names
  std::vector<std::string> module_names;
  std::unordered_map<std::string, int> module_index;
  std::vector<CodeInfo> codes;  // user code objects seen (file, function)
  std::string error;            // the first failure inside a callback
};

State& state() {
  static State s;
  return s;
}

// ---- hashing ------------------------------------------------------------------------------------

/// Enqueues both hashes of `tensors` (one hash_blocks_into call per device), fills their refs'
/// slots. Caller holds the state's mutex.
void hash_many(State& s, const std::vector<std::pair<std::size_t, at::Tensor>>& todo,
               std::vector<TensorRef>& refs) {
  at::DisableRecordFunctionGuard no_records;  // our own zeros/contiguous are not the step's ops
  at::NoGradGuard no_grad;
  std::vector<bool> done(todo.size(), false);
  for (std::size_t i = 0; i < todo.size(); ++i) {
    if (done[i]) continue;
    const auto device = todo[i].second.device();
    std::vector<at::Tensor> group;
    std::vector<std::size_t> members;
    for (std::size_t j = i; j < todo.size(); ++j)
      if (!done[j] && todo[j].second.device() == device) {
        group.push_back(todo[j].second);
        members.push_back(j);
        done[j] = true;
      }
    int d = 0;
    while (d < static_cast<int>(s.devices.size()) && s.devices[static_cast<std::size_t>(d)].device != device)
      ++d;
    if (d == static_cast<int>(s.devices.size())) {
      DeviceWords fresh{device, {}, {}, std::nullopt, nullptr};
      if (device.is_cuda() && side_stream_wanted()) {
        const auto* impl = c10::impl::getDeviceGuardImpl(device.type());
        fresh.side = impl->getStreamFromGlobalPool(device, /*isHighPriority=*/false);
        fresh.ready = std::make_shared<c10::Event>(device.type());
      }
      s.devices.push_back(std::move(fresh));
    }
    auto& dw = s.devices[static_cast<std::size_t>(d)];
    const auto n = static_cast<std::int64_t>(group.size());
    if (dw.chunks.empty() || dw.used.back() + n > dw.chunks.back().numel() / 2) {
      dw.chunks.push_back(
          at::zeros({2 * std::max(kSlotsPerChunk, n)}, at::TensorOptions().dtype(at::kLong).device(device)));
      dw.used.push_back(0);
    }
    const std::int64_t first = dw.used.back();
    if (dw.side) {
      const auto* impl = c10::impl::getDeviceGuardImpl(device.type());
      c10::DeviceGuard on_device(device);
      dw.ready->record(impl->getStream(device));
      dw.side->wait(*dw.ready);
      c10::StreamGuard on_side(*dw.side);
      runtime::hash_blocks_into(group, dw.chunks.back(), first, s.options.xxh3);
      for (const auto& t : group) impl->recordDataPtrOnStream(t.storage().data_ptr(), *dw.side);
    } else {
      runtime::hash_blocks_into(group, dw.chunks.back(), first, s.options.xxh3);
    }
    dw.used.back() += n;
    for (std::size_t k = 0; k < members.size(); ++k) {
      auto& ref = refs[todo[members[k]].first];
      ref.device = d;
      ref.chunk = static_cast<int>(dw.chunks.size()) - 1;
      ref.slot = first + static_cast<std::int64_t>(k);
    }
  }
}

/// The hashed tensor whose hash is `k`'s tensor's value now (itself, or a view's base: fresh, at
/// the version hashed), or null. A view whose base is gone (a gradient outliving the mm output it
/// is a transpose of) still holds it while `self` is at the version its base had (view ops and
/// detach share the base's counter, so a write through either shows).
const Known* fresh_hashed(State& s, const Known& k, const at::Tensor* self = nullptr) {
  const Known* h = &k;
  if (k.base) {
    const auto it = s.known.find(k.base);
    if (it == s.known.end() || it->second.id != k.base_id) return nullptr;
    h = &it->second;
  }
  if (!h->fresh) return nullptr;
  const auto impl = h->keep.lock();
  if (!impl) {
    const bool holds = h != &k && self && version_of(*self) == k.version;
    return holds ? h : nullptr;
  }
  const auto version =
      impl->is_inference() ? 0 : static_cast<std::int64_t>(impl->version_counter().current_version());
  return version == h->version ? h : nullptr;
}

/// The hashed tensor a view input lies in: its autograd base (at::Tensor::_base), while that is
/// fresh; else null.
const Known* fresh_base_of(State& s, const at::Tensor& t) {
  if (!t.is_view()) return nullptr;
  const auto it = s.known.find(t._base().unsafeGetTensorImpl());
  return it == s.known.end() ? nullptr : fresh_hashed(s, it->second);
}

/// Refs of an op's tensors, with the Python recorder's rules: an input that is a fresh earlier
/// output of the step (same version), or a view of one, is not hashed; an output is hashed
/// unless it is a view of an input (a new tensor sharing an input's storage: issue 24; its
/// record names its base) or an incomplete collective's (then marked stale: its next reader
/// hashes it). `inputs`: for outputs, the op's inputs' storages.
std::vector<TensorRef> refs_of(
    State& s, const std::vector<at::Tensor>& tensors, bool as_input, bool hash_now,
    const std::vector<std::pair<const c10::StorageImpl*, const c10::TensorImpl*>>& inputs = {},
    const std::vector<const char*>& unhashed = {}) {
  std::vector<TensorRef> refs;
  refs.reserve(tensors.size());
  std::vector<std::pair<std::size_t, at::Tensor>> todo;
  for (std::size_t ti = 0; ti < tensors.size(); ++ti) {
    const auto& t = tensors[ti];
    const auto version = version_of(t);
    auto* impl = t.unsafeGetTensorImpl();
    auto it = s.known.find(impl);
    TensorRef ref;
    ref.dtype = t.scalar_type();
    ref.shape = t.sizes().vec();
    const Known* base = nullptr;  // the fresh hashed tensor this one's value is in, if any
    if (as_input && it != s.known.end() && it->second.unhashed[0] != '\0' && it->second.version == version) {
      // An RNG state output read back (the attention backward): the same bytes, no value.
      ref.id = it->second.id;
      ref.unhashed = it->second.unhashed;
      refs.push_back(std::move(ref));
      continue;
    }
    if (as_input) {
      if (it != s.known.end()) {
        if (it->second.base || it->second.version == version) base = fresh_hashed(s, it->second, &t);
      }
      if (!base) base = fresh_base_of(s, t);
      if (base && it != s.known.end() && base == &it->second) {
        ref.id = it->second.id;  // a fresh earlier output (or input) of the step: its hash holds
        refs.push_back(std::move(ref));
        continue;
      }
    } else if (t.has_storage()) {
      const auto* storage = t.storage().unsafeGetStorageImpl();
      bool same = false;
      const c10::TensorImpl* aliased = nullptr;
      for (const auto& [st, in] : inputs) {
        same = same || in == impl;
        if (!aliased && st == storage) aliased = in;
      }
      if (!same && aliased) {
        const auto a = s.known.find(aliased);
        if (a != s.known.end()) base = fresh_hashed(s, a->second);
      }
    }
    if (it == s.known.end()) {
      Known k(t);
      k.id = s.next_id++;
      it = s.known.emplace(impl, std::move(k)).first;
    }
    ref.id = it->second.id;
    it->second.version = version;
    it->second.unhashed = "";
    if (!as_input && ti < unhashed.size() && unhashed[ti][0] != '\0') {
      it->second.fresh = false;
      it->second.base = nullptr;
      it->second.base_id = -1;
      it->second.unhashed = ref.unhashed = unhashed[ti];
      refs.push_back(std::move(ref));
      continue;
    }
    if (base) {
      // A view of a fresh hashed tensor: not hashed, names its base; its version is the base's
      // (shared once autograd has made it a view).
      it->second.version = base->version;
      it->second.base = base->keep._unsafe_get_target();  // its key in `known` (alive or not)
      it->second.base_id = base->id;
      it->second.fresh = false;
      ref.view_base = base->id;
      refs.push_back(std::move(ref));
      continue;
    }
    const bool want = hash_now && s.options.hash && hashable(t);
    it->second.fresh = want;
    it->second.base = nullptr;
    it->second.base_id = -1;
    if (want) todo.emplace_back(refs.size(), t);
    refs.push_back(std::move(ref));
  }
  if (!todo.empty()) hash_many(s, todo, refs);
  return refs;
}

// ---- Python frames -------------------------------------------------------------------------------

#if GPARITY_OPREC_PYTHON
enum class CodeKind : std::uint8_t { library, user, backward, bookkeeping };
struct CodeEntry {
  CodeKind kind = CodeKind::library;
  int index = -1;  // into State::codes (user code)
};
// Touched only with the GIL held (the callbacks take it; begin/end are called from Python).
std::unordered_map<PyObject*, CodeEntry> code_cache;  // holds a reference to each code object
std::vector<PyObject*> backward_codes;                // torch.autograd.backward, .grad (references)
// record_function.__enter__/__exit__: the profiler:: ops they call are not observed by
// RecordFunction, so the allocations inside them (an uninitialized handle) would look outermost.
std::vector<PyObject*> bookkeeping_codes;
// The Python recorder's group of a collective (op_recorder.py, _collective_group): called with the
// op's name and its string and int-list arguments, on the step's thread while the collective's
// caller (distributed_c10d.py) is on the Python stack; returns the record's group fields.
PyObject* group_fn = nullptr;

std::string utf8(PyObject* s) {
  const char* p = s ? PyUnicode_AsUTF8(s) : nullptr;
  if (!p) {
    PyErr_Clear();
    return {};
  }
  return p;
}

bool library_file(const State& s, const std::string& file) {
  if (file.empty() || file[0] == '<' || file.find("/functorch/") != std::string::npos) return true;
  for (const auto& prefix : s.options.library_prefixes)
    if (starts_with(file, prefix)) return true;
  return false;
}

const CodeEntry& code_entry(State& s, PyCodeObject* code) {
  auto* key = reinterpret_cast<PyObject*>(code);
  if (auto it = code_cache.find(key); it != code_cache.end()) return it->second;
  CodeEntry e;
  for (auto* b : backward_codes)
    if (b == key) e.kind = CodeKind::backward;
  for (auto* b : bookkeeping_codes)
    if (b == key) e.kind = CodeKind::bookkeeping;
  if (e.kind == CodeKind::library) {
    auto file = utf8(code->co_filename);
    if (!library_file(s, file)) {
      e.kind = CodeKind::user;
      std::lock_guard lock(s.mutex);
      e.index = static_cast<int>(s.codes.size());
      s.codes.push_back({std::move(file), utf8(code->co_name)});
    }
  }
  Py_INCREF(key);
  return code_cache.emplace(key, e).first->second;
}

/// The innermost user frame (code index, line) and whether autograd's backward is on the stack;
/// false: the op is the profiler's bookkeeping (not a record).
bool python_caller(State& s, int& code, int& line, bool& in_backward) {
  if (!Py_IsInitialized()) return true;
  const PyGILState_STATE gil = PyGILState_Ensure();
  PyFrameObject* f = PyThreadState_GetFrame(PyThreadState_Get());
  bool keep = true;
  while (f) {
    PyCodeObject* c = PyFrame_GetCode(f);
    const CodeEntry e = code_entry(s, c);
    Py_DECREF(c);
    if (e.kind == CodeKind::bookkeeping) {
      keep = false;
      Py_DECREF(f);
      break;
    }
    if (e.kind == CodeKind::backward) {
      in_backward = true;
    } else if (e.kind == CodeKind::user) {
      code = e.index;
      line = PyFrame_GetLineNumber(f);
      Py_DECREF(f);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  PyGILState_Release(gil);
  return keep;
}

void release_codes() {
  for (auto& [code, entry] : code_cache) Py_DECREF(code);
  code_cache.clear();
  for (auto* b : backward_codes) Py_DECREF(b);
  backward_codes.clear();
  for (auto* b : bookkeeping_codes) Py_DECREF(b);
  bookkeeping_codes.clear();
  Py_XDECREF(group_fn);
  group_fn = nullptr;
}

/// A collective's group fields, from the Python recorder's rules (empty: none found).
std::string collective_group(const std::string& op, c10::ArrayRef<const c10::IValue> inputs) {
  if (!group_fn || !Py_IsInitialized()) return {};
  at::DisableRecordFunctionGuard no_records;  // whatever the lookup runs is not the step's
  const PyGILState_STATE gil = PyGILState_Ensure();
  std::string out;
  PyObject* args = PyList_New(0);
  for (const auto& v : inputs) {
    PyObject* item = nullptr;
    if (v.isString()) {
      item = PyUnicode_FromString(v.toStringRef().c_str());
    } else if (v.isIntList()) {
      const auto ints = v.toIntVector();
      item = PyList_New(static_cast<Py_ssize_t>(ints.size()));
      for (std::size_t i = 0; item && i < ints.size(); ++i)
        PyList_SET_ITEM(item, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(ints[i]));
    }
    if (item) {
      PyList_Append(args, item);
      Py_DECREF(item);
    }
  }
  PyObject* r = args ? PyObject_CallFunction(group_fn, "sO", op.c_str(), args) : nullptr;
  if (r && PyUnicode_Check(r)) out = utf8(r);
  if (!r) PyErr_Clear();
  Py_XDECREF(r);
  Py_XDECREF(args);
  PyGILState_Release(gil);
  return out;
}
#endif

// ---- callbacks ----------------------------------------------------------------------------------

// Per thread: the open RecordFunction calls (LIFO), each a record index (>= 0) or one of these.
constexpr std::int64_t kTransparent = -1;  // not an op, or a composite one: its parts may be records
constexpr std::int64_t kBlocking = -2;     // a skipped op: nothing inside it is a record
constexpr std::int64_t kNested = -3;       // inside a record or a skipped op
struct ThreadFrames {
  std::vector<std::int64_t> open;
  int blocked = 0;  // open records and skipped ops
};
thread_local ThreadFrames frames;

void fail(State& s, const char* what) {
  std::lock_guard lock(s.mutex);
  if (s.error.empty()) s.error = what;
}

std::int64_t start_record(State& s, const at::RecordFunction& fn, const OpInfo& info) {
  const bool main_thread = std::this_thread::get_id() == s.thread;
  int code = -1, line = 0;
  bool in_backward = false;
#if GPARITY_OPREC_PYTHON
  // No Python frame on autograd's device threads: backward.
  if (main_thread && !python_caller(s, code, line, in_backward)) return kBlocking;
#endif
  auto inputs = flat_tensors(fn.inputs());
  std::string group;
#if GPARITY_OPREC_PYTHON
  if (info.collective && !info.waits && main_thread) group = collective_group(info.name, fn.inputs());
#endif
  std::lock_guard lock(s.mutex);
  if (!s.active) return kBlocking;
  Record r;
  r.op = &info;
  if (!main_thread || in_backward) {
    r.phase = Phase::backward;
    s.backward_seen = true;
  } else {
    r.phase = s.backward_seen ? Phase::optimizer : Phase::forward;
  }
  if (r.phase == Phase::forward && !s.modules.empty()) r.module = s.modules.back();
  r.code = code;
  r.line = line;
  r.args =
      refs_of(s, inputs, /*as_input=*/true, /*hash_now=*/true);  // before the op: in-place ops change them
  for (const auto& t : inputs)
    if (t.has_storage())
      r.input_storages.emplace_back(t.storage().unsafeGetStorageImpl(), t.unsafeGetTensorImpl());
  if (info.collective && !info.waits) {
    r.collective_inputs = std::move(inputs);
    r.group = std::move(group);
  }
  s.records.push_back(std::move(r));
  return static_cast<std::int64_t>(s.records.size()) - 1;
}

void finish_record(State& s, const at::RecordFunction& fn, std::int64_t index) {
  const auto& outputs = fn.outputs();
  std::vector<at::Tensor> outs;
  std::vector<const char*> unhashed;  // per output tensor, for an op with RNG state returns
  const OpInfo* info = op_info(fn);   // cached since on_start
  const bool by_return = info && info->any_unhashed && outputs.size() == info->unhashed_returns.size();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    add_tensors(outputs[i], outs);
    if (by_return) unhashed.resize(outs.size(), info->unhashed_returns[i]);
  }
  std::lock_guard lock(s.mutex);
  if (!s.active || index >= static_cast<std::int64_t>(s.records.size())) return;
  auto& r = s.records[static_cast<std::size_t>(index)];
  // c10d::allreduce_ (torch 1.13) returns a Work: the tensors it reduces in place are its outputs.
  if (r.op->collective && !r.op->waits && outs.empty()) outs = std::move(r.collective_inputs);
  r.collective_inputs.clear();
  r.async_collective = r.op->collective && !r.op->waits;
  r.outs = refs_of(s, outs, /*as_input=*/false, /*hash_now=*/!r.async_collective, r.input_storages, unhashed);
  r.input_storages.clear();
  r.input_storages.shrink_to_fit();
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  auto& f = frames;
  if (f.blocked > 0) {
    f.open.push_back(kNested);
    return nullptr;
  }
  try {
    const OpInfo* info = op_info(fn);
    if (!info || info->transparent) {
      f.open.push_back(kTransparent);
      return nullptr;
    }
    const std::int64_t index = info->skip ? kBlocking : start_record(state(), fn, *info);
    f.open.push_back(index);
    ++f.blocked;
  } catch (const std::exception& e) {
    fail(state(), e.what());
    f.open.push_back(kBlocking);
    ++f.blocked;
  }
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* /*unused*/) {
  auto& f = frames;
  if (f.open.empty()) return;  // started before the callbacks were added
  const std::int64_t top = f.open.back();
  f.open.pop_back();
  if (top == kNested || top == kTransparent) return;
  --f.blocked;
  if (top < 0) return;
  try {
    finish_record(state(), fn, top);
  } catch (const std::exception& e) {
    fail(state(), e.what());
  }
}

// ---- output -------------------------------------------------------------------------------------

void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
}

std::string hex64(std::int64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(v)));
  return buf;
}

const std::string& code_line(const std::string& file, int line) {
  static std::unordered_map<std::string, std::vector<std::string>> files;
  static const std::string none;
  auto it = files.find(file);
  if (it == files.end()) {
    std::vector<std::string> lines;
    std::ifstream in(file);
    for (std::string l; std::getline(in, l);) {
      const auto b = l.find_first_not_of(" \t\r\f\v");
      const auto e = l.find_last_not_of(" \t\r\f\v");
      lines.push_back(b == std::string::npos ? std::string() : l.substr(b, e - b + 1));
    }
    it = files.emplace(file, std::move(lines)).first;
  }
  return line > 0 && static_cast<std::size_t>(line) <= it->second.size()
             ? it->second[static_cast<std::size_t>(line) - 1]
             : none;
}

}  // namespace

bool recording() {
  std::lock_guard lock(state().mutex);
  return state().active;
}

void begin_step(const OpRecorderOptions& options) {
  auto& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (s.active) throw std::runtime_error("gparity.record_ops: a step is already being recorded");
    s.active = true;
    s.options = options;
    s.thread = std::this_thread::get_id();
    s.records.clear();
    s.known.clear();
    s.devices.clear();
    s.next_id = options.first_tensor_id;
    s.backward_seen = false;
    s.modules.clear();
    s.codes.clear();
    s.error.clear();
  }
  // Global, not thread-local: CUDA backward runs on autograd's device threads. Added for the step
  // only, so nothing is paid when no step is recorded.
  s.handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                                .needsInputs(true)
                                                .needsOutputs(true)
                                                .scopes({at::RecordScope::FUNCTION})));
}

std::string end_step(std::int64_t& next_tensor_id) {
  auto& s = state();
  for (auto h : s.handles) at::removeCallback(h);
  s.handles.clear();
  std::vector<Record> records;
  std::vector<DeviceWords> devices;
  {
    std::lock_guard lock(s.mutex);
    if (!s.active) throw std::runtime_error("gparity.record_ops: no step is being recorded");
    s.active = false;
    records = std::move(s.records);
    devices = std::move(s.devices);
    s.known.clear();
    next_tensor_id = s.next_id;
  }
  if (!s.error.empty()) throw std::runtime_error("gparity.record_ops (C++ recorder): " + s.error);
  // Every hash of the step, read back: the step's one wait per device.
  std::vector<std::vector<std::vector<std::int64_t>>> words(devices.size());
  {
    at::DisableRecordFunctionGuard no_records;
    for (std::size_t d = 0; d < devices.size(); ++d) {
      if (devices[d].side) devices[d].side->synchronize();  // the step's hashes, all enqueued there
      for (std::size_t c = 0; c < devices[d].chunks.size(); ++c) {
        const auto host = devices[d].chunks[c].narrow(0, 0, 2 * devices[d].used[c]).cpu();
        const auto* p = host.data_ptr<std::int64_t>();
        words[d].emplace_back(p, p + host.numel());
      }
    }
  }
  const bool xxh3 = s.options.xxh3;
  const auto tensor = [&](std::string& out, const TensorRef& t) {
    out += "{\"id\":";
    out += std::to_string(t.id);
    out += ",\"dtype\":";
    const char* name = dtype_name(t.dtype);
    json_string(out, name ? std::string(name) : other_dtype_name(t.dtype));
    out += ",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(t.shape[i]);
    }
    out += ']';
    if (t.unhashed[0] != '\0') {
      out += ",\"unhashed\":\"";
      out += t.unhashed;
      out += '"';
    }
    if (t.view_base >= 0) {
      out += ",\"view\":{\"base\":";
      out += std::to_string(t.view_base);
      out += '}';
    }
    if (t.device >= 0) {
      const auto& w = words[static_cast<std::size_t>(t.device)][static_cast<std::size_t>(t.chunk)];
      const auto i = static_cast<std::size_t>(t.slot);
      if (xxh3) {
        out += ",\"xxh3\":\"";
        out += hex64(w[2 * i]);
        out += '"';
      }
      out += ",\"shard\":\"";
      out += hex64(w[2 * i + 1]);
      out += '"';
    }
    out += '}';
  };
  static constexpr std::array<const char*, 3> kPhases = {"forward", "backward", "optimizer"};
  std::string out;
  out.reserve(records.size() * 256);
  for (std::size_t index = 0; index < records.size(); ++index) {
    const auto& r = records[index];
    out += "{\"type\":\"op\",\"step\":";
    out += std::to_string(s.options.step);
    out += ",\"index\":";
    out += std::to_string(index);
    out += ",\"op\":";
    json_string(out, r.op->name);
    out += ",\"phase\":\"";
    out += kPhases[static_cast<std::size_t>(r.phase)];
    out += '"';
    if (r.module >= 0) {
      out += ",\"module\":";
      json_string(out, s.module_names[static_cast<std::size_t>(r.module)]);
    }
    if (r.code >= 0) {
      const auto& c = s.codes[static_cast<std::size_t>(r.code)];
      out += ",\"source\":{\"file\":";
      json_string(out, c.file);
      out += ",\"line\":";
      out += std::to_string(r.line);
      out += ",\"function\":";
      json_string(out, c.function);
      out += ",\"code\":";
      json_string(out, code_line(c.file, r.line));
      out += '}';
    }
    for (const auto* key : {"args", "outs"}) {
      const auto& list = key[0] == 'a' ? r.args : r.outs;
      out += ",\"";
      out += key;
      out += "\":[";
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (i) out += ',';
        tensor(out, list[i]);
      }
      out += ']';
    }
    if (r.async_collective) {
      out += ",\"collective\":true,";
      out += r.group.empty() ? std::string("\"group\":\"default\"") : r.group;
      out += ",\"async\":true";
    }
    out += "}\n";
  }
  return out;
}

void push_module(std::string_view name) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  auto [it, added] = s.module_index.try_emplace(std::string(name), static_cast<int>(s.module_names.size()));
  if (added) s.module_names.emplace_back(name);
  s.modules.push_back(it->second);
}

void pop_module() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.modules.empty()) s.modules.pop_back();
}

}  // namespace gparity::torchops

// ---- C entry points for python/gparity (ctypes.PyDLL: called with the GIL held) --------------------

namespace {
std::string last_error;
std::string last_output;

std::vector<std::string> split_lines(const char* text) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = text ? text : ""; *p; ++p) {
    if (*p == '\n') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}
}  // namespace

extern "C" {

/// 1: the C++ recorder; 3: with source lines from Python's frames.
__attribute__((visibility("default"))) int gparity_oprec_features() {
  return GPARITY_OPREC_PYTHON ? 3 : 1;
}

__attribute__((visibility("default"))) const char* gparity_oprec_error() {
  return last_error.c_str();
}

/// `codes`: a tuple of two tuples of code objects: those whose frames mean backward
/// (torch.autograd.backward, .grad), those whose direct ops are bookkeeping (record_function's
/// __enter__/__exit__); then, optionally, the callable that names a collective's group; `library_prefixes`:
/// file prefixes of library code, one a line. 0, or -1 (error).
__attribute__((visibility("default"))) int gparity_oprec_begin(std::int64_t step, std::int64_t first_id,
                                                               int hash, int xxh3,
                                                               const char* library_prefixes, void* codes) {
  try {
    gparity::torchops::OpRecorderOptions o;
    o.step = step;
    o.first_tensor_id = first_id;
    o.hash = hash != 0;
    o.xxh3 = xxh3 != 0;
    o.library_prefixes = split_lines(library_prefixes);
#if GPARITY_OPREC_PYTHON
    gparity::torchops::release_codes();
    auto* both = static_cast<PyObject*>(codes);
    const auto take = [&](Py_ssize_t which, std::vector<PyObject*>& into) {
      PyObject* t = both && PyTuple_Check(both) && PyTuple_GET_SIZE(both) > which
                        ? PyTuple_GET_ITEM(both, which)
                        : nullptr;
      if (t && PyTuple_Check(t))
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); ++i) {
          PyObject* c = PyTuple_GET_ITEM(t, i);
          Py_INCREF(c);
          into.push_back(c);
        }
    };
    take(0, gparity::torchops::backward_codes);
    take(1, gparity::torchops::bookkeeping_codes);
    if (both && PyTuple_Check(both) && PyTuple_GET_SIZE(both) > 2 &&
        PyCallable_Check(PyTuple_GET_ITEM(both, 2))) {
      gparity::torchops::group_fn = PyTuple_GET_ITEM(both, 2);
      Py_INCREF(gparity::torchops::group_fn);
    }
#else
    (void)codes;
#endif
    gparity::torchops::begin_step(o);
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

/// The step's records (JSON lines; valid until the next call), or null (error). `next_id`: the
/// first tensor id of the next step.
__attribute__((visibility("default"))) const char* gparity_oprec_end(std::int64_t* next_id) {
  try {
    std::int64_t next = 0;
    last_output = gparity::torchops::end_step(next);
#if GPARITY_OPREC_PYTHON
    gparity::torchops::release_codes();
#endif
    if (next_id) *next_id = next;
    return last_output.c_str();
  } catch (const std::exception& e) {
#if GPARITY_OPREC_PYTHON
    gparity::torchops::release_codes();
#endif
    last_error = e.what();
    return nullptr;
  }
}

__attribute__((visibility("default"))) void gparity_oprec_push_module(const char* name) {
  gparity::torchops::push_module(name ? name : "");
}

__attribute__((visibility("default"))) void gparity_oprec_pop_module() {
  gparity::torchops::pop_module();
}

}  // extern "C"
