// The op recorder: kernel records (op_recorder_state.hpp). Triton kernels do not pass the
// dispatcher, so RecordFunction never sees them: python/gparity wraps Inductor's launcher
// (CachingAutotuner.run) and calls torch.ops.gparity.oprec_kernel_begin / _end around each launch.
// A launch is then a record like an op's: what it reads hashed before it (unless an earlier
// record of the step already holds that value), what it writes hashed after it, on the stream it
// ran on; `kernel` names it and `kernel_json` carries its site, debug handle, source hash and
// config (docs/trace-format.md, "op").

#include <thread>

#include "core/model/ops/kernel_launch.hpp"
#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

/// The readers' role name (model::ops::arg_role_name: literals, NUL-terminated, which a TensorRef
/// keeps) for the role python/gparity gave; "unnamed" for any other text.
const char* role_of(std::string_view role) {
  for (const auto r : {model::ops::ArgRole::In, model::ops::ArgRole::Out, model::ops::ArgRole::InOut})
    if (model::ops::arg_role_name(r) == role) return model::ops::arg_role_name(r).data();
  return model::ops::arg_role_name(model::ops::ArgRole::Unnamed).data();
}

void name_refs(std::vector<TensorRef>& refs, const std::vector<std::size_t>& at,
               const std::vector<std::string>& names, const std::vector<std::string>& roles) {
  for (std::size_t k = 0; k < at.size() && k < refs.size(); ++k) {
    const auto i = at[k];
    refs[k].name = i < names.size() ? names[i] : std::string();
    refs[k].role = role_of(i < roles.size() ? roles[i] : std::string());
  }
}

}  // namespace

std::int64_t kernel_begin(const std::vector<at::Tensor>& args, const std::vector<std::string>& names,
                          const std::vector<std::string>& roles, const std::string& kernel,
                          const std::string& kernel_json) {
  auto& s = state();
  const bool main_thread = std::this_thread::get_id() == s.thread;
  int code = -1, line = 0;
  bool in_backward = false;
#if GPARITY_OPREC_PYTHON
  if (!python_caller(s, code, line, in_backward)) return -1;
#endif
  // What the kernel reads is hashed before it runs; what it only writes holds whatever the buffer
  // held (Inductor reuses buffers) and is never hashed as an input.
  std::vector<at::Tensor> defined;
  std::vector<bool> only_written;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined()) continue;
    defined.push_back(args[i]);
    only_written.push_back(i < roles.size() && roles[i] == "out");
    at.push_back(i);
  }
  std::lock_guard lock(s.mutex);
  if (!s.active) return -1;
  Record r;
  r.kernel = kernel;
  r.kernel_json = kernel_json;
  place_record(s, r, main_thread, in_backward, code, line);
  r.args = input_refs(s, defined, only_written);
  name_refs(r.args, at, names, roles);
  s.records.push_back(std::move(r));
  set_in_kernel(true);
  return static_cast<std::int64_t>(s.records.size()) - 1;
}

void kernel_end(std::int64_t index, const std::vector<at::Tensor>& outs,
                const std::vector<std::string>& names, const std::vector<std::string>& roles) {
  set_in_kernel(false);
  auto& s = state();
  std::vector<std::size_t> at;
  std::vector<at::Tensor> defined;
  for (std::size_t i = 0; i < outs.size(); ++i)
    if (outs[i].defined()) {
      defined.push_back(outs[i]);
      at.push_back(i);
    }
  std::lock_guard lock(s.mutex);
  if (!s.active || index < 0 || index >= static_cast<std::int64_t>(s.records.size())) return;
  auto& r = s.records[static_cast<std::size_t>(index)];
  if (r.kernel.empty()) return;
  // The buffers themselves, not views of the arguments: no input storages to compare against.
  r.outs = refs_of(s, defined, /*as_input=*/false, /*hash_now=*/true);
  name_refs(r.outs, at, names, roles);
}

}  // namespace gparity::torchops::oprec_detail
