#pragma once
// Inductor's provenance in a run's TORCH_TRACE (docs/ops.md, "Inductor kernels"): for each graph
// Inductor compiled, its output code (`inductor_output_code`: the Python module the run imported,
// whose path DebugMode's `# File:` lines name) with
//  - its kernels' sources (`name = async_compile.triton('name', '''...''')`), normalized so that
//    what differs between two builds of the same kernel does not count: the kernel's own name
//    (Inductor renumbers kernels) and the GPU index (a run on other GPUs);
//  - its launch sites in call(): the kernel called, the line, the debug handle
//    (`# [Provenance debug handles] name:N`, 2.9+), and the comment above the call
//    (`# Topologically Sorted Source Nodes: [...], Original ATen: [...]`);
// and the artifacts that follow it in the log (the graph's, in log order):
//  - node mappings: `inductor_provenance_tracking_node_mappings` (2.9 to nightly: cppCodeToPost,
//    postToPre), or the older `inductor_triton_kernel_to_post_grad_nodes` and
//    `inductor_post_to_pre_grad_nodes` (2.8): kernel (or handle) -> post-grad nodes -> pre-grad
//    nodes;
//  - `inductor_provenance_tracking_kernel_stack_traces`: kernel (or handle) -> the user frames
//    its nodes came from;
//  - `triton_kernel_info`: the launch config a kernel was compiled with (`only_config`), or how
//    many configs the autotuner chose among at run time (the choice is not logged).
// Written with `torch._inductor.config.trace.provenance_tracking_level = 1`. A run folder with a
// `trace/` directory beside its logs gets it without a flag (find_provenance_dir). Damage (a
// payload that is not JSON, an output code without call sites) is a problem, the rest used.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::model::ops {

/// A user frame: `File "path", line N, in fn` and its code.
struct UserFrame {
  std::string file;
  std::int64_t line = 0;
  std::string function;
  std::string code;
  /// "gen.py:36" (the file's last component).
  [[nodiscard]] std::string text() const;
};

/// One call of a kernel in an output code's call().
struct LaunchSite {
  std::string kernel;  // "triton_poi_fused_gelu_view_2", "extern_kernels.addmm", "torch.ops.aten.x.default"
  std::string handle;  // "triton_poi_fused_gelu_view_2:7"; "" before debug handles
  std::int64_t line = 0;
  std::vector<std::string> source_nodes;  // "Topologically Sorted Source Nodes"
  std::vector<std::string> aten;          // "Original ATen": "aten.gelu"
};

/// A Triton kernel's source as the output code defines it.
struct KernelSource {
  std::uint64_t hash = 0;          // of the normalized lines
  std::vector<std::string> lines;  // normalized: the kernel's name as <kernel>, GPU index as ?
  /// What may make it differ run to run: deterministic algorithms off (its inductor_meta), atomics.
  bool deterministic_off = false;
  bool atomics = false;
  /// Its in_out_ptr arguments that it only stores to (every use of the name in its body is
  /// `tl.store(name ...)`): written, their old bytes no input (Inductor names in_out a buffer a
  /// fused kernel writes then overwrites; python/gparity's recorder applies the same rule).
  std::vector<std::string> stored_only;
};

/// What provenance maps a kernel (or one launch of it) to.
struct KernelOrigin {
  std::vector<std::string> post_nodes;  // post-grad graph nodes it computes
  std::vector<std::string> pre_nodes;   // pre-grad graph nodes those came from
  std::vector<UserFrame> frames;        // innermost user frame of each stack it was traced from
};

/// One graph's output code and the provenance that follows it.
struct OutputCode {
  std::string path;   // the module's file, as DebugMode's `# File:` lines name it
  std::string graph;  // "0_forward", "0_backward" (`# AOT ID:`), or ""
  std::int64_t trace_line = 0;
  std::vector<LaunchSite> launches;
  std::map<std::string, KernelSource> kernels;  // by kernel name
  std::map<std::string, KernelOrigin> origins;  // by debug handle, or by kernel name (2.8)
  std::map<std::string, std::string> configs;   // kernel name -> "XBLOCK=8, num_warps=2, num_stages=1"
  /// The provenance of a launch: by its debug handle, else by its kernel's name.
  [[nodiscard]] const KernelOrigin* origin_of(const LaunchSite& site) const;
  [[nodiscard]] const KernelSource* source_of(std::string_view kernel) const;
  [[nodiscard]] const std::string* config_of(std::string_view kernel) const;
};

struct RankProvenance {
  int rank = -1;
  std::string path;  // the TORCH_TRACE log
  std::vector<OutputCode> codes;
  std::vector<std::string> problems;  // "file:line: problem"
};

struct RunProvenance {
  std::string dir;
  std::vector<RankProvenance> ranks;
  [[nodiscard]] const RankProvenance* rank(int r) const;
  [[nodiscard]] bool empty() const noexcept { return ranks.empty(); }
};

/// The `trace/` directory beside a run's logs: `<run>/trace` for a folder, the file's own folder's
/// `trace/` for a single log; "" when there is none.
std::string find_provenance_dir(const std::string& run_path);

/// Reads every rank's TORCH_TRACE log in `dir` (torch_trace_dir's files). Throws InputError when
/// the directory holds no log; damage inside a log is a problem of its rank.
RunProvenance read_provenance(const std::string& dir);

/// The same over one log's text (tests, fuzzing); `source` names it.
RankProvenance parse_provenance(std::string text, const std::string& source);

/// Parses one output code's text (`source` names it in problems).
OutputCode parse_output_code(std::string_view text, std::vector<std::string>& problems,
                             const std::string& source);

/// The user frames of one stack trace as Inductor logs it (`  File "p", line N, in f\n    code\n`
/// repeated; older releases escaped the newlines), outermost first.
std::vector<UserFrame> parse_stack_frames(std::string_view stack);

}  // namespace gparity::model::ops
