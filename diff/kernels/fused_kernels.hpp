#pragma once
// Eager against a compiled run whose records show its kernel launches (docs/ops.md, "Inductor
// kernels"): the op comparison (diff/ops) judges the eager ops, and a value the compiled run never
// wrote is unobserved there, never an origin (op_align.hpp, step 4). What it cannot say is which
// fused kernel wrote the value that differs: FusedKernelNamer passes every finding on and adds
// to each op divergence the first of the op's compiled counterparts that is a kernel launch
// writing a tensor of one of the op's outputs' dtype and size (the value Inductor materialized for
// it), with that launch's provenance (output-code line, post-grad and pre-grad nodes, ATen ops,
// user frames) where the compiled run has a TORCH_TRACE.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/ops/inductor_provenance.hpp"
#include "diff/ops/op_compare.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff::kernels {

class FusedKernelNamer final : public FindingConsumer {
 public:
  FusedKernelNamer(FindingConsumer& out, const std::vector<ops::RankLogs>& eager,
                   const std::vector<ops::RankLogs>& compiled, const model::ops::RunProvenance* provenance)
      : out_(out), eager_(eager), compiled_(compiled), provenance_(provenance) {}

  void begin(const ReportHeader& h) override { out_.begin(h); }
  void finding(const Finding& f) override;
  void check(const Check& c) override { out_.check(c); }
  void end(const Verdict& v) override { out_.end(v); }

 private:
  FindingConsumer& out_;
  const std::vector<ops::RankLogs>& eager_;
  const std::vector<ops::RankLogs>& compiled_;
  const model::ops::RunProvenance* provenance_;
};

/// One row of the eager-against-Inductor drift table: an eager op's output and the kernel output
/// that materialized it (both hashed). DebugMode logs numbers only with hash_fn "norm" (an L1
/// norm, float64): then the row holds both norms, their relative difference ("norm_rel") and
/// their distance in float64 ULP ("norm_ulp_f64"); that bounds the values' drift from below,
/// never from above. With hash_tensor or custom hashes the row says "hashes only": bits equal or
/// not, no number is invented.
nlohmann::json drift_row(const model::ops::OpLog& eager_log, const model::ops::TensorRef& eager,
                         const model::ops::OpLog& compiled_log, const model::ops::TensorRef& compiled);
/// The row as a finding's clause ("; drift of the L1 norms ..." or "; drift: not measurable ...").
std::string drift_text(const nlohmann::json& row);

/// `gparity compare` of two op-log runs already read: two compiled runs whose records show kernel
/// launches kernel by kernel (kernel_compare.hpp); eager against such a run through the op
/// comparison with FusedKernelNamer; anything else through the op comparison alone.
int compare_runs_with_kernels(const model::ops::OpRun& base, const model::ops::OpRun& cand,
                              const std::vector<ops::RankLogs>& base_logs,
                              const std::vector<ops::RankLogs>& cand_logs,
                              const ops::OpCompareOptions& options, FindingConsumer& out);

}  // namespace gparity::diff::kernels
