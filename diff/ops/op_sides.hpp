#pragma once
// What an op comparison calls its two sides (docs/ops.md): "eager" and "compiled" where the
// candidate's records show code torch.compile generated and the baseline's do not; else
// "baseline" and "candidate" (two eager runs, two compiled runs, or records that do not say:
// gparity op records leave the generated code's frames out). Internal to diff/ops; defined in
// op_findings.cpp.

#include <string>
#include <vector>

#include "diff/ops/op_compare.hpp"

namespace gparity::diff::ops::detail {

struct SideWords {
  std::string base = "eager";                 // "eager ops", "no eager op"
  std::string a_base = "an eager";            // "paired with an eager op"
  std::string cand = "compiled";              // "compiled counterpart(s)", "the compiled records"
  std::string cand_run = "the compiled run";  // "found in the compiled run"
};

/// A record of code torch.compile generated: a line of an FX graph's code (DebugMode's `# File:
/// <eval_with_key>.N:line`) or an Inductor Triton kernel launch.
bool shows_compiled_code(const std::vector<RankLogs>& side);
SideWords side_words(const std::vector<RankLogs>& baseline, const std::vector<RankLogs>& candidate);

}  // namespace gparity::diff::ops::detail
