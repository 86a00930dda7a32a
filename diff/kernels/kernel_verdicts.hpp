#pragma once
// Kernel-level verdicts of two compiled runs (docs/ops.md, "Inductor kernels"): per rank and
// step, the launches aligned (kernel_align.hpp) and each pair's values compared bit for bit by
// hash: the values a launch read (a kernel's in_ptr / in_out_ptr pre-kernel hashes, an op's
// input hashes; never an out_ptr's pre-kernel hash, which is whatever the buffer held) and the
// values it wrote (a kernel's out_ptr / in_out_ptr post-kernel hashes, an op's outputs; a
// collective's output, hashed before it completed, by the next launch that reads it). The first
// launch (baseline order) whose written values differ, or that only one side made, is the rank's
// first divergence in the step, with its cause:
//   origin, different code   equal inputs; the kernel's source (normalized: its own name and the
//                            GPU index left out) or the ATen ops its launch computes differ, or
//                            it is another kernel of the same arguments;
//   origin, same code, different config   the launch configs Inductor logged differ;
//   non-deterministic        same code and config (or code known on one side only: then said so),
//                            equal inputs, different outputs: run to run;
//   origin                   an op (extern kernel, eager op): equal inputs, different outputs;
//   no counterpart           the other side made no such launch there: the programs differ;
//   propagated               an input differed, written earlier in the step (the launch named);
//   received                 a collective whose inputs are equal here while another member's
//                            are not (diff/causality's causal order over the step of every rank);
//   follows step N / input   an input from before the step (a parameter) differed.
// Then what it carries on (launches with a differing input) and other origins (equal inputs,
// different outputs) of the step. Provenance (kernel_sites.hpp) names each launch's nodes,
// ATen ops and user frames.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ops/inductor_provenance.hpp"
#include "diff/kernels/kernel_align.hpp"
#include "diff/kernels/kernel_sites.hpp"
#include "diff/ops/op_compare.hpp"

namespace gparity::diff::kernels {

enum class KernelCause : std::uint8_t {
  DifferentCode,
  DifferentConfig,
  NonDeterministic,
  Origin,
  NoCounterpart,
  Propagated,
  Received,
  FollowsStep,
  Input,
  Unknown
};
/// "origin, different code", "origin, same code, different config", "non-deterministic", "origin",
/// "no counterpart", "propagated", "received", "follows step", "input", "unknown".
std::string_view kernel_cause_name(KernelCause c) noexcept;
/// Where the divergence starts on its rank (not propagated, received or fed from outside).
bool starts_here(KernelCause c) noexcept;

enum class ValueState : std::uint8_t { Equal, WeakEqual, Differs, Unknown };

/// One baseline launch's values against its counterpart's.
struct LaunchValues {
  ValueState inputs = ValueState::Unknown;
  ValueState outputs = ValueState::Unknown;
  std::vector<std::uint32_t> inputs_differ;   // baseline argument indices
  std::vector<std::uint32_t> outputs_differ;  // baseline output indices
  std::uint32_t inputs_unknown = 0;           // read arguments with no usable hash on a side
  std::uint32_t values = 0;                   // values compared (strong), inputs and outputs
  std::int32_t reader = -1;                   // an output hashed before it completed: the launch read at
};

/// What tells the two sides' kernel apart.
struct CodeEvidence {
  bool base_code = false, cand_code = false;  // the kernel's source is known on that side
  bool code_differs = false;
  std::string base_line, cand_line;  // the first differing (normalized) source line
  bool aten_differs = false;
  bool other_kernel = false;  // paired by signature only: another kernel
  std::string base_config, cand_config;
  bool deterministic_off = false, atomics = false;
};

struct KernelDivergence {
  std::int32_t base = -1;  // baseline launch (index into the alignment's base); -1: a candidate-only launch
  std::int32_t cand = -1;
  KernelCause cause = KernelCause::Unknown;
  std::int32_t producer = -1;  // propagated: the baseline launch that wrote the differing input
  std::int64_t follows_step = 0;
  CodeEvidence code;
  std::vector<int> from_ranks;  // received
  std::string causal_text;
  nlohmann::json causal;
  std::vector<std::uint32_t> carried;  // baseline launches with a differing input after it (first few)
  std::size_t carried_total = 0;
  std::vector<std::uint32_t> other_origins;  // baseline launches: equal inputs, different outputs
  std::size_t other_origin_total = 0;
  std::size_t other_received_total = 0;  // collectives: equal local inputs, different value
};

/// A side whose records of the step stop short (its log cut, or a rank that recorded no later step
/// while the run has one): the other side's launches past its last paired one are not recorded
/// there, never divergent (no counterpart).
struct LaunchCut {
  bool candidate = true;  // the side whose records stop
  std::string why;
  std::uint32_t not_compared = 0;  // the other side's launches past the last paired one
};

struct KernelStepVerdict {
  std::int64_t step = 0;
  std::optional<LaunchCut> cut;
  ops::OpSlice base, cand;
  LaunchAlignment align;
  std::vector<LaunchValues> values;  // per baseline launch
  std::vector<KernelSite> base_sites, cand_sites;
  /// Per launch (alignment order) and argument: the tensor whose hashes are its value before the
  /// launch (itself when hashed, else the step's last earlier output with its id: gparity's op
  /// records hash no input the step wrote), or null. Points into the slices' logs.
  std::vector<std::vector<const model::ops::TensorRef*>> base_inputs, cand_inputs;
  std::size_t kernels = 0;  // baseline kernel launches
  std::size_t values_compared = 0, differing = 0;
  std::optional<KernelDivergence> first;
};

struct KernelRankVerdict {
  int rank = 0;
  std::vector<KernelStepVerdict> steps;
  [[nodiscard]] const KernelStepVerdict* first_divergent() const;
};

/// Each side's TORCH_TRACE provenance, when it has one.
struct SideProvenance {
  const model::ops::RunProvenance* base = nullptr;
  const model::ops::RunProvenance* cand = nullptr;
};

std::vector<KernelRankVerdict> judge_kernel_logs(const std::vector<ops::RankLogs>& base,
                                                 const std::vector<ops::RankLogs>& cand,
                                                 const ops::HashChoice& choice, const SideProvenance& prov,
                                                 std::size_t max_listed = 5);

/// Whether a side's records show kernel launches.
bool shows_kernels(const std::vector<ops::RankLogs>& side);
/// Whether one rank's records show kernel launches.
bool rank_shows_kernels(const ops::RankLogs& rank);
/// Whether both sides' records show kernel launches: the kernel-level comparison applies.
bool both_compiled(const std::vector<ops::RankLogs>& base, const std::vector<ops::RankLogs>& cand);

}  // namespace gparity::diff::kernels
