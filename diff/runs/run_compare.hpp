#pragma once
// `gparity compare`'s engine: aligns two runs by rank and step and compares loss, grad norm and
// every per-parameter hash array both runs have (weights, grads, optimizer state), bitwise by
// default. Shard-invariant partial hashes (arrays named "*.shard") are summed over ranks per
// parameter and step, so runs with different parallel layouts compare on full tensors. Results
// go to a FindingConsumer; nothing is printed here. Ranks are loaded one at a time per worker,
// so memory stays at a few ranks plus one sum per (step, parameter).

#include <cstdint>
#include <optional>
#include <string>

#include "core/model/run/run_source.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff {

/// Opt-in tolerances for scalars (loss, grad norm). Hashes are always exact. Empty: bitwise.
struct Tolerance {
  std::optional<std::uint64_t> ulp;
  std::optional<double> rtol;
  std::optional<double> atol;
  [[nodiscard]] bool bitwise() const noexcept { return !ulp && !rtol && !atol; }
  /// "bitwise" or e.g. "tolerance: ulp <= 4, rtol <= 1e-06 (hashes exact)".
  [[nodiscard]] std::string describe() const;
};

struct ScalarDiff {
  bool bits_equal = false;
  bool within = false;               // bits equal, or inside the tolerance
  std::optional<std::uint64_t> ulp;  // same float dtype only
  std::optional<double> rel;         // |a-b| / max(|a|,|b|)
  bool dtype_differs = false;
};
/// Compares two scalars by bit pattern, then (if asked) by the tolerance.
ScalarDiff compare_scalar(const model::TraceScalar& a, const model::TraceScalar& b, const Tolerance& tol);
/// Distance in representable values between two floats of the same dtype (F16, BF16, F32, F64).
std::optional<std::uint64_t> ulp_distance(std::uint64_t a_bits, std::uint64_t b_bits,
                                          model::DType dtype) noexcept;

struct CompareOptions {
  Tolerance tolerance;
  bool loss = true;
  bool grad_norm = true;
  bool weights = true;    // "param.*" arrays
  bool grads = true;      // "grad.*" arrays
  bool optimizer = true;  // "optim.*" arrays
  std::optional<std::int64_t> first_step;
  std::optional<std::int64_t> last_step;
  /// Per rank, at most this many divergent steps get their own findings (the rest are counted).
  std::size_t max_steps_reported = 10;
  /// How many diverging parameter names a finding lists.
  std::size_t max_params_listed = 5;
  /// Worker threads over ranks; 0 = hardware concurrency. The report never depends on it.
  unsigned threads = 0;
  /// Report title ("gparity compare", "gparity gate").
  std::string title = "gparity compare";
  /// Missing evidence (failure events, killed or missing ranks, declared steps a rank did not
  /// record) is still named everywhere but no longer fails the comparison; every report says so.
  bool allow_incomplete = false;
  /// Op runs only: kernel-level parity required (ops::OpCompareOptions::require_kernels).
  bool require_kernels = false;
  /// Minimums a gate can require of what was compared (docs/gate.md); unmet: INCOMPLETE, exit 1,
  /// whatever allow_incomplete says. Steps: compared on every rank compared; ranks: ranks whose
  /// values were compared; parameters: parameters whose hashes were compared.
  struct Requirements {
    std::optional<std::size_t> steps;
    std::optional<std::size_t> ranks;
    std::optional<std::size_t> parameters;
    [[nodiscard]] bool any() const noexcept { return steps || ranks || parameters; }
  };
  Requirements require;
};

/// Compares baseline and candidate, sending the report to `out` (begin ... end). Returns the
/// exit code: 0 parity, 1 divergence or incomplete evidence (INCOMPLETE: a failure event, a
/// killed or missing rank, a step the run declares but a rank did not record, an unmet
/// requirement), 2 damaged input or nothing compared (no value of either run had a counterpart).
/// A run declares its ranks (world size) and steps (manifest "steps"; for every format, also the
/// steps any of its ranks recorded).
int compare_runs(const model::RunSource& baseline, const model::RunSource& candidate,
                 const CompareOptions& options, FindingConsumer& out);

}  // namespace gparity::diff
