#pragma once
// Alignment of an eager op stream with a compiled one, per rank and step (docs/ops.md). The
// two never have the same structure: a compiled run decomposes ops (native_layer_norm into
// var_mean, rsqrt, ...), functionalizes in-place ops, adds and drops views, detaches and
// aliases, writes `select`s where eager wrote one `unbind`, reorders the backward, and fuses
// ops into kernels. Values anchor it:
//  1. every hashed output of an eager op is looked up among the compiled run's values (outputs
//     and hashed inputs of any compiled record of the same rank and step) by its value key:
//     the deciding hash functions' values, dtype and element count. Found for every output:
//     the op is `matched`; a missing output makes it `divergent`. Hashes that cannot tell
//     values apart (hash_tensor 0: any constant or empty tensor) are weak: found only through
//     them, the op is `weakly matched` and counts as no evidence. A divergent op whose every
//     consumer (by DebugMode tensor id) is matched or itself unobserved is `unobserved`: the
//     compiled run never materialized that value (a fused intermediate) and everything
//     computed from it agrees.
//  2. each matched output pairs with one compiled record holding its value: the candidate
//     nearest after the previous anchor, same op name (namespace, overload and in-place `_`
//     ignored) and shape preferred; a record may pair with several compiled ones (unbind with
//     its selects).
//  3. between two anchors, the eager ops without a value (divergent, unhashed) pair with the
//     unpaired compiled records in the same stretch: by op name and shape first; the rest are
//     given to the eager op whose inputs they read (compiled dataflow and input hashes): a
//     decomposition's ops become its counterparts. A Triton kernel that holds the previous
//     anchor's value and writes a tensor of the op's shape is a counterpart too (fusion), and a
//     launch computes the ops of the stretch that read its ops' values (same phase, no
//     collective) when it writes a tensor of their kind.
//  4. where the compiled records show kernel launches (Inductor under DebugMode: every value the
//     compiled run wrote is there), a divergent eager op that other ops of the step read and
//     none of whose counterparts writes a tensor of one of its outputs' dtype and size is
//     unobserved (never written: fused into a kernel that keeps it in registers), never an
//     origin: the divergence shows at the first value the compiled run did write.
// Complexity: O((n + m) log m) time; memory a few words per tensor.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ops/op_log.hpp"

