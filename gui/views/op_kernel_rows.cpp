#include "gui/views/op_kernel_rows.hpp"

#include "core/model/ops/kernel_launch.hpp"
#include "diff/kernels/kernel_align.hpp"
#include "diff/kernels/kernel_compare.hpp"
#include "diff/kernels/kernel_findings.hpp"
#include "diff/kernels/kernel_sites.hpp"
#include "diff/kernels/kernel_verdicts.hpp"
#include "diff/ops/op_findings.hpp"
#include "diff/ops/op_sides.hpp"

namespace gparity::gui::views {
namespace {

using diff::kernels::KernelSite;
using diff::kernels::KernelStepVerdict;
using diff::ops::OpSlice;

/// The launch's own fields and its provenance; status and verdict are the caller's.
OpKernelRow launch_row(int rank, const OpSlice& s, std::uint32_t at, const KernelSite& site) {
  const auto& log = *s.log;
  const auto& r = s.at(at);
  OpKernelRow row;
  row.rank = rank;
  row.step = s.step;
  row.index = r.index;
  row.line = r.line;
  row.name = std::string(log.op_name(r));
  row.kernel = model::ops::is_kernel(r);
  if (row.kernel) row.family = std::string(model::ops::kernel_family(row.name));
  row.code_line = site.known() ? site.site->line : (row.kernel ? model::ops::launch_line(log, r) : 0);
  if (site.known()) {
    row.graph = site.code->graph;
    row.aten = site.site->aten;
    if (const auto* c = site.config()) row.config = *c;
  }
  if (const auto* o = site.origin()) {
    row.post_nodes = o->post_nodes;
    row.pre_nodes = o->pre_nodes;
    for (const auto& f : o->frames)
      row.sources.push_back(f.text() + (f.code.empty() ? "" : " `" + f.code + "`"));
  } else if (!row.kernel) {
    // An op's `# File:` line is the user frame it ran from (a kernel's is its output code).
    if (std::string src = log.source_text(r); !src.empty()) row.sources.push_back(std::move(src));
  }
  return row;
}

std::string value_status(diff::kernels::ValueState v) {
  switch (v) {
    case diff::kernels::ValueState::Equal: return "equal";
    case diff::kernels::ValueState::WeakEqual: return "weakly equal";
    case diff::kernels::ValueState::Differs: return "differs";
    case diff::kernels::ValueState::Unknown: break;
  }
  return "no evidence";
}

/// A step judged launch by launch: baseline launches in order, candidate-only launches before the
/// next paired candidate launch after them.
OpKernelStep judged_step(const diff::kernels::KernelRankVerdict& rv, const KernelStepVerdict& sv,
                         const diff::ops::HashChoice& choice, const diff::ops::detail::SideWords& words) {
  const int rank = rv.rank;
  OpKernelStep out;
  out.rank = rank;
  out.step = sv.step;
  const auto& a = sv.align;
  const auto* d = sv.first ? &*sv.first : nullptr;
  const auto mark_first = [&](OpKernelRow& row) {
    row.status = "first divergence";
    row.cause = std::string(diff::kernels::kernel_cause_name(d->cause));
    if (!d->from_ranks.empty()) row.cause += " from " + diff::ops::detail::ranks_text(d->from_ranks);
    row.finding = diff::kernels::kernel_divergence_finding(rv, sv, *d, choice, false, words).message;
    out.first_row = static_cast<int>(out.rows.size());
  };
  std::size_t next_cand = 0;
  const auto cand_only_before = [&](std::size_t end) {
    for (; next_cand < end && next_cand < a.cand.size(); ++next_cand) {
      if (a.cand_partner[next_cand] >= 0) continue;
      OpKernelRow row = launch_row(rank, sv.cand, a.cand[next_cand], sv.cand_sites[next_cand]);
      row.status = "candidate only";
      if (d != nullptr && d->base < 0 && d->cand == static_cast<std::int32_t>(next_cand)) mark_first(row);
      out.rows.push_back(std::move(row));
    }
  };
  for (std::size_t b = 0; b < a.base.size(); ++b) {
    const std::int32_t c = a.base_partner[b];
    if (c >= 0) cand_only_before(static_cast<std::size_t>(c));
    OpKernelRow row = launch_row(rank, sv.base, a.base[b], sv.base_sites[b]);
    if (c < 0) {
      row.status = "no counterpart";
    } else {
      const auto& v = sv.values[b];
      row.status = value_status(v.outputs);
      if (v.outputs == diff::kernels::ValueState::Differs)
        row.cause = v.inputs_differ.empty() ? "equal inputs" : "an input differs";
      const auto& cr = sv.cand.at(a.cand[static_cast<std::size_t>(c)]);
      row.counterpart = std::string(sv.cand.log->op_name(cr));
      row.counterpart_index = cr.index;
      row.paired_by = std::string(diff::kernels::paired_by_name(a.paired_by[b]));
    }
    if (d != nullptr && d->base == static_cast<std::int32_t>(b)) mark_first(row);
    out.rows.push_back(std::move(row));
  }
  cand_only_before(a.cand.size());
  return out;
}

/// One side's kernel launches with their provenance, not compared.
std::vector<OpKernelStep> listed_steps(const std::vector<diff::ops::RankLogs>& side,
                                       const model::ops::RunProvenance& prov) {
  std::vector<OpKernelStep> out;
  for (const auto& rl : side) {
    for (const auto& log : rl.logs) {
      for (const auto& slice : diff::ops::slices_of(log)) {
        OpKernelStep step;
        step.rank = rl.rank;
        step.step = slice.step;
        const auto launches = diff::kernels::step_launches(slice);
        const auto sites = diff::kernels::map_sites(slice, launches, prov.rank(rl.rank));
        for (std::size_t i = 0; i < launches.size(); ++i) {
          if (!model::ops::is_kernel(slice.at(launches[i]))) continue;
          OpKernelRow row = launch_row(rl.rank, slice, launches[i], sites[i]);
          row.status = "not compared";
          step.rows.push_back(std::move(row));
        }
        if (!step.rows.empty()) out.push_back(std::move(step));
      }
    }
  }
  return out;
}

}  // namespace

std::string comma_joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& x : items) s += (s.empty() ? "" : ", ") + x;
  return s;
}

