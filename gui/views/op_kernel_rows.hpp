#pragma once
// The kernel launches of the op alignment view (issue 32; docs/ops.md, "Inductor kernels"): per
// rank and step, one row per launch (a Triton kernel, or an op around it: extern kernels,
// collectives, the optimizer) with what diff::kernels says of it. Two runs whose records both
// show kernel launches are judged as `gparity compare` judges them (judge_kernel_logs): each
// baseline launch beside its counterpart, its written values equal or not, the step's first
// divergent launch with its cause and the engine's finding; candidate-only launches in their
// place. Eager against a compiled run: the compiled side's kernel launches, not compared (the op
// table compares the values), with their provenance. Either way each row names its output-code
// line, post-grad and pre-grad nodes, ATen ops and user source lines (from the run's trace/).
//
// Qt-free and computed by load_op_alignment off the GUI thread; rows hold their text, so they do
// not keep the logs alive.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/ops/op_run.hpp"
#include "diff/ops/op_compare.hpp"

namespace gparity::gui::views {

struct OpKernelRow {
  /// "first divergence", "differs" (wrote other values), "equal", "weakly equal" (hash_tensor 0
  /// only), "no evidence", "no counterpart" (a baseline launch the candidate did not make),
  /// "candidate only", "not compared" (eager against compiled: the op table compares).
  std::string status;
  /// The first divergence's cause as the engine names it ("origin, different code", "received
  /// from rank 1"); on other differing rows whether an input differed.
  std::string cause;
  int rank = 0;
  std::int64_t step = 0;
  std::int64_t index = -1;     // the launch's record index in its log
  std::int64_t line = 0;       // its line there
  std::string name;            // "triton_poi_fused_gelu_view_2", "c10d::allreduce_"
  bool kernel = false;         // a Triton kernel launch (else an op)
  std::string family;          // the kernel's name without Inductor's number
  std::int64_t code_line = 0;  // the output-code line that launched it; 0 unknown
  std::string graph;           // "0_forward"
  std::string config;          // the launch config Inductor logged
  std::vector<std::string> post_nodes, pre_nodes, aten;
  std::vector<std::string> sources;  // user frames: "gen_inductor.py:36 `x = ...`"
  std::string counterpart;           // the other side's launch
  std::int64_t counterpart_index = -1;
  std::string paired_by;  // "name", "family" (renumbered), "signature" (replaced)
  std::string finding;    // the first divergence: the engine's message, as the CLI prints it
};

struct OpKernelStep {
  int rank = 0;
  std::int64_t step = 0;
  std::vector<OpKernelRow> rows;
  int first_row = -1;  // the step's first divergent launch
};

struct OpKernels {
  /// Both sides' records show kernel launches: judged launch by launch. Else only `side`'s
  /// launches are listed ("baseline" or "candidate"; "" when neither shows any).
  bool compared = false;
  std::string side;
  std::vector<OpKernelStep> steps;  // by rank, then step
  int lead_rank = -1;               // where the kernel verdict's headline leads (its origin first)
  std::int64_t lead_step = -1;
  [[nodiscard]] bool empty() const noexcept { return steps.empty(); }
  [[nodiscard]] const OpKernelStep* find(int rank, std::int64_t step) const;
};

/// The kernel rows of two op runs already read; `choice` decides values when both are compiled.
/// A run's trace/ beside its logs gives provenance (a damaged one: rows without it).
OpKernels load_op_kernels(const model::ops::OpRun& base, const model::ops::OpRun& cand,
                          const std::vector<diff::ops::RankLogs>& base_logs,
                          const std::vector<diff::ops::RankLogs>& cand_logs,
                          const diff::ops::HashChoice* choice);

/// A selected row's detail, several lines: launch, output code, nodes, ATen ops, source lines,
/// counterpart, the finding.
std::string kernel_row_detail(const OpKernelRow& row);

/// "a, b, c": a row's node, ATen or source list on one line.
std::string comma_joined(const std::vector<std::string>& items);

}  // namespace gparity::gui::views
