#pragma once
// `gparity compare` of two op runs as the command runs it (diff/kernels), with the findings kept:
// what the kernel-level tests assert on.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/model/ops/op_run.hpp"
#include "diff/kernels/kernel_compare.hpp"

namespace gparity::diff::kernels {

struct Compared {
  int code = -1;
  CollectingConsumer report;
  /// The first divergence finding of a rank and step, or nullptr.
  [[nodiscard]] const Finding* divergence(int rank, std::int64_t step) const {
    for (const auto& f : report.findings)
      if (f.kind.find("divergence") != std::string::npos && f.where.rank == rank && f.where.step == step)
        return &f;
    return nullptr;
  }
};

inline Compared compare_runs(const std::string& a, const std::string& b) {
  Compared r;
  const auto ra = model::ops::open_op_run(a), rb = model::ops::open_op_run(b);
  const auto la = ops::read_rank_logs(ra), lb = ops::read_rank_logs(rb);
  r.code = compare_runs_with_kernels(ra, rb, la, lb, {}, r.report);
  return r;
}

/// Eager against Inductor, op by op: every rank-step has a first divergence, and neither it nor
/// any other origin is an eager op whose value Inductor never wrote (asserted here). Returns how
/// many eager ops were never written (unobserved).
inline std::size_t never_written_ops_named_origin_none(const std::string& eager,
                                                       const std::string& compiled) {
  const auto e = ops::read_rank_logs(model::ops::open_op_run(eager));
  const auto c = ops::read_rank_logs(model::ops::open_op_run(compiled));
  const ops::HashChoice choice = ops::choose_hashes(e.front().logs.front(), c.front().logs.front());
  std::size_t never_written = 0;
  for (const auto& rv : ops::judge_op_logs(e, c, choice)) {
    for (const auto& sv : rv.steps) {
      for (const auto& op : sv.alignment.eager) never_written += op.never_written ? 1 : 0;
      EXPECT_TRUE(sv.first.has_value()) << "rank " << rv.rank << " step " << sv.step;
      if (!sv.first) continue;
      EXPECT_FALSE(sv.alignment.eager[sv.first->record].never_written);
      for (const auto o : sv.first->other_origins) EXPECT_FALSE(sv.alignment.eager[o].never_written);
    }
  }
  return never_written;
}

}  // namespace gparity::diff::kernels