const OpKernelStep* OpKernels::find(int rank, std::int64_t step) const {
  for (const auto& s : steps)
    if (s.rank == rank && s.step == step) return &s;
  return nullptr;
}

OpKernels load_op_kernels(const model::ops::OpRun& base, const model::ops::OpRun& cand,
                          const std::vector<diff::ops::RankLogs>& base_logs,
                          const std::vector<diff::ops::RankLogs>& cand_logs,
                          const diff::ops::HashChoice* choice) {
  OpKernels out;
  const bool base_k = diff::kernels::shows_kernels(base_logs);
  const bool cand_k = diff::kernels::shows_kernels(cand_logs);
  if (!base_k && !cand_k) return out;
  if (!base_k || !cand_k) {
    out.side = cand_k ? "candidate" : "baseline";
    const auto prov = diff::kernels::read_run_provenance(cand_k ? cand : base);
    out.steps = listed_steps(cand_k ? cand_logs : base_logs, prov);
    return out;
  }
  out.compared = true;
  out.side = "both";
  if (choice == nullptr || !choice->usable()) return out;  // the headline says why nothing was compared
  const auto bp = diff::kernels::read_run_provenance(base), cp = diff::kernels::read_run_provenance(cand);
  const auto verdicts = diff::kernels::judge_kernel_logs(base_logs, cand_logs, *choice, {&bp, &cp});
  const auto words = diff::ops::detail::side_words(base_logs, cand_logs);
  for (const auto& rv : verdicts)
    for (const auto& sv : rv.steps) out.steps.push_back(judged_step(rv, sv, *choice, words));
  if (const auto* lead = diff::ops::detail::lead_rank(verdicts, diff::kernels::starts_here)) {
    out.lead_rank = lead->rank;
    out.lead_step = lead->first_divergent()->step;
  }
  return out;
}

std::string kernel_row_detail(const OpKernelRow& row) {
  std::string s = row.name + " (" + (row.kernel ? "kernel" : "op") + " #" + std::to_string(row.index) +
                  ", log line " + std::to_string(row.line) + "): " + row.status +
                  (row.cause.empty() ? "" : ", " + row.cause);
  if (row.code_line > 0)
    s += "\noutput code line " + std::to_string(row.code_line) +
         (row.graph.empty() ? "" : " (" + row.graph + ")") +
         (row.config.empty() ? "" : "; config " + row.config);
  if (!row.post_nodes.empty()) s += "\npost-grad nodes: " + comma_joined(row.post_nodes);
  if (!row.pre_nodes.empty()) s += "\npre-grad nodes: " + comma_joined(row.pre_nodes);
  if (!row.aten.empty()) s += "\nATen: " + comma_joined(row.aten);
  if (!row.sources.empty()) s += "\nsource: " + comma_joined(row.sources);
  if (row.kernel && row.code_line == 0 && row.post_nodes.empty() && row.sources.empty())
    s += "\nno provenance (no trace/ beside the run's logs, or the launch matches no call site there)";
  if (!row.counterpart.empty())
    s += "\ncounterpart: " + row.counterpart + " #" + std::to_string(row.counterpart_index) + ", paired by " +
         row.paired_by;
  if (!row.finding.empty()) s += "\n" + row.finding;
  return s;
}

}  // namespace gparity::gui::views
