#pragma once
// `gparity compare` of two op runs as the command runs it (diff/kernels), with the findings kept:
// what the kernel-level tests assert on.

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

}  // namespace gparity::diff::kernels
