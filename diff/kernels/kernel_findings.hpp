#pragma once
// What a kernel-level comparison says (kernel_compare.hpp): a rank's first divergent launch in a
// step (message and JSON values: its cause, the arguments that differ by role, the code evidence,
// its provenance: output-code line, post-grad and pre-grad nodes, ATen ops, user frames) and each
// step's summary. Internal to diff/kernels.

#include <nlohmann/json.hpp>
#include <string>

#include "diff/kernels/kernel_verdicts.hpp"
#include "diff/ops/op_sides.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff::kernels {

/// "triton_poi_fused_gelu_view_2 (output code line 856, gen_inductor.py:36)".
std::string launch_text(const KernelStepVerdict& sv, std::uint32_t b);
/// The same for a candidate launch.
std::string cand_launch_text(const KernelStepVerdict& sv, std::uint32_t c);

/// "; post-grad nodes ...; pre-grad nodes ...; ATen ...; from gen.py:36 `code`" ("" when none).
std::string provenance_text(const KernelSite& site);

/// A launch's provenance: {output_code, line, handle, source_nodes, aten, post_grad_nodes,
/// pre_grad_nodes, frames, config}; null when none is known.
nlohmann::json provenance_json(const KernelSite& site);

Finding kernel_divergence_finding(const KernelRankVerdict& rv, const KernelStepVerdict& sv,
                                  const KernelDivergence& d, const ops::HashChoice& choice, bool follow_up,
                                  const ops::detail::SideWords& w);

Finding kernel_step_info(const KernelRankVerdict& rv, const KernelStepVerdict& sv,
                         const ops::detail::SideWords& w);

/// `kernel_step_cut` (incomplete): one side's records of the step stop short (sv.cut); the other
/// side's launches past the last pair were not compared: not recorded, never divergent.
Finding kernel_cut_finding(const KernelRankVerdict& rv, const KernelStepVerdict& sv,
                           const ops::detail::SideWords& w);

}  // namespace gparity::diff::kernels
