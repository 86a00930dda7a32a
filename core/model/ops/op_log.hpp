#pragma once
// Op records: every dispatched op of one rank's training, as DebugMode (torch.utils._debug_mode,
// PyTorch 2.10+) logs it, read into one compact model that the op-level comparison (diff/ops)
// aligns. A record is one logged call: rank, step, index, nesting depth, op, its tensor
// arguments and outputs (id, dtype, shape, DTensor placement, hashes by function), the user
// source line DebugMode printed above it, the nn.Module it ran in, and the phase (forward,
// backward, optimizer) the reader inferred. docs/ops.md says what each release writes.
//
// A log holds millions of records, so strings are interned per log (StringTable: op names,
// dtypes, shapes and modules repeat) and tensors and hashes live in flat arrays that records
// index into. Nothing here points into the file's text: a log outlives the mapping it was read
// from.

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gparity::model::ops {

/// Interned strings of one log. Id 0 is the empty string; ids and views stay valid for the
/// table's life (moves included).
class StringTable {
 public:
  StringTable();
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  std::uint32_t intern(std::string_view s);
  /// The id of `s` when it was interned, else nullopt (no insertion).
  [[nodiscard]] std::optional<std::uint32_t> find(std::string_view s) const;
  [[nodiscard]] std::string_view view(std::uint32_t id) const noexcept { return views_[id]; }
  [[nodiscard]] std::size_t size() const noexcept { return views_.size(); }

 private:
  std::deque<std::string> storage_;  // a deque never moves its elements: views stay valid
  std::vector<std::string_view> views_;
  /// Short strings (dtypes, shapes, op names) dominate: hash 8 bytes at a time.
  struct Hash {
    std::size_t operator()(std::string_view s) const noexcept;
  };
  std::unordered_map<std::string_view, std::uint32_t, Hash> index_;
  /// Recently interned strings, direct-mapped by hash: a log repeats a few dtypes, shapes and
  /// op names line after line, and a hit costs no bucket division.
  struct Recent {
    std::string_view text;
    std::uint32_t id = 0;
  };
  std::vector<Recent> recent_ = std::vector<Recent>(kRecent);
  static constexpr std::size_t kRecent = 256;
};

/// One hash of one tensor, as DebugMode printed it: an integer (`hash_tensor`, up to 2^64-1),
/// a float (`norm`, an L1 norm: Python's repr round-trips, so the bits are exact) or anything
/// else a custom hash function printed (kept as text).
struct HashValue {
  enum class Kind : std::uint8_t { Int, Float, Text };
  Kind kind = Kind::Int;
  std::uint64_t bits = 0;  // Int: the value; Float: the IEEE-754 double's bits; Text: a string id
  friend bool operator==(const HashValue&, const HashValue&) = default;
};

/// The hash functions of a log, in the order each tensor's hashes are printed. DebugMode does
/// not write their names: they are inferred from the values ("hash_tensor" for integers,
/// "norm" for floats, "custom" otherwise). Empty: the log has no hashes.
struct HashSpec {
  std::vector<std::string> functions;
  [[nodiscard]] bool empty() const noexcept { return functions.empty(); }
  /// "hash_tensor", "norm+hash_tensor", "none".
  [[nodiscard]] std::string text() const;
  /// Index of `name` in functions, or -1.
  [[nodiscard]] int index_of(std::string_view name) const noexcept;
  friend bool operator==(const HashSpec&, const HashSpec&) = default;
};

enum class TensorKind : std::uint8_t { Plain, DTensor, Fake };

/// Why a tensor holds no value of the computation and is not hashed (op records' `"unhashed"`;
/// docs/trace-format.md, "op"): the attention ops' RNG state (`philox_seed`, `philox_offset`,
/// `rng_state`: with dropout 0 possibly uninitialized bytes on CUDA) and debug outputs
/// (`debug_attn_mask`), and the result of an allocation (`uninitialized`: aten::empty and kin hand
/// back whatever bytes the allocator's block held, so two runs hash different garbage). Such a
/// tensor is neither a value anchor nor a divergence (diff/ops).
/// `captured` (added later): a tensor the recorder met while a CUDA graph was being captured
/// (Inductor's cudagraph trees, torch.cuda.graph): its value did not exist yet, and nothing was
/// hashed then.
enum class Unhashed : std::uint8_t { No, RngState, Debug, Uninitialized, Captured };

/// What a kernel launch does with an argument (core/model/ops/kernel_launch.hpp names them).
enum class ArgRole : std::uint8_t { In, Out, InOut, Unnamed };
/// "rng_state", "debug", "uninitialized", "captured" ("" for No): views of string literals, so NUL-terminated
/// (the C++ recorder writes their data()); unhashed_from_name is its inverse (No for any other
/// text).
std::string_view unhashed_name(Unhashed u) noexcept;
Unhashed unhashed_from_name(std::string_view name) noexcept;
/// An op whose one result is uninitialized memory: empty, empty_like, empty_strided, new_empty,
/// new_empty_strided, empty_permuted, by name with or without "aten::" and overload
/// ("aten::empty.memory_format"). The recorders mark its output `uninitialized` (both backends),
/// the DebugMode reader drops its hashes, replay fills it deterministically.
bool allocates_uninitialized(std::string_view op) noexcept;
/// The marker of an op schema's return name (the recorders' rule, in both backends): RngState
/// for philox_seed, philox_offset, rng_state, unused (flash's second RNG word), seed, offset;
/// Debug for debug_attn_mask; No otherwise (native_dropout's mask is a value: its returns are
/// unnamed).
Unhashed unhashed_return(std::string_view return_name) noexcept;
/// The schema return names (torch 2.11 native_functions.yaml) of an attention op whose returns
/// include RNG state, by name with or without "aten::" and overload
/// ("aten::_scaled_dot_product_cudnn_attention"); empty for any other op. DebugMode logs have no
/// schema: its reader marks those outputs by position with these.
std::vector<std::string_view> attention_returns(std::string_view op);

/// A tensor argument or output of a record.
struct TensorRef {
  std::int64_t id = -1;          // DebugMode's t$N / dt$N (record_ids=True); -1 without ids
  std::int64_t numel = -1;       // from the shape; -1 when a size is symbolic or unparsable
  std::uint32_t dtype = 0;       // string id: "f32", "bf16", "i64", ...
  std::uint32_t shape = 0;       // string id: the sizes as printed, "2, 32, 64" ("" for a scalar)
  std::uint32_t placement = 0;   // string id: a DTensor's placements ("S(0)", "RS(0)"); 0 otherwise
  std::uint32_t name = 0;        // string id: a Triton kernel's argument name, a kwarg's name; else 0
  std::uint32_t first_hash = 0;  // into OpLog::hashes
  std::uint8_t hash_count = 0;   // 0: no hash recorded for this tensor
  TensorKind kind = TensorKind::Plain;
  Unhashed unhashed = Unhashed::No;  // RNG state / debug output: never hashed (hash_count 0)
  // A kernel argument's role as its record gives it (gparity records' `role`: an in_out_ptr the
  // kernel's source only stores to is "out"); empty: by its name (kernel_launch.hpp).
  std::optional<ArgRole> role;
  [[nodiscard]] bool hashed() const noexcept { return hash_count > 0; }
};

enum class RecordKind : std::uint8_t {
  Op,             // a dispatched op: "aten::mm", "c10d::allreduce_", "_c10d_functional::wait_tensor"
  TorchFunction,  // a __torch_function__ call (record_torchfunction=True): "torch.mm"
  Redistribute,   // a DTensor redistribute_input call
  Triton,         // an Inductor Triton kernel launch ("[triton] name(...)") with pre/post hashes
};
std::string_view record_kind_name(RecordKind k) noexcept;

enum class Phase : std::uint8_t { Forward, Backward, Optimizer, Unknown };
/// "forward", "backward", "optimizer", "unknown".
std::string_view phase_name(Phase p) noexcept;

/// A `# File: path:line in function, code: text` line (a user frame DebugMode printed above
/// the records it applies to).
struct SourceLoc {
  std::uint32_t file = 0;      // string id
  std::int64_t line = 0;       // 0: none
  std::uint32_t function = 0;  // string id
  std::uint32_t code = 0;      // string id
};

/// One logged call.
struct OpRecord {
  std::int64_t line = 0;     // 1-based line in the file
  std::int64_t step = 0;     // training step (from the file name, or inferred)
  std::uint32_t index = 0;   // position among the records of its (rank, step)
  std::uint32_t depth = 0;   // DebugMode's call depth (nesting)
  std::uint32_t op = 0;      // string id of the op or kernel name
  std::uint32_t module = 0;  // string id of the innermost nn.Module ("[nn.Mod] Net.layers.0"); 0: none
  std::uint32_t source = 0;  // index into OpLog::sources; 0: none
  std::uint32_t first_arg = 0;
  std::uint32_t arg_count = 0;  // tensor arguments, in order, into OpLog::tensors
  std::uint32_t first_out = 0;
  std::uint32_t out_count = 0;  // tensor outputs, in order, into OpLog::tensors
  RecordKind kind = RecordKind::Op;
  Phase phase = Phase::Unknown;
  /// The process group a collective ran on (string id): its name as the log gives it ("default",
  /// "1", a functional collective's group_name); 0 when the log does not name it: all ranks.
  /// OpLog::group_ranks holds its members where the log lists them.
  std::uint32_t group = 0;
  /// DebugMode hashed this output when the collective was dispatched, before it completed:
  /// functional collectives (pytorch/pytorch#169150; the wait_tensor's output is the value)
  /// and c10d collectives, which return a Work (seen with Gloo: the output hash equals the
  /// input's; the next op to read the tensor sees the result).
  bool output_hash_unreliable = false;
  bool has_input_hashes = false;  // the log had `input_hash` (pre-kernel hashes) for this record
  /// Calls nested in this one follow it (a torch function's aten ops, a DTensor op's
  /// redistribution). Module lines ([nn.Mod]) deepen the indentation too but are not calls.
  bool has_children = false;
  /// DebugMode's own hashing of a Triton kernel's arguments (it records the aten ops that
  /// log_tensor_hashes runs around a launch: _to_copy, linalg_vector_norm, hash_tensor,
  /// _local_scalar_dense): not the program's.
  bool hash_noise = false;
  /// Every output is a view (op records, `"view"`: issue 24): the op made no value of its own,
  /// so it is neither an anchor nor a pairing target, and its readers read its base.
  bool view = false;
};

/// A line that could not be used: it costs at most its own record.
struct LogIssue {
  std::int64_t line = 0;
  std::string problem;
};

/// The records of one DebugMode file.
struct OpLog {
  std::string path;
  int rank = 0;
  /// What wrote it, as far as the text tells: "debug_string" or "dump_tensor_hashes"; plus
  /// the dict order of the hash annotation ("hash first": 2.10; "input_hash first": 2.11+).
  std::string format;
  std::vector<OpRecord> records;
  std::vector<TensorRef> tensors;
  std::vector<HashValue> hashes;
  std::vector<SourceLoc> sources;  // [0] is "no source"
  StringTable strings;
  HashSpec hash_spec;
  std::vector<LogIssue> issues;
  std::vector<std::int64_t> steps;  // the steps present, ascending
  /// Member ranks (global, ascending) of the process groups the log lists them for, by the
  /// group's string id (OpRecord::group). A named group not here: its members are unknown.
  std::map<std::uint32_t, std::vector<int>> group_ranks;
  /// What gparity's op recorder wrote of a kernel launch (a record of kind "kernel"; DebugMode
  /// logs have none), by the record's line: string ids, 0 where the record had none.
  struct RecordedKernel {
    std::uint32_t source_hash = 0;  // of the kernel's Triton source, its own name left out
    std::uint32_t config = 0;       // the launch config the autotuner chose: "XBLOCK=8, num_warps=2, ..."
    std::uint32_t handle = 0;       // Inductor's debug handle of the call site: "triton_poi_fused_x_2:7"
  };
  std::unordered_map<std::int64_t, RecordedKernel> recorded_kernels;
  [[nodiscard]] const RecordedKernel* recorded_kernel(const OpRecord& r) const {
    const auto it = recorded_kernels.find(r.line);
    return it == recorded_kernels.end() ? nullptr : &it->second;
  }
  std::uint64_t bytes = 0;
  bool truncated = false;  // the last line did not parse: the file was cut short

  [[nodiscard]] std::string_view str(std::uint32_t id) const noexcept { return strings.view(id); }
  [[nodiscard]] std::string_view op_name(const OpRecord& r) const noexcept { return str(r.op); }
  [[nodiscard]] const TensorRef& arg(const OpRecord& r, std::uint32_t i) const {
    return tensors[r.first_arg + i];
  }
  [[nodiscard]] const TensorRef& out(const OpRecord& r, std::uint32_t i) const {
    return tensors[r.first_out + i];
  }
  [[nodiscard]] const HashValue& hash(const TensorRef& t, std::uint32_t i) const {
    return hashes[t.first_hash + i];
  }
  /// "train.py:37" or "" (file:line of the record's source).
  [[nodiscard]] std::string source_text(const OpRecord& r) const;
  /// "f32[2, 32, 64]" (plus "| S(0)" for a DTensor).
  [[nodiscard]] std::string tensor_text(const TensorRef& t) const;
  /// A hash as DebugMode printed it ("18390420925930536960", "1234.5").
  [[nodiscard]] std::string hash_text(const HashValue& h) const;
};

/// A record's source location as JSON ({file, line, function, code}), in the JSON type the caller
/// builds (`gparity ops show` keeps key order, the comparison does not); null when it has none.
template <typename Json>
Json source_json(const OpLog& log, std::uint32_t source) {
  if (source == 0) return Json(nullptr);
  const auto& s = log.sources[source];
  return {{"file", log.str(s.file)},
          {"line", s.line},
          {"function", log.str(s.function)},
          {"code", log.str(s.code)}};
}

}  // namespace gparity::model::ops
