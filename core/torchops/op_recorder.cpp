// The op recorder's C++ backend (op_recorder.hpp; docs/ops.md, "The C++ recorder"): the step's
// state, begin and end of a step, the module stack and the C entry points python/gparity calls.
// The rest, by concern, is listed in op_recorder_state.hpp.

#include "core/torchops/op_recorder.hpp"

#include <optional>
#include <stdexcept>

#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops {
namespace oprec_detail {

State& state() {
  static State s;
  return s;
}

}  // namespace oprec_detail

using oprec_detail::state;

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
    s.records.reserve(s.last_step_records);  // the records vector went to the last step's writer
    s.known.clear();
    s.by_storage.clear();
    s.devices.clear();
    s.pending = {};
    s.next_id = options.first_tensor_id;
    s.backward_seen = false;
    s.modules.clear();
    s.codes.clear();
    s.error.clear();
  }
  // Added for the step only, so nothing is paid when no step is recorded.
  s.handles.push_back(oprec_detail::add_callbacks());
}

std::string end_step(std::int64_t& next_tensor_id) {
  auto& s = state();
  for (auto h : s.handles) at::removeCallback(h);
  s.handles.clear();
  std::vector<oprec_detail::Record> records;
  std::vector<oprec_detail::DeviceWords> devices;
  {
    std::lock_guard lock(s.mutex);
    if (!s.active) throw std::runtime_error("gparity.record_ops: no step is being recorded");
    s.active = false;
    try {
      oprec_detail::flush_hashes(s);  // a batch the step's end cut short
    } catch (const std::exception& e) {
      if (s.error.empty()) s.error = e.what();
    }
    s.pending = {};
    records = std::move(s.records);
    s.last_step_records = records.size();
    devices = std::move(s.devices);
    s.known.clear();
    s.by_storage.clear();
    next_tensor_id = s.next_id;
  }
  if (!s.error.empty()) throw std::runtime_error("gparity.record_ops (C++ recorder): " + s.error);
  // The records first, while the device finishes the step; then every hash of the step, read
  // back: the step's one wait per device.
  auto text = [&] {
    const oprec_detail::SectionTimer timer(oprec_detail::Section::step_text);
    return oprec_detail::records_jsonl(s, records);
  }();
  const auto words = [&] {
    const oprec_detail::SectionTimer timer(oprec_detail::Section::read_back);
    return oprec_detail::read_back(devices);
  }();
  oprec_detail::fill_hashes(text, words);
  return std::move(text.text);
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
/// file prefixes of library code, one a line; `hash`: 0 no hashes, else the shard hash's spec (1 or
/// 2; an older Python passed 1 for "hash"). 0, or -1 (error).
__attribute__((visibility("default"))) int gparity_oprec_begin(std::int64_t step, std::int64_t first_id,
                                                               int hash, int xxh3,
                                                               const char* library_prefixes, void* codes) {
  try {
    gparity::torchops::OpRecorderOptions o;
    o.step = step;
    o.first_tensor_id = first_id;
    o.hash = hash != 0;
    o.shard_spec = hash == 2 ? 2 : 1;
    o.xxh3 = xxh3 != 0;
    o.library_prefixes = split_lines(library_prefixes);
#if GPARITY_OPREC_PYTHON
    gparity::torchops::oprec_detail::take_codes(codes);
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
    gparity::torchops::oprec_detail::release_codes();
#endif
    if (next_id) *next_id = next;
    return last_output.c_str();
  } catch (const std::exception& e) {
#if GPARITY_OPREC_PYTHON
    gparity::torchops::oprec_detail::release_codes();
#endif
    last_error = e.what();
    return nullptr;
  }
}

__attribute__((visibility("default"))) void gparity_oprec_push_module(const char* name) {
  gparity::torchops::push_module(name ? name : "");
}

/// The host time of each of the recorder's parts since the last call (op_recorder_sections.hpp;
/// zeros unless GPARITY_OPREC_SECTIONS=1): nanoseconds and calls, two int64 a section, into
/// `out` (room for `capacity` sections); resets them. Returns the number of sections.
__attribute__((visibility("default"))) int gparity_oprec_sections(std::int64_t* out, int capacity) {
  namespace d = gparity::torchops::oprec_detail;
  auto& totals = d::section_totals();
  const int n = static_cast<int>(d::Section::count);
  for (int i = 0; i < n && i < capacity; ++i) {
    out[2 * i] = totals.ns[static_cast<std::size_t>(i)].exchange(0);
    out[2 * i + 1] = totals.calls[static_cast<std::size_t>(i)].exchange(0);
  }
  return n;
}

/// The name of section `i` (op_recorder_sections.hpp), or null.
__attribute__((visibility("default"))) const char* gparity_oprec_section_name(int i) {
  namespace d = gparity::torchops::oprec_detail;
  return i >= 0 && i < static_cast<int>(d::Section::count) ? d::kSectionNames[static_cast<std::size_t>(i)]
                                                           : nullptr;
}

/// 1: Dynamo or Inductor starts compiling (a model compiled in a recorded step); 0: it is done.
/// Nested: counted. No op is recorded while one runs (python/gparity registers this with
/// torch._dynamo's compile callbacks).
__attribute__((visibility("default"))) void gparity_oprec_compiling(int enter) {
  auto& depth = gparity::torchops::oprec_detail::compiling();
  if (enter) {
    depth.fetch_add(1);
    return;
  }
  int now = depth.load();
  while (now > 0 && !depth.compare_exchange_weak(now, now - 1)) {
  }
}

/// A diagnostic (bench/ops_recorder_host_parts.py): `mode` 1 adds a global RecordFunction callback
/// that does nothing, 2 the same asking for inputs and outputs as the recorder's does, 0 removes
/// it. Never while a step is recorded (-1).
__attribute__((visibility("default"))) int gparity_oprec_probe_callbacks(int mode) {
  static std::optional<at::CallbackHandle> probe;
  if (gparity::torchops::recording()) return -1;
  if (probe) at::removeCallback(*probe);
  probe.reset();
  if (mode == 1 || mode == 2) probe = gparity::torchops::oprec_detail::add_probe_callbacks(mode == 2);
  return 0;
}

__attribute__((visibility("default"))) void gparity_oprec_pop_module() {
  gparity::torchops::pop_module();
}

/// 1: a batch of hashes opens on this thread (op_recorder_state.hpp, enter_batch); 0: this
/// thread's innermost batch closes, and the last one out sends its hashes. Python opens one
/// around each run of Inductor's generated `call` (kernel_launches.py, _Batches).
__attribute__((visibility("default"))) void gparity_oprec_batch(int enter) {
  try {
    if (enter)
      gparity::torchops::oprec_detail::enter_batch();
    else
      gparity::torchops::oprec_detail::leave_batch();
  } catch (const std::exception& e) {
    auto& s = gparity::torchops::oprec_detail::state();
    std::lock_guard lock(s.mutex);
    if (s.error.empty()) s.error = e.what();
  }
}

/// python/gparity's fast path of a launch's record (op_recorder_python.cpp, launch_functions): a
/// new tuple of two builtins, or null with a Python error set. Only in a build with Python frames
/// (gparity_oprec_features() has 2).
__attribute__((visibility("default"))) void* gparity_oprec_launch_functions(void* tensor_type) {
#if GPARITY_OPREC_PYTHON
  return gparity::torchops::oprec_detail::launch_functions(tensor_type);
#else
  (void)tensor_type;
  return nullptr;
#endif
}

/// python/gparity's launch hook (op_recorder_launches.cpp): a new tuple of three builtins, or null
/// with a Python error set (and in a build without Python frames). After
/// gparity_oprec_launch_functions.
__attribute__((visibility("default"))) void* gparity_oprec_launch_hook_functions() {
#if GPARITY_OPREC_PYTHON
  return gparity::torchops::oprec_detail::launch_hook_functions();
#else
  return nullptr;
#endif
}

/// After a kernel's launch (torch.ops.gparity.oprec_kernel_begin gave `index`): what it wrote,
/// hashed; `launched` 0: the launch failed. Through ctypes: no dispatcher call, no arguments to
/// convert.
__attribute__((visibility("default"))) void gparity_oprec_kernel_end(std::int64_t index, int launched) {
  gparity::torchops::oprec_detail::kernel_end(index, launched != 0);
}

}  // extern "C"
