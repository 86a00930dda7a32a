#pragma once
// `gparity compare` of two compiled runs' op logs, kernel by kernel (docs/ops.md, "Inductor
// kernels"): when both sides' records show kernel launches (DebugMode `[triton]` lines), each
// rank's steps are aligned launch by launch (kernel_align.hpp) and judged (kernel_verdicts.hpp):
// parity when every paired launch read and wrote equal values and every launch has a
// counterpart; else each rank's first divergent launch with its cause and provenance. A run
// folder with a `trace/` directory beside its logs (TORCH_TRACE with Inductor's provenance
// artifacts) gets provenance without a flag: each launch's output code, kernel source, config,
// post-grad and pre-grad nodes, ATen ops and user frames; a trace that cannot be read is a
// warning, and the comparison goes on without it. DebugMode's own hashing ops never count.
// Exit codes as compare_op_logs: 0 parity, 1 divergence or incomplete evidence, 2 nothing compared.

#include <vector>

#include "core/model/ops/op_run.hpp"
#include "diff/kernels/kernel_verdicts.hpp"
#include "diff/ops/op_compare.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff::kernels {

/// Compares logs already read, with each side's provenance (either may be null).
int compare_kernel_logs(const std::vector<ops::RankLogs>& base, const std::vector<ops::RankLogs>& cand,
                        const SideProvenance& prov, const ops::OpCompareOptions& options,
                        FindingConsumer& out);

/// A run's provenance from the `trace/` directory beside its logs (empty when there is none); a
/// trace that cannot be read is one problem of the result (reported as kernel_provenance_damaged).
model::ops::RunProvenance read_run_provenance(const model::ops::OpRun& run);

/// The same for two runs whose logs were read (`base_logs`, `cand_logs`): reads each run's
/// provenance from the `trace/` directory beside its logs, where there is one.
int compare_kernel_runs(const model::ops::OpRun& base, const model::ops::OpRun& cand,
                        const std::vector<ops::RankLogs>& base_logs,
                        const std::vector<ops::RankLogs>& cand_logs, const ops::OpCompareOptions& options,
                        FindingConsumer& out);

}  // namespace gparity::diff::kernels
