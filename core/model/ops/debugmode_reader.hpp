#pragma once
// Internals of the DebugMode reader (debugmode.hpp is its contract): one Reader per file. Its
// debug_string lines, calls and phases are in debugmode.cpp; hashes zipped with tensors, Triton
// launches and nightly's dump_tensor_hashes in debugmode_hashes.cpp. Internal to core/model/ops.

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model/ops/op_log.hpp"
#include "core/model/ops/py_literal.hpp"

namespace gparity::model::ops::debugmode_detail {

constexpr std::string_view kDumpHeader = "Total captured tensor hash ops:";

inline bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.substr(0, p.size()) == p;
}
inline bool contains(std::string_view s, std::string_view p) noexcept {
  return s.find(p) != std::string_view::npos;
}
inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// An op name as DebugMode writes it: "aten::add.Tensor", "torch.mm", "redistribute_input".
bool valid_op_name(std::string_view n) noexcept;

/// Where a call line's name ends: the index of the '(' that opens its arguments, or npos.
/// DebugMode names a call `module.name` when the callable has both, else by `str()`: a torch
/// function such as Tensor.sum is `<method 'sum' of 'torch._C.TensorBase' objects>`, a repr in
/// angle brackets with spaces and quotes in it, so the '(' is looked for after its closing '>'.
std::size_t call_name_end(std::string_view body) noexcept;

/// A __torch_function__ call line (record_torchfunction=True): `torch.mm(`, `<method ...>(`.
bool torch_function_line(std::string_view trimmed) noexcept;

/// A torch function that runs autograd's backward: the calls nested in it are the backward
/// (`torch._tensor.backward` is Tensor.backward; `torch.autograd.backward`, `torch.autograd.grad`).
bool backward_entry(std::string_view torch_function) noexcept;

/// A collective whose output DebugMode hashes at dispatch, before it completed: functional
/// collectives (the wait_tensor holds the value) and c10d's Work-returning ones.
bool unreliable_collective(std::string_view op) noexcept;

struct TensorText {
  TensorKind kind = TensorKind::Plain;
  std::int64_t id = -1;
  std::string_view dtype, shape, placement;
  std::int64_t numel = -1;
};

/// `t$3: f32[2, 32]`, `dt$0: f32[8, 8]| S(0)`, `ft: bf16[4]{requires_grad=True}`, `t: i64[]`.
bool parse_tensor_text(std::string_view s, TensorText& out) noexcept;

class Reader {
 public:
  Reader(std::string_view text, const std::string& source, int rank, std::int64_t step)
      : text_(text), step_given_(step), step_(step > 0 ? step : 1) {
    log_.path = source;
    log_.rank = rank;
    log_.bytes = text.size();
    log_.sources.emplace_back();
    // DebugMode lines run 150 to 400 bytes with three or four tensors each: growing the arrays
    // once, not by doubling, saves copies and page faults on large logs.
    log_.records.reserve(text.size() / 256);
    log_.tensors.reserve(text.size() / 96);
    log_.hashes.reserve(text.size() / 96);
  }

  OpLog run();

 private:
  static std::string_view first_line(std::string_view t);
  void issue(std::int64_t ln, std::string problem) { log_.issues.push_back({ln, std::move(problem)}); }

  // ---- debug_string text ------------------------------------------------------------------------

  void text_line(std::string_view line, std::int64_t ln);
  void comment_line(std::string_view body, std::int64_t ln);

  /// `path:line in fn, code: text`.
  void source_line(std::string_view s, std::int64_t ln);
  static bool calls_backward(std::string_view code) noexcept;
  void phase_on_source(const SourceLoc& s);
  /// Entering a backward torch function (backward_entry): the backward starts, and lasts while
  /// the lines below it are deeper (DebugMode's call depth stays raised while autograd runs).
  void enter_torch_function(std::string_view name, std::uint32_t depth);
  /// A line at `depth` ends an open backward call no deeper than it.
  void leave_calls(std::uint32_t depth);
  void next_step();
  void annotation_line(std::string_view body, std::uint32_t depth, std::int64_t ln);
  void pop_modules(std::uint32_t depth);

  /// `name(args)  ->  outputs  # {log}`; `redistribute_input [implicit] (args)  ->  out`.
  void call_line(std::string_view body, std::uint32_t depth, std::int64_t ln);

