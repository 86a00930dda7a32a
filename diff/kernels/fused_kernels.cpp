#include "diff/kernels/fused_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/model/ops/kernel_launch.hpp"
#include "diff/kernels/kernel_compare.hpp"
#include "diff/kernels/kernel_findings.hpp"
#include "diff/ops/op_findings.hpp"
#include "diff/runs/run_compare.hpp"

namespace gparity::diff::kernels {

using json = nlohmann::json;
using model::ops::OpLog;
using model::ops::OpRecord;
using model::ops::TensorRef;

namespace {

/// The record a finding's record_json names ({log, line}), in one rank's logs.
std::pair<const OpLog*, std::uint32_t> find_record(const std::vector<ops::RankLogs>& side, int rank,
                                                   const json& rec) {
  if (!rec.is_object() || !rec.contains("log") || !rec.contains("line")) return {nullptr, 0};
  const auto path = rec["log"].get<std::string>();
  const auto line = rec["line"].get<std::int64_t>();
  for (const auto& r : side) {
    if (r.rank != rank) continue;
    for (const auto& l : r.logs) {
      if (l.path != path) continue;
      const auto it = std::lower_bound(l.records.begin(), l.records.end(), line,
                                       [](const OpRecord& x, std::int64_t v) { return x.line < v; });
      if (it != l.records.end() && it->line == line)
        return {&l, static_cast<std::uint32_t>(it - l.records.begin())};
    }
  }
  return {nullptr, 0};
}

bool same_hashes(const OpLog& a, const TensorRef& x, const OpLog& b, const TensorRef& y) {
  if (!x.hashed() || x.hash_count != y.hash_count) return false;
  for (std::uint32_t i = 0; i < x.hash_count; ++i)
    if (a.hash_text(a.hash(x, i)) != b.hash_text(b.hash(y, i))) return false;
  return true;
}

/// The eager output of `e` that kernel output `o` materialized (same dtype and size), or nullptr.
const TensorRef* eager_value(const OpLog& el, const OpRecord& e, const OpLog& cl, const TensorRef& o) {
  for (std::uint32_t i = 0; i < e.out_count; ++i) {
    const TensorRef& t = el.out(e, i);
    if (t.hashed() && o.numel == t.numel && cl.str(o.dtype) == el.str(t.dtype)) return &t;
  }
  return nullptr;
}

/// The outputs of kernel launch `k` of the same dtype and size as one of eager record `e`'s, but
/// for the values `e` read (the launch wrote them for `e`'s producers).
std::vector<std::uint32_t> materialized_outputs(const OpLog& el, const OpRecord& e, const OpLog& cl,
                                                const OpRecord& k) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t j = 0; j < k.out_count; ++j) {
    const TensorRef& o = cl.out(k, j);
    bool read = false;
    for (std::uint32_t i = 0; i < e.arg_count && !read; ++i) read = same_hashes(el, el.arg(e, i), cl, o);
    if (!read && eager_value(el, e, cl, o) != nullptr) out.push_back(j);
  }
  return out;
}

}  // namespace

json drift_row(const OpLog& el, const TensorRef& eager, const OpLog& cl, const TensorRef& compiled) {
  using model::ops::HashValue;
  json row = {{"eager", el.tensor_text(eager)}, {"compiled", std::string(cl.str(compiled.name))}};
  // Only a norm (an L1 norm as a float64) is a number; hash_tensor and custom hashes are bits
  // that say equal or not, never by how much.
  const std::uint32_t n = std::min(eager.hash_count, compiled.hash_count);
  for (std::uint32_t i = 0; i < n; ++i) {
    const HashValue& a = el.hash(eager, i);
    const HashValue& b = cl.hash(compiled, i);
    if (a.kind != HashValue::Kind::Float || b.kind != HashValue::Kind::Float) continue;
    const double x = std::bit_cast<double>(a.bits);
    const double y = std::bit_cast<double>(b.bits);
    row["evidence"] = "norm";
    row["eager_norm"] = el.hash_text(a);
    row["compiled_norm"] = cl.hash_text(b);
    if (const auto u = ulp_distance(a.bits, b.bits, model::DType::F64)) row["norm_ulp_f64"] = *u;
    const double m = std::max(std::fabs(x), std::fabs(y));
    if (std::isfinite(x) && std::isfinite(y)) row["norm_rel"] = m == 0 ? 0.0 : std::fabs(x - y) / m;
    return row;
  }
  row["evidence"] = "hashes only";
  return row;
}

