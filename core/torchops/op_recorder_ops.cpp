// The op recorder: which operator calls are records (op_recorder_state.hpp).

#include <ATen/core/dispatch/Dispatcher.h>

#include <mutex>

#include "core/model/ops/op_log.hpp"
#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

/// The Python recorder's rule (op_recorder.py, _unhashed_return), the readers' own
/// (model::ops::unhashed_return): one rule. The names are literals, NUL-terminated, alive for the
/// life of the process, as the writer keeps them.
const char* unhashed_return(std::string_view name) {
  return model::ops::unhashed_name(model::ops::unhashed_return(name)).data();
}

std::string display_name(const c10::OperatorName& op) {
  if (op.overload_name.empty() || op.overload_name == "default") return op.name;
  return op.name + "." + op.overload_name;
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
      for (const auto& arg : handle->schema().arguments()) {
        const bool written = arg.alias_info() && arg.alias_info()->isWrite();
        const bool out = arg.kwarg_only() && written;
        info->out_arguments.push_back(out);
        info->any_out = info->any_out || out;
        info->written_arguments.push_back(written);
        info->any_written = info->any_written || written;
      }
      info->known_writes = true;
      for (const auto& ret : handle->schema().returns()) {
        info->unhashed_returns.push_back(unhashed_return(ret.name()));
        info->any_unhashed = info->any_unhashed || info->unhashed_returns.back()[0] != '\0';
      }
      // An allocation's result holds whatever the allocator's block held: no value to hash.
      if (info->unhashed_returns.size() == 1 && model::ops::allocates_uninitialized(op.name)) {
        info->unhashed_returns.front() =
            model::ops::unhashed_name(model::ops::Unhashed::Uninitialized).data();
        info->any_unhashed = true;
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

}  // namespace

/// Schema names live as long as their operator, so the name's address identifies the overload:
/// one lookup per thread and overload, one classification per overload.
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

}  // namespace gparity::torchops::oprec_detail
