// The op recorder: its RecordFunction callbacks, which turn every outermost operator call of
// every thread into a record (op_recorder_state.hpp).

#include <torch/csrc/autograd/graph_task.h>

#include <exception>

#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

// Per thread: the open RecordFunction calls (LIFO), each a record index (>= 0) or one of these.
constexpr std::int64_t kTransparent = -1;  // not an op, or a composite one: its parts may be records
constexpr std::int64_t kBlocking = -2;     // a skipped op: nothing inside it is a record
constexpr std::int64_t kNested = -3;       // inside a record or a skipped op
struct ThreadFrames {
  std::vector<std::int64_t> open;
  int blocked = 0;  // open records and skipped ops
  // Between a kernel launch's begin and end (op_recorder_kernels.cpp): what the launcher
  // dispatches (an allocation for Triton's scratch space) is the kernel's, not the step's.
  bool in_kernel = false;
};
thread_local ThreadFrames frames;

void fail(State& s, const char* what) {
  std::lock_guard lock(s.mutex);
  if (s.error.empty()) s.error = what;
}

std::int64_t start_record(State& s, const at::RecordFunction& fn, const OpInfo& info) {
  const SectionTimer timer(Section::op_record_start);
  const bool main_thread = std::this_thread::get_id() == s.thread;
  // Another thread outside any autograd graph task is a library's worker (Gloo staging a CUDA
  // tensor through the host, a data loader), not the step's program: the Python backend's
  // dispatch mode, which autograd's threads inherit and no other thread does, never sees it.
  if (!main_thread && torch::autograd::get_current_graph_task_exec_info() == nullptr) return kBlocking;
  int code = -1, line = 0;
  bool in_backward = false;
#if GPARITY_OPREC_PYTHON
  // No Python frame on autograd's device threads: backward.
  if (main_thread && !python_caller(s, code, line, in_backward)) return kBlocking;
#endif
  std::vector<at::Tensor> inputs;
  std::vector<bool> out_buffer;  // per input tensor: an `out=` argument (OpInfo::out_arguments)
  std::vector<bool> written;     // per input tensor: one the op writes (OpInfo::written_arguments)
  const auto values = fn.inputs();
  inputs.reserve(values.size());  // an argument a tensor, as most are: one allocation
  for (std::size_t i = 0; i < values.size(); ++i) {
    add_tensors(values[i], inputs);
    if (info.any_out)
      out_buffer.resize(inputs.size(), i < info.out_arguments.size() && info.out_arguments[i]);
    if (info.any_written)
      written.resize(inputs.size(), i < info.written_arguments.size() && info.written_arguments[i]);
  }
  std::string group;
#if GPARITY_OPREC_PYTHON
  if (info.collective && !info.waits && main_thread) group = collective_group(info.name, fn.inputs());
#endif
  std::lock_guard lock(s.mutex);
  if (!s.active) return kBlocking;
  Record r;
  r.op = &info;
  place_record(s, r, main_thread, in_backward, code, line);
  if (info.any_out) {
    r.args = input_refs(s, inputs, out_buffer);
    for (std::size_t i = 0; i < r.args.size(); ++i)
      if (out_buffer[i]) r.args[i].name = "out";
  } else {
    r.args =
        refs_of(s, inputs, /*as_input=*/true, /*hash_now=*/true);  // before the op: in-place ops change them
  }
  r.input_storages.reserve(inputs.size());
  for (const auto& t : inputs)
    if (t.has_storage())
      r.input_storages.emplace_back(t.storage().unsafeGetStorageImpl(), t.unsafeGetTensorImpl());
  // What it writes may be what a pending hash is to read: those go before the op runs.
  if (!info.known_writes) {
    flush_if_written(s, inputs, {});
  } else if (info.any_written) {
    written.resize(inputs.size(), false);
    flush_if_written(s, inputs, written);
  }
  if (info.collective && !info.waits) {
    r.collective_inputs = std::move(inputs);
    r.group = std::move(group);
  }
  s.records.push_back(std::move(r));
  return static_cast<std::int64_t>(s.records.size()) - 1;
}

void finish_record(State& s, const at::RecordFunction& fn, std::int64_t index) {
  const SectionTimer timer(Section::op_record_end);
  const auto& outputs = fn.outputs();
  std::vector<at::Tensor> outs;
  std::vector<const char*> unhashed;  // per output tensor, for an op with RNG state returns
  const OpInfo* info = op_info(fn);   // cached since on_start
  outs.reserve(outputs.size());
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
  const SectionTimer timer(Section::callback_start);
  auto& f = frames;
  // While Dynamo or Inductor compiles (python/gparity's compile callbacks), what runs is the
  // compiler's (tracing, fake tensors, benchmark buffers), not the step's program.
  if (f.blocked > 0 || f.in_kernel || compiling().load(std::memory_order_relaxed) > 0) {
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
  const SectionTimer timer(Section::callback_end);
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

}  // namespace

std::atomic<int>& compiling() {
  static std::atomic<int> depth{0};
  return depth;
}

void set_in_kernel(bool in_kernel) {
  frames.in_kernel = in_kernel;
}

void place_record(State& s, Record& r, bool main_thread, bool in_backward, int code, int line) {
  if (!main_thread || in_backward) {
    r.phase = Phase::backward;
    s.backward_seen = true;
  } else {
    r.phase = s.backward_seen ? Phase::optimizer : Phase::forward;
  }
  if (r.phase == Phase::forward && !s.modules.empty()) r.module = s.modules.back();
  r.code = code;
  r.line = line;
}

// Global, not thread-local: CUDA backward runs on autograd's device threads.
namespace {
/// A global callback on every thread's operator calls (FUNCTION scope).
at::CallbackHandle add_global(at::RecordFunctionCallback::StartCallback start,
                              at::RecordFunctionCallback::EndCallback end, bool inputs_and_outputs) {
  return at::addGlobalCallback(at::RecordFunctionCallback(start, end)
                                   .needsInputs(inputs_and_outputs)
                                   .needsOutputs(inputs_and_outputs)
                                   .scopes({at::RecordScope::FUNCTION}));
}
}  // namespace

at::CallbackHandle add_callbacks() {
  return add_global(&on_start, &on_end, /*inputs_and_outputs=*/true);
}

at::CallbackHandle add_probe_callbacks(bool inputs_and_outputs) {
  return add_global([](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> { return nullptr; },
                    [](const at::RecordFunction&, at::ObserverContext*) {}, inputs_and_outputs);
}

}  // namespace gparity::torchops::oprec_detail