  /// The process group a collective names in its arguments (string id; 0: none named, all
  /// ranks). DebugMode prints arguments with str(): a functional collective's group_name is its
  /// last positional argument, unquoted (`_c10d_functional::all_reduce(t$1: f32[8], sum, 3)`);
  /// the legacy `c10d_functional::` ops list their ranks (`..., [2, 3], 2)`), named "ranks:2,3"
  /// with those members. c10d:: ops take a ProcessGroup printed as `ScriptObject <...>`: no name.
  std::uint32_t collective_group(std::string_view op, std::uint32_t args);
  void find_hash_keys(std::uint32_t dict, std::uint32_t& hash, std::uint32_t& input_hash);
  OpRecord begin_record(RecordKind kind, std::string_view name, std::uint32_t depth, std::int64_t ln);
  void commit(OpRecord& r);

  /// Positional arguments zip with input_hash[0], keyword arguments with input_hash[1]'s values.
  void zip_args(std::uint32_t args, std::uint32_t input_hash, bool& mismatch);

  /// Walks a value and its hash tree together, adding a TensorRef for every tensor.
  void zip(std::uint32_t v, std::uint32_t h, std::uint32_t name, bool& mismatch);

  /// An op's outputs; an attention op's RNG state and debug outputs (attention_returns) are
  /// marked and lose their hashes.
  void zip_outputs(std::string_view op, std::uint32_t out, std::uint32_t hash, bool& mismatch);
  /// Arguments that are an earlier unhashed output (by id) are marked too and lose their hashes.
  void mark_unhashed(const OpRecord& r);

  /// One tensor's hashes: a number, or a tuple of numbers (several hash functions).
  void add_hash_group(std::uint32_t h, TensorRef& ref, bool& mismatch);
  std::string_view hash_value(const PyNode& node, HashValue& hv);

  /// Every tensor of a log must be hashed by the same functions; the first group decides.
  bool check_spec();

  /// Runs of DebugMode's hashing ops next to a Triton launch (its pre- and post-kernel hashes
  /// dispatch them while the mode is active): found by what they read (the launch's arguments
  /// with the hashes it printed, or what the run made), whatever the hash functions are.
  void mark_hash_noise();
  /// A record whose output a record outside the runs reads is the program's: taken out of them.
  void give_back_program_ops();
  /// How far before a launch its pre-kernel hashing run is looked for (records).
  static constexpr std::size_t kNoiseLookback = 4096;

  // ---- Triton launches --------------------------------------------------------------------------

  void triton_line(std::string_view body, std::uint32_t depth, std::int64_t ln);

  /// `{in_ptr0: 123, out_ptr0: 456}` after a [triton] line: pre-kernel hashes go to the
  /// arguments; post-kernel hashes make the outputs (the arguments the kernel writes:
  /// out_ptr*, in_out_ptr*; all of them when none is so named).
  void kernel_hashes(std::string_view dict_text, std::int64_t ln, bool pre);
  void flush_spec_issue(std::int64_t ln);

  // ---- dump_tensor_hashes -------------------------------------------------------------------------

  void dump_line(std::string_view line, std::int64_t ln);

  /// `[module/op_K_name]`: the module context, the op's count in it, the call's name.
  void dump_block(std::string_view title, std::int64_t ln);

  /// `path=json, path=json`: one tensor per entry, appended as the block's inputs, then outputs.
  void dump_hashes(std::string_view list, std::int64_t ln, bool input);
  void finish_dump(std::int64_t ln);

  // ---- state ------------------------------------------------------------------------------------

  std::string_view text_;
  OpLog log_;
  PyArena arena_;
  std::vector<std::string_view> names_;
  std::unordered_map<std::uint32_t, std::uint32_t> source_index_;  // interned header -> sources index
  std::vector<std::pair<std::uint32_t, std::uint32_t>> modules_;   // (depth, module string id)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> calls_;     // (depth, record) of open calls
  std::unordered_map<std::int64_t, Unhashed> unhashed_ids_;        // ids of unhashed outputs, by marker
  std::int64_t unhashed_step_ = -1;
  std::uint32_t source_ = 0;
  std::int64_t backward_depth_ = -1;  // depth of the open backward torch function; -1: none
  std::int64_t step_given_ = 0;
  std::int64_t step_ = 1;
  std::int64_t last_step_ = -1;
  std::uint32_t index_ = 0;
  Phase phase_ = Phase::Forward;
  std::pair<std::uint32_t, std::uint32_t> loop_{0, 0};  // (file, function) that called backward
  bool sources_seen_ = false;
  bool triton_open_ = false;
  bool spec_conflict_ = false;
  bool pending_spec_issue_ = false;
  bool spec_issue_reported_ = false;
  std::string spec_conflict_problem_;
  std::string hash_order_;
  bool dump_open_ = false;
  int dump_section_ = 0;
  std::int64_t dump_declared_ = -1;
};

}  // namespace gparity::model::ops::debugmode_detail
