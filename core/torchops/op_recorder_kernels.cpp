// The op recorder: kernel records (op_recorder_state.hpp). Triton kernels do not pass the
// dispatcher, so RecordFunction never sees them: python/gparity wraps Inductor's launcher
// (CachingAutotuner.run), registers each call site's kernel once (torch.ops.gparity.oprec_kernel_site:
// name, record fields, signature and the tensors' positions) and calls kernel_begin before each
// launch (the site, the tensors) and kernel_end after it (the record's index): through two
// builtins given the launch's arguments (op_recorder_python.cpp), or, in a build without Python's
// headers, torch.ops.gparity.oprec_kernel_begin and gparity_oprec_kernel_end (ctypes).
// A launch is then a record like an op's: what it reads hashed before it (unless an earlier
// record of the step already holds that value), what it writes hashed after it, on the stream it
// ran on; `kernel` names it and `kernel_json` carries its site, debug handle, source hash and
// config (docs/trace-format.md, "op").

#include <thread>

#include "core/model/ops/kernel_launch.hpp"
#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

/// Each ref's name and role by its argument's position `at[k]` in the kernel's signature.
void name_refs(std::vector<TensorRef>& refs, const std::vector<std::size_t>& at, const KernelSite& site) {
  for (std::size_t k = 0; k < at.size() && k < refs.size(); ++k) {
    const auto i = at[k];
    refs[k].name = i < site.names.size() ? site.names[i] : std::string();
    // A literal, NUL-terminated, which a TensorRef keeps.
    refs[k].role = model::ops::arg_role_name(site.role(i)).data();
  }
}

}  // namespace

std::int64_t kernel_site(std::string kernel, std::string kernel_json, std::vector<std::string> names,
                         std::vector<std::string> roles, std::vector<std::int64_t> positions) {
  auto& s = state();
  KernelSite site{std::move(kernel), std::move(kernel_json), std::move(names), {}, std::move(positions)};
  for (std::size_t i = 0; i < site.names.size(); ++i)
    site.roles.push_back(i < roles.size()
                             ? model::ops::arg_role_from_name(roles[i]).value_or(model::ops::ArgRole::Unnamed)
                             : model::ops::ArgRole::Unnamed);
  std::lock_guard lock(s.mutex);
  s.kernel_sites.push_back(std::move(site));
  return static_cast<std::int64_t>(s.kernel_sites.size()) - 1;
}

std::int64_t kernel_begin(std::int64_t site_id, const std::vector<at::Tensor>& args,
                          const std::vector<std::int64_t>* positions) {
  const SectionTimer timer(Section::launch_begin);
  auto& s = state();
  const bool main_thread = std::this_thread::get_id() == s.thread;
  int code = -1, line = 0;
  bool in_backward = false;
#if GPARITY_OPREC_PYTHON
  if (!python_caller(s, code, line, in_backward)) return -1;
#endif
  std::lock_guard lock(s.mutex);
  if (!s.active || site_id < 0 || site_id >= static_cast<std::int64_t>(s.kernel_sites.size())) return -1;
  const KernelSite& site = s.kernel_sites[static_cast<std::size_t>(site_id)];
  if (positions && *positions != site.positions) return kSignatureChanged;
  // What the kernel reads is hashed before it runs; what it only writes holds whatever the buffer
  // held (Inductor reuses buffers) and is never hashed as an input. What it writes is kept for
  // kernel_end, which hashes it after the launch.
  std::vector<at::Tensor> defined;
  std::vector<bool> only_written;
  Record r;
  defined.reserve(args.size());
  only_written.reserve(args.size());
  r.kernel_at.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined()) continue;
    defined.push_back(args[i]);
    only_written.push_back(site.role(i) == model::ops::ArgRole::Out);
    r.kernel_at.push_back(i);
  }
  r.kernel_site = static_cast<int>(site_id);
  place_record(s, r, main_thread, in_backward, code, line);
  r.args = input_refs(s, defined, only_written);
  name_refs(r.args, r.kernel_at, site);
  std::vector<std::size_t> written_at;
  written_at.reserve(r.kernel_at.size());
  r.kernel_written.reserve(r.kernel_at.size());
  for (std::size_t k = 0; k < r.kernel_at.size(); ++k) {
    const auto i = r.kernel_at[k];
    if (i < site.roles.size() && site.role(i) != model::ops::ArgRole::In) {
      r.kernel_written.push_back(defined[k]);
      written_at.push_back(i);
    }
  }
  r.kernel_at = std::move(written_at);
  // What the launch writes may be what a pending hash is to read: those go before it.
  flush_if_written(s, r.kernel_written, {});
  s.records.push_back(std::move(r));
  set_in_kernel(true);
  return static_cast<std::int64_t>(s.records.size()) - 1;
}

void kernel_end(std::int64_t index, bool launched) {
  const SectionTimer timer(Section::launch_end);
  set_in_kernel(false);
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.active || index < 0 || index >= static_cast<std::int64_t>(s.records.size())) return;
  auto& r = s.records[static_cast<std::size_t>(index)];
  if (r.kernel_site < 0) return;
  // A launch that failed wrote nothing to hash. The buffers themselves, not views of the
  // arguments: no input storages to compare against.
  if (launched) {
    r.outs = refs_of(s, r.kernel_written, /*as_input=*/false, /*hash_now=*/true);
    name_refs(r.outs, r.kernel_at, s.kernel_sites[static_cast<std::size_t>(r.kernel_site)]);
  }
  r.kernel_written.clear();
  r.kernel_at.clear();
}

}  // namespace gparity::torchops::oprec_detail
