#pragma once
// Alignment of two compiled runs' launches, per rank and step (docs/ops.md, "Inductor kernels").
// A launch is a program record of the step: a Triton kernel launch, or an op (an extern kernel
// such as addmm.out, a fallback op, the eager code around the compiled region: collectives, the
// optimizer); DebugMode's own hashing ops and torch-function wrappers are not launches. Two runs
// of one program launch the same kernels in the same order, but a changed graph renumbers
// Inductor's kernels (`triton_poi_fused_gelu_view_2` becomes `..._view_5`), and a pass can replace
// one kernel by another. So launches pair by
//  1. key: kind, kernel family (the name without Inductor's number; an op's name) and signature
//     (each argument's role, dtype and shape), in order: a patience diff (keys unique on both
//     sides anchor, the stretches between them are aligned the same way, equal runs at their
//     ends pair in order);
//  2. what is left between two pairs: launches of the same signature, in order (a kernel replaced
//     by another of the same arguments).
// The rest has no counterpart. O((n + m) log(n + m)) per step.

#include <cstdint>
#include <string_view>
#include <vector>

#include "diff/ops/op_align.hpp"

namespace gparity::diff::kernels {

using ops::OpSlice;

/// The launches of a step: positions in its slice of the records that are the program's (a
/// dispatched op or a kernel launch, not DebugMode's hashing) and call nothing themselves.
std::vector<std::uint32_t> step_launches(const OpSlice& s);

enum class PairedBy : std::uint8_t { None, Name, Family, Signature };
/// "none", "name", "family" (renumbered), "signature" (replaced).
std::string_view paired_by_name(PairedBy p) noexcept;

struct LaunchAlignment {
  std::vector<std::uint32_t> base, cand;   // launches (slice positions), in order
  std::vector<std::int32_t> base_partner;  // per base launch: its candidate launch (index into cand), or -1
  std::vector<std::int32_t> cand_partner;  // per candidate launch: its base launch, or -1
  std::vector<PairedBy> paired_by;         // per base launch
  std::size_t unpaired_base = 0, unpaired_cand = 0;
};

LaunchAlignment align_launches(const OpSlice& base, const OpSlice& cand);

}  // namespace gparity::diff::kernels
