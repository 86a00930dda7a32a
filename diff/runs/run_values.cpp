#include "diff/runs/run_values.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "hash/xxh3.hpp"

namespace gparity::diff {
namespace runs {

using model::RankTrace;
using model::TraceScalar;
using nlohmann::json;

std::string fmt_double(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

std::string bits_text(const TraceScalar& s) {
  const auto hex = hash::to_hex(s.bits);
  return "0x" + hex.substr(16 - 2 * model::dtype_size(s.dtype));
}

json scalar_json(const TraceScalar& s) {
  json j = {{"bits", bits_text(s)}, {"dtype", std::string(model::dtype_name(s.dtype))}};
  j["value"] = std::isfinite(s.value) ? json(s.value) : json(fmt_double(s.value));
  return j;
}

std::string step_ranges(const std::vector<std::int64_t>& steps) {
  return ranges_text(steps);
}

Category category_of(std::string_view array) {
  if (array.starts_with("param.")) return Category::Weights;
  if (array.starts_with("grad.")) return Category::Grads;
  if (array.starts_with("optim.")) return Category::Optimizer;
  return Category::Other;
}

const char* category_name(Category c) {
  switch (c) {
    case Category::Weights: return "weights";
    case Category::Grads: return "grads";
    case Category::Optimizer: return "optimizer";
    case Category::Other: return "other hashes";
  }
  return "other";
}

bool category_enabled(Category c, const CompareOptions& o) {
  switch (c) {
    case Category::Weights: return o.weights;
    case Category::Grads: return o.grads;
    case Category::Optimizer: return o.optimizer;
    case Category::Other: return o.weights;
  }
  return true;
}

std::map<std::int64_t, std::size_t> step_index(const RankTrace& t, const CompareOptions& o) {
  std::map<std::int64_t, std::size_t> m;
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto s = t.steps[i].step;
    if ((o.first_step && s < *o.first_step) || (o.last_step && s > *o.last_step)) continue;
    m[s] = i;  // a step written twice (a restart): the later one counts
  }
  return m;
}

}  // namespace runs

using model::TraceScalar;
using runs::fmt_double;
using runs::step_ranges;

std::string Tolerance::describe() const {
  if (bitwise()) return "bitwise (exact bit patterns)";
  std::string s = "tolerance for loss and grad_norm:";
  if (ulp) s += " ulp <= " + std::to_string(*ulp);
  if (rtol || atol) {
    if (ulp) s += " or";
    s += " |a-b| <= " + fmt_double(atol.value_or(0)) + " + " + fmt_double(rtol.value_or(0)) +
         " * max(|a|,|b|)";
  }
  return s + "; hashes exact";
}

std::optional<std::uint64_t> ulp_distance(std::uint64_t a, std::uint64_t b, model::DType dtype) noexcept {
  int width = 0;
  switch (dtype) {
    case model::DType::F64: width = 64; break;
    case model::DType::F32: width = 32; break;
    case model::DType::F16:
    case model::DType::BF16: width = 16; break;
    default: return std::nullopt;
  }
  const TraceScalar sa = TraceScalar::from_bits(a, dtype);
  const TraceScalar sb = TraceScalar::from_bits(b, dtype);
  if (std::isnan(sa.value) || std::isnan(sb.value)) return std::nullopt;
  const std::uint64_t sign = std::uint64_t{1} << (width - 1);
  const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  // Map to an unsigned order: negatives reversed below positives, -0 and +0 adjacent.
  const auto ordered = [&](std::uint64_t x) { return (x & sign) ? (~x & mask) : (x | sign); };
  const auto oa = ordered(sa.bits);
  const auto ob = ordered(sb.bits);
  return oa > ob ? oa - ob : ob - oa;
}

ScalarDiff compare_scalar(const TraceScalar& a, const TraceScalar& b, const Tolerance& tol) {
  ScalarDiff d;
  d.dtype_differs = a.dtype != b.dtype;
  d.bits_equal = !d.dtype_differs && a.bits == b.bits;
  if (!d.dtype_differs) d.ulp = ulp_distance(a.bits, b.bits, a.dtype);
  if (!std::isnan(a.value) && !std::isnan(b.value)) {
    const double m = std::max(std::fabs(a.value), std::fabs(b.value));
    const double diff = std::fabs(a.value - b.value);
    d.rel = m == 0 ? 0.0 : diff / m;
    if (std::isinf(m)) d.rel = a.value == b.value ? 0.0 : INFINITY;
  }
  d.within = d.bits_equal;
  if (!d.within && !tol.bitwise() && !std::isnan(a.value) && !std::isnan(b.value)) {
    if (tol.ulp && d.ulp && *d.ulp <= *tol.ulp) d.within = true;
    if (tol.rtol || tol.atol) {
      const double m = std::max(std::fabs(a.value), std::fabs(b.value));
      if (std::fabs(a.value - b.value) <= tol.atol.value_or(0) + tol.rtol.value_or(0) * m) d.within = true;
    }
  }
  return d;
}

}  // namespace gparity::diff
