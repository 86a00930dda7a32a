#pragma once
// Kernel launches in op records (docs/ops.md, "Inductor kernels"): a DebugMode `[triton]` line
// (RecordKind::Triton) is one launch of an Inductor Triton kernel. Its arguments carry Inductor's
// names, which give their roles: `in_ptrN` is read, `out_ptrN` written, `in_out_ptrN` read then
// written; the pre-kernel hashes are the arguments' values before the launch (OpRecord args), the
// post-kernel hashes of the written arguments its outputs (the values the kernel wrote). A
// launch's `# File:` line names the output code that launched it: the path is the run's own
// cache file (it differs run to run), the line the call site (it does not). Inductor numbers a
// graph's kernels (`triton_poi_fused_gelu_view_2`): another graph of the same program, a pass
// that splits one kernel in two, renumbers them; the family (the name without its number)
// does not change.

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/model/ops/op_log.hpp"

namespace gparity::model::ops {

/// "in", "out", "in_out", "unnamed".
std::string_view arg_role_name(ArgRole r) noexcept;
/// The role arg_role_name names `name`, or none.
std::optional<ArgRole> arg_role_from_name(std::string_view name) noexcept;
/// The role of a launch argument by its name: in_out_ptr* (InOut), out_ptr* (Out), in_ptr* (In);
/// Unnamed otherwise (a launch whose arguments carry no Inductor names: read and written, as the
/// reader takes them).
ArgRole kernel_arg_role(std::string_view name) noexcept;
/// A launch argument's role: its record's (gparity's recorder reads the kernel's source: an
/// in_out_ptr it only stores to is Out, its old value no input), else by its name.
ArgRole launch_arg_role(const OpLog& log, const TensorRef& t) noexcept;
/// Whether a launch reads the argument before it writes anything (In, InOut, Unnamed).
inline bool kernel_reads(ArgRole r) noexcept {
  return r != ArgRole::Out;
}

/// Whether the record is a kernel launch.
inline bool is_kernel(const OpRecord& r) noexcept {
  return r.kind == RecordKind::Triton;
}

/// "triton_poi_fused_gelu_view_2" -> "triton_poi_fused_gelu_view"; a name without a trailing
/// "_<digits>" is its own family.
std::string_view kernel_family(std::string_view name) noexcept;

/// The output-code line that launched the kernel: the record's `# File:` line when its code calls
/// the kernel (`name.run(`), else 0 (DebugMode prints a source line only when it changes: the
/// launches of a backward show the user frame the backward ran from, or none).
std::int64_t launch_line(const OpLog& log, const OpRecord& r);

}  // namespace gparity::model::ops
