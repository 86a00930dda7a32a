#pragma once
// Reader for PyTorch DebugMode logs (torch.utils._debug_mode, 2.10 and later; docs/ops.md):
//  - `debug_string()` text: one call per line, indented two spaces per call depth,
//      ns::op(args)  ->  outputs  # {'input_hash': ..., 'hash': ...}
//    with `# File: path:line in fn, code: ...` lines above the calls they apply to
//    (record_stack_trace), tensors as `t$N: f32[2, 3]` (record_ids; `dt$N: ...| S(0)` for a
//    DTensor), `[nn.Mod] fqn` module entries (record_nn_module; `[nn.Mod (compile)]` and
//    `(compile bwd)` in nightly's interpreter mode), other `[header] tag` annotations,
//    `redistribute_input(...)` calls, `-> output: ...` DTensor placements (nightly),
//    `[triton] kernel(...)` launches followed by `# pre-kernel hashes: {...}` and
//    `# post-kernel hashes: {...}` lines, and __torch_function__ calls (record_torchfunction):
//    "torch.mm(...)", or by str() where the callable has no module and name
//    ("<method 'sum' of 'torch._C.TensorBase' objects>(...)"), read as TorchFunction records
//    whose dispatched ops are nested below them;
//  - `dump_tensor_hashes(file)` (nightly): a header, then one `[module/op_K_name]` block per
//    call with its index, depth and input / output hashes.
// Hashes (`log_tensor_hashes`) are zipped with the tensors they belong to by structure: the
// `hash` tree mirrors the outputs, `input_hash` mirrors ((args), {kwargs}); a tensor's hash is
// a number (one hash function) or a tuple (several, in the order given). Hash functions are
// named from the values (HashSpec). Functional collectives' output hashes are marked
// unreliable (taken before the wait).
// Phases: forward until a source line whose code calls `.backward(` (or, with no source lines,
// the first `*_backward*` op); backward until a source line in the function that called
// backward (the training loop): optimizer from there (gradient collectives, scaling, the step).
// A backward torch function (`torch._tensor.backward`, `torch.autograd.backward` / `grad`) is
// the backward exactly: every call nested in it is backward, whatever source line it shows,
// and without source lines the optimizer starts when it returns.
// In a file of several steps (step 0 given), an optimizer phase followed by a source line in
// another function starts the next step.
// Tolerant: a line that does not parse is an issue (line, problem) and costs only its record
// (its indentation still closes the calls open at its depth, so the lines below it are nobody's
// children); a last line that does not parse marks the log truncated. Throws InputError only
// when the file cannot be read.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/ops/op_log.hpp"

namespace gparity::model::ops {

/// Reads the DebugMode file at `path` as rank `rank`. `step` > 0: every record is that step
/// (the file holds one step); 0: steps are inferred from the text, starting at 1.
OpLog read_debugmode_log(const std::string& path, int rank, std::int64_t step);

/// The same on text in memory; `source` names it in issues.
OpLog parse_debugmode_text(std::string_view text, const std::string& source, int rank, std::int64_t step);

/// Whether a file starting with `head` (its first KiB or so) is a DebugMode log: its first
/// non-blank line is a `# File:` line, a `[nn.Mod]`-style annotation, a `[triton]` launch, an
/// op call `ns::op(`, or the `dump_tensor_hashes` header; or it starts with torch function
/// calls or run_graph's `[node]` lines (which Python text could start with too) followed by one
/// of those.
bool looks_like_debugmode(std::string_view head);

}  // namespace gparity::model::ops