namespace gparity::diff::ops {

using model::ops::OpLog;
using model::ops::OpRecord;
using model::ops::TensorRef;

/// The records of one step of one log: log->records[begin, end).
struct OpSlice {
  const OpLog* log = nullptr;
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::int64_t step = 0;
  [[nodiscard]] std::uint32_t size() const noexcept { return end - begin; }
  [[nodiscard]] const OpRecord& at(std::uint32_t i) const { return log->records[begin + i]; }
};

/// One slice per step of the log, in step order (a step's records are contiguous).
std::vector<OpSlice> slices_of(const OpLog& log);

/// Whether a record is an op of the program: a dispatched op or a Triton kernel launch. A
/// torch-function call (DebugMode's record_torchfunction) or a DTensor redistribute_input wraps
/// the ops it dispatches, which hold its values: it is never counted as an op nor paired; nor is
/// DebugMode's own hashing of a launch's arguments (hash_noise).
[[nodiscard]] inline bool is_program_op(const model::ops::OpRecord& r) noexcept {
  return (r.kind == model::ops::RecordKind::Op || r.kind == model::ops::RecordKind::Triton) && !r.hash_noise;
}
/// The program ops of a slice (is_program_op), DebugMode's own kernel-argument hashing left out.
[[nodiscard]] std::uint32_t program_ops(const OpSlice& s, std::uint32_t from = 0);

/// The hash functions that decide value equality: those both sides recorded, hash_tensor first.
struct HashChoice {
  std::vector<std::string> names;
  std::vector<int> eager_pos;     // position of each in the eager log's HashSpec
  std::vector<int> compiled_pos;  // ... and in the compiled log's
  bool use_meta = true;           // dtype and element count are part of a value (both sides wrote them)
  /// Which values cannot be told apart: hash_tensor 0 (any constant or empty tensor), or, when
  /// norm decides first, an L1 norm of 0.
  enum class WeakRule : std::uint8_t { None, ZeroHash, ZeroNorm };
  WeakRule weak_rule = WeakRule::None;
  [[nodiscard]] bool usable() const noexcept { return !names.empty(); }
  /// "hash_tensor", "hash_tensor+norm".
  [[nodiscard]] std::string text() const;
  /// False when only `norm` decides: an L1 norm is closeness, not identity.
  [[nodiscard]] bool identity() const noexcept;
};
/// Empty names when the two logs' specs share no function (or one side has none). Dtype and
/// element count take part when both logs wrote them (debug_string text, not a hash dump).
HashChoice choose_hashes(const OpLog& eager, const OpLog& compiled);

enum class ValueStatus : std::uint8_t {
  Matched,      // every hashed output found in the compiled run, at least one by a strong hash
  WeakMatched,  // found, but only through weak hashes (hash_tensor 0: constant or empty tensors)
  Divergent,    // an output's value is not in the compiled run
  Unobserved,   // not in the compiled run, but every op computed from it is
  Unhashed,     // no hashed output to compare (no hash, or hashed before a collective's wait)
  NotRecorded,  // past where the compiled records of the step stop (a cut log, a rank killed
                // mid-step: op_compare.hpp's StepCut): not compared, never divergent
};
std::string_view value_status_name(ValueStatus s) noexcept;

enum class PairedBy : std::uint8_t { None, Value, Name, Decomposition, Fusion };
std::string_view paired_by_name(PairedBy p) noexcept;

struct EagerOp {
  ValueStatus status = ValueStatus::Unhashed;
  PairedBy paired_by = PairedBy::None;
  std::uint32_t first_counterpart = 0;  // into SliceAlignment::counterparts
  std::uint32_t counterpart_count = 0;
  std::uint32_t outputs_missing = 0;  // hashed outputs whose value is not in the compiled run
  std::uint32_t outputs_weak = 0;     // hashed outputs with weak hashes
  /// Unobserved because the compiled run, whose records show every kernel it launched, wrote no
  /// value of its outputs' kind: fused away (step 4 above; docs/ops.md's step 6). What it read and what
  /// reads it are judged without its value.
  bool never_written = false;
};

struct SliceAlignment {
  std::vector<EagerOp> eager;                  // per eager record of the slice
  std::vector<std::uint32_t> counterparts;     // compiled record positions in their slice
  std::vector<std::int32_t> compiled_partner;  // per compiled record: the eager position it pairs with, or -1
  // Eager dataflow by DebugMode tensor id (within the step): consumers of each record.
  std::vector<std::uint32_t> consumer_first;  // size eager + 1 (CSR offsets)
  std::vector<std::uint32_t> consumers;
  /// Per eager argument, record by record in argument order: the eager record that produced it
  /// in this step, or -1.
  std::vector<std::int32_t> arg_producer;
  std::vector<std::uint32_t> arg_first;  // per eager record: its first entry in arg_producer
  /// Per eager argument (as arg_producer): its own hash found in the compiled run (1), missing
  /// (2), or no usable hash (0: none, weak, or not the value the op read).
  std::vector<std::uint8_t> arg_value;

  std::size_t values_compared = 0;  // eager hashed outputs looked up
  std::size_t values_matched = 0;   // ... found by a strong hash
  std::size_t values_weak = 0;      // ... with only a weak hash (found or not)
  std::size_t compiled_only = 0;    // compiled records with no eager partner
  std::size_t compiled_noise = 0;   // compiled records of DebugMode's own kernel-argument hashing