std::string drift_text(const json& row) {
  if (row.value("evidence", "") != "norm")
    return "; drift: not measurable (the logs hold hashes only, no norms: bits equal or not, never by how "
           "much)";
  std::string s = "; drift of the L1 norms (a lower bound on the values' L1 distance): ";
  s += "eager " + row.value("eager_norm", std::string()) + ", compiled " +
       row.value("compiled_norm", std::string());
  if (row.contains("norm_rel")) s += ", relative " + std::to_string(row["norm_rel"].get<double>());
  if (row.contains("norm_ulp_f64"))
    s += ", " + std::to_string(row["norm_ulp_f64"].get<std::uint64_t>()) + " ULP (f64)";
  return s;
}

namespace {

/// The provenance of compiled record `at` of `log`: its step's launches mapped to their output code.
KernelSite site_of(const OpLog& log, std::uint32_t at, const model::ops::RankProvenance* rank,
                   std::vector<KernelSite>& sites, std::vector<std::uint32_t>& launches,
                   ops::OpSlice& slice) {
  for (const auto& s : ops::slices_of(log)) {
    if (at < s.begin || at >= s.end) continue;
    slice = s;
    launches = step_launches(s);
    sites = map_sites(s, launches, rank);
    const auto it = std::find(launches.begin(), launches.end(), at - s.begin);
    if (it != launches.end()) return sites[static_cast<std::size_t>(it - launches.begin())];
  }
  return {};
}

}  // namespace

void FusedKernelNamer::finding(const Finding& f) {
  if (f.kind != "op_divergence" && f.kind != "op_divergence_follows") {
    out_.finding(f);
    return;
  }
  const int rank = f.where.rank.value_or(-1);
  const auto [el, e] = find_record(eager_, rank, f.values.value("eager", json()));
  const auto cps = f.values.value("compiled", json::array());
  if (el == nullptr || !cps.is_array()) {
    out_.finding(f);
    return;
  }
  for (const auto& c : cps) {
    const auto [cl, k] = find_record(compiled_, rank, c);
    if (cl == nullptr || !model::ops::is_kernel(cl->records[k])) continue;
    const auto outs = materialized_outputs(*el, el->records[e], *cl, cl->records[k]);
    if (outs.empty()) continue;
    std::vector<KernelSite> sites;
    std::vector<std::uint32_t> launches;
    ops::OpSlice slice;
    const model::ops::RankProvenance* rp = provenance_ ? provenance_->rank(rank) : nullptr;
    const KernelSite site = site_of(*cl, k, rp, sites, launches, slice);
    const auto pos = static_cast<std::uint32_t>(std::find(launches.begin(), launches.end(), k - slice.begin) -
                                                launches.begin());
    std::string written;
    json drift = json::array();
    for (const auto j : outs) {
      const TensorRef& o = cl->out(cl->records[k], j);
      if (const TensorRef* t = eager_value(*el, el->records[e], *cl, o))
        drift.push_back(drift_row(*el, *t, *cl, o));
    }
    for (const auto j : outs) {
      const TensorRef& t = cl->out(cl->records[k], j);
      written += (written.empty() ? "" : ", ") + std::string(cl->str(t.name)) + " " + cl->tensor_text(t);
    }
    KernelStepVerdict view;  // launch_text reads the slice, its launches and their sites
    view.base = slice;
    view.align.base = launches;
    view.base_sites = sites;
    std::string clause =
        "; the compiled run materialized it in fused kernel " +
        (pos < launches.size() ? launch_text(view, pos) : std::string(cl->op_name(cl->records[k]))) +
        ", which wrote " + ops::detail::printable(written) + provenance_text(site) +
        (drift.empty() ? std::string() : drift_text(drift.front()));
    Finding g = f;
    const auto at = g.message.rfind("; decided by ");
    g.message.insert(at == std::string::npos ? g.message.size() : at, clause);
    g.values["fused_kernel"] = {{"launch", ops::detail::record_json(*cl, cl->records[k])},
                                {"wrote", written},
                                {"provenance", provenance_json(site)}};
    g.values["drift"] = drift;
    out_.finding(g);
    return;
  }
  out_.finding(f);
}

int compare_runs_with_kernels(const model::ops::OpRun& base, const model::ops::OpRun& cand,
                              const std::vector<ops::RankLogs>& base_logs,
                              const std::vector<ops::RankLogs>& cand_logs, const ops::OpCompareOptions& o,
                              FindingConsumer& out) {
  if (both_compiled(base_logs, cand_logs))
    return compare_kernel_runs(base, cand, base_logs, cand_logs, o, out);
  if (!shows_kernels(cand_logs)) return ops::compare_op_logs(base_logs, cand_logs, o, out);
  const model::ops::RunProvenance prov = read_run_provenance(cand);
  FusedKernelNamer namer(out, base_logs, cand_logs, &prov);
  return ops::compare_op_logs(base_logs, cand_logs, o, namer);
}

}  // namespace gparity::diff::kernels
