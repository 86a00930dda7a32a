#pragma once
// Multi-rank facts of a TORCH_TRACE read from its records alone (no graph parsing), at least the
// facts tlparse's multi-rank landing page derives, each tied to the compile id (and operation)
// where it arises instead of one whole-log warning:
//   compile_id           a compile id some ranks logged and others did not;
//   cache                cache hit / miss / bypass artifacts (fx_graph_cache_*, aotautograd_cache_*)
//                        that differ between ranks for one compile id; ranks grouped by sequence;
//   collective_schedule  inductor_collective_schedule artifacts that differ between ranks;
//   tensor_meta          inductor_runtime_and_tensor_meta artifacts that differ (the first op and
//                        key that differ are named);
//   collectives_vs_code  on one rank, a compile id whose collective schedule does not match the
//                        `_c10d_functional` calls of its inductor_output_code, or whose code
//                        issues collectives without a wait_tensor (tlparse's collectives parity).
// Findings are RankFinding values (diff/graphs/rank_findings.hpp) with `compile` set; the sequence
// groups are kept for reports ("ranks 0, 2 | 1 | 3").

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/formats/torch_trace.hpp"
#include "diff/graphs/rank_findings.hpp"

namespace gparity::diff {

struct TraceFacts {
  std::vector<RankFinding> findings;
  std::vector<FactGroups> groups;
  std::vector<std::string> problems;  // artifacts whose payload could not be read (skipped)
};

TraceFacts trace_facts(const model::MultiRankTrace& trace);

/// tlparse's op family of a collective name ("torch.ops._c10d_functional.all_reduce_.default"
/// -> "all_reduce"); "" when none.
std::string collective_family(std::string_view op);

struct CodeCollectives {
  std::vector<std::pair<std::string, std::int64_t>> calls;  // family, 1-based payload line
  std::vector<std::string> unwaited;  // buffers a collective was issued on that no wait_tensor reads
  std::size_t waits = 0;
};
/// The `torch.ops._c10d_functional.<op>.default(` calls of inductor output code, comments left out.
CodeCollectives code_collectives(std::string_view code);

}  // namespace gparity::diff