  [[nodiscard]] std::span<const std::uint32_t> counterparts_of(std::uint32_t e) const {
    return {counterparts.data() + eager[e].first_counterpart, eager[e].counterpart_count};
  }
  [[nodiscard]] std::span<const std::uint32_t> consumers_of(std::uint32_t e) const {
    return {consumers.data() + consumer_first[e], consumer_first[e + 1] - consumer_first[e]};
  }
};

/// A value: the deciding hashes, dtype and element count of one tensor.
struct ValueKey {
  std::uint64_t h0 = 0, h1 = 0;
  std::int64_t numel = -1;
  std::uint64_t dtype = 0;
  bool valid = false;  // the tensor has every deciding hash
  bool weak = false;   // hash_tensor 0 (or, norm alone, 0.0): constant or empty tensors share it
  friend bool operator==(const ValueKey& a, const ValueKey& b) noexcept {
    return a.h0 == b.h0 && a.h1 == b.h1 && a.numel == b.numel && a.dtype == b.dtype;
  }
};

/// The values of one side's slice, looked up by key.
class ValueIndex {
 public:
  ValueIndex(const OpSlice& slice, const HashChoice& choice, bool compiled_side);
  /// Whether any record of the slice holds the value (as an output or a hashed input).
  [[nodiscard]] bool contains(const ValueKey& k) const;
  /// Up to `each_side` compiled record positions on each side of `cursor` whose outputs hold
  /// the value, ascending. A constant's hash can be held by thousands of records: only those
  /// near the alignment's position matter.
  void outputs_near(const ValueKey& k, std::int64_t cursor, std::size_t each_side,
                    std::vector<std::uint32_t>& out) const;
  /// The same in two steps, to look a value up once and use it twice: the slot of its
  /// fingerprint (kNoSlot when no record has it), then the questions above on that slot.
  static constexpr std::uint32_t kNoSlot = 0xffffffffu;
  [[nodiscard]] std::uint32_t slot(const ValueKey& k) const;
  [[nodiscard]] bool contains(std::uint32_t slot, const ValueKey& k) const;
  void outputs_near(std::uint32_t slot, const ValueKey& k, std::int64_t cursor, std::size_t each_side,
                    std::vector<std::uint32_t>& out) const;
  [[nodiscard]] ValueKey key(const TensorRef& t) const;

 private:
  struct Entry {
    std::uint32_t tensor;  // into log->tensors
    std::uint32_t record;  // position in the slice; high bit: an output
  };
  /// The entries of one fingerprint: entries_[first, first + count), by record. A second,
  /// independent fingerprint stands in for the key (128 bits in all); where two keys share the
  /// first fingerprint (`mixed`), every entry is checked against its tensor.
  struct Run {
    std::uint64_t fp = 0;
    std::uint64_t fp2 = 0;
    std::uint32_t first = 0;
    std::uint32_t count = 0;  // 0: an empty slot; high bit: mixed
  };
  static constexpr std::uint32_t kMixed = 0x80000000u;
  OpSlice slice_;
  HashChoice choice_;
  bool compiled_;
  mutable std::vector<std::uint64_t> dtype_code_;
  std::vector<Entry> entries_;  // grouped by fingerprint, in record order within a group
  std::vector<Run> runs_;       // open addressing by fingerprint
  std::size_t run_mask_ = 0;
  [[nodiscard]] const Run* find(std::uint64_t fp) const;
  [[nodiscard]] bool holds(const Run& r, const Entry& e, const ValueKey& k, std::uint64_t fp2) const;
};

/// Key of a tensor of `log` (eager side: `compiled` false).
ValueKey value_key(const OpLog& log, const TensorRef& t, const HashChoice& choice, bool compiled,
                   std::vector<std::uint64_t>& dtype_cache);

/// An op name without namespace, overload and in-place underscore: "aten::div_.Tensor" -> "div".
std::string_view op_base_name(std::string_view op) noexcept;

SliceAlignment align_slices(const OpSlice& eager, const OpSlice& compiled, const HashChoice& choice);

}  // namespace gparity::diff::ops
