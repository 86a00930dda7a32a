#include "diff/kernels/kernel_compare.hpp"

#include "core/model/base/input_error.hpp"
#include "diff/kernels/kernel_findings.hpp"
#include "diff/ops/op_cut.hpp"
#include "diff/ops/op_findings.hpp"
#include "diff/report/evidence.hpp"

namespace gparity::diff::kernels {

using json = nlohmann::json;
using model::ops::OpLog;
using ops::detail::Emitter;
using ops::detail::printable;

namespace {

const OpLog* first_hashed(const std::vector<ops::RankLogs>& side) {
  for (const auto& r : side)
    for (const auto& l : r.logs)
      if (!l.hash_spec.empty()) return &l;
  return nullptr;
}

std::string provenance_note(const std::string& which, const model::ops::RunProvenance* p) {
  if (p == nullptr || p->empty())
    return which +
           ": no TORCH_TRACE provenance (no trace/ beside its logs): kernels named by their launches only";
  std::size_t codes = 0, origins = 0;
  for (const auto& r : p->ranks)
    for (const auto& c : r.codes) {
      ++codes;
      origins += c.origins.size();
    }
  return which + ": provenance from " + printable(p->dir) + " (" + std::to_string(p->ranks.size()) +
         " rank(s), " + std::to_string(codes) + " output code(s), " + std::to_string(origins) +
         " kernel mapping(s))";
}

void provenance_problems(const std::string& which, const model::ops::RunProvenance* p, Emitter& em) {
  if (p == nullptr) return;
  for (const auto& r : p->ranks) {
    for (const auto& problem : r.problems) {
      Finding f{Severity::Warning, "kernel_provenance_damaged", {}, "", json::object()};
      f.where.rank = r.rank;
      f.where.source = r.path;
      f.message = which + " provenance: " + printable(problem) + " (kernels there are named without it)";
      em.emit(f);
    }
  }
}

/// The rank verdict's first divergence as JSON and as a summary line.
json first_json(const KernelStepVerdict& sv, const KernelDivergence& d) {
  const bool base_side = d.base >= 0;
  const ops::OpSlice& s = base_side ? sv.base : sv.cand;
  const auto at = base_side ? sv.align.base[static_cast<std::size_t>(d.base)]
                            : sv.align.cand[static_cast<std::size_t>(d.cand)];
  const KernelSite& site = base_side ? sv.base_sites[static_cast<std::size_t>(d.base)]
                                     : sv.cand_sites[static_cast<std::size_t>(d.cand)];
  json j = {{"step", sv.step},
            {"op", s.log->op_name(s.at(at))},
            {"level", "kernels"},
            {"cause", kernel_cause_name(d.cause)},
            {"eager", ops::detail::record_json(*s.log, s.at(at))},
            {"side", base_side ? "baseline" : "candidate"},
            {"provenance", provenance_json(site)},
            {"from_ranks", d.from_ranks}};
  if (!d.causal.is_null()) {
    j["causality"] = d.causal;
    if (const auto o = d.causal.find("origin"); o != d.causal.end() && o->is_object()) j["origin"] = *o;
  }
  return j;
}

std::string first_text(const KernelStepVerdict& sv, const KernelDivergence& d) {
  const std::string what = d.base >= 0 ? launch_text(sv, static_cast<std::uint32_t>(d.base))
                                       : cand_launch_text(sv, static_cast<std::uint32_t>(d.cand));
  std::string s = what + ", " + std::string(kernel_cause_name(d.cause));
  if (!d.from_ranks.empty()) s += " from " + ops::detail::ranks_text(d.from_ranks);
  return s;
}

}  // namespace

int compare_kernel_logs(const std::vector<ops::RankLogs>& base, const std::vector<ops::RankLogs>& cand,
                        const SideProvenance& prov, const ops::OpCompareOptions& o, FindingConsumer& out) {
  Emitter em{out, o, ops::detail::side_words(base, cand)};
  const auto& w = em.words;
  ReportHeader h;
  h.title = o.title;
  h.baseline = o.eager_name;
  h.candidate = o.compiled_name;
  const OpLog* b0 = first_hashed(base);
  const OpLog* c0 = first_hashed(cand);
  std::optional<ops::HashChoice> choice;
  if (b0 && c0) choice = ops::choose_hashes(*b0, *c0);
  const bool usable = choice && choice->usable();
  h.mode = "kernel launches' values by " + (usable ? choice->text() : std::string("no common hash")) + " (" +
           ops::detail::log_kinds(b0, c0) +
           " of compiled runs: Triton kernels, extern kernels, the ops around them)";
  h.notes = ops::detail::hash_notes(choice, o);
  if (ops::detail::is_debugmode_log(b0) || ops::detail::is_debugmode_log(c0))
    h.notes.push_back("DebugMode's own hashing ops around each launch are not the program's: never compared");
  h.notes.push_back(provenance_note(w.base, prov.base));
  h.notes.push_back(provenance_note(w.cand, prov.cand));
  out.begin(h);

  std::uint64_t compared = 0;
  std::string nothing_why;
  auto finish = [&](int code, std::string headline, std::vector<std::string> summary, json data) {
    return ops::detail::finish_op_verdict({code, std::move(headline), std::move(summary), std::move(data)},
                                          base, cand, o, choice, compared, nothing_why, out);
  };
  ops::detail::damage(base, w.base, em);
  ops::detail::damage(cand, w.cand, em);
  provenance_problems(w.base, prov.base, em);
  provenance_problems(w.cand, prov.cand, em);
  const auto bs = ops::detail::side_spec(base, w.base, em);
  const auto cs = ops::detail::side_spec(cand, w.cand, em);
  if (!bs || !cs)
    return finish(2, "nothing compared: the op logs carry no usable hashes", {}, {{"kind", "ops"}});
  if (!usable) {
    Finding f{Severity::Error, "op_hash_functions_differ", {}, "", json::object()};
    f.message = "the two sides were hashed with different functions: " + w.base + " " + bs->text() + ", " +
                w.cand + " " + cs->text() + "; no value can be compared";
    em.emit(f);
    nothing_why = "the two sides were hashed with different functions";
    return finish(2, "nothing compared: different hash functions", {}, {{"kind", "ops"}});
  }
  ops::detail::presence(base, cand, em);

  const auto verdicts = judge_kernel_logs(base, cand, *choice, prov, o.max_listed);
  std::size_t divergent_ranks = 0, steps = 0;
  std::vector<std::string> summary;
  json ranks = json::array();
  for (const auto& rv : verdicts) {
    const KernelStepVerdict* first = nullptr;
    const KernelStepVerdict* cut = nullptr;
    std::size_t values = 0;
    for (const auto& sv : rv.steps) {
      ++steps;
      compared += sv.values_compared;
      values += sv.values_compared;
      em.emit(kernel_step_info(rv, sv, w));
      if (sv.cut && sv.cut->not_compared > 0) {
        em.emit(kernel_cut_finding(rv, sv, w));
        if (!cut) cut = &sv;
      }
      if (!sv.first) continue;
      em.emit(kernel_divergence_finding(rv, sv, *sv.first, *choice, first != nullptr, w));
      if (!first) first = &sv;
    }
    json rj = {{"rank", rv.rank}, {"steps", rv.steps.size()}, {"parity", first == nullptr}};
    if (first) {
      ++divergent_ranks;
      rj["first_divergence"] = first_json(*first, *first->first);
      summary.push_back("rank " + std::to_string(rv.rank) + ": first divergent launch at step " +
                        std::to_string(first->step) + ": " + first_text(*first, *first->first));
    } else if (cut) {
      summary.push_back("rank " + std::to_string(rv.rank) + ": incomplete: step " +
                        std::to_string(cut->step) + " recorded in part (" +
                        std::to_string(cut->cut->not_compared) +
                        " launch(es) not compared); every launch compared read and wrote equal values");
    } else {
      summary.push_back("rank " + std::to_string(rv.rank) + ": every launch read and wrote equal values (" +
                        std::to_string(rv.steps.size()) + " step(s), " + std::to_string(values) + " values)");
    }
    const Check::Outcome outcome =
        ops::detail::rank_outcome(first != nullptr, cut != nullptr, o.allow_incomplete);
    out.check({"kernels", rv.rank, outcome,
               outcome == Check::Outcome::Pass ? std::string("kernel-level parity") : summary.back()});
    ranks.push_back(rj);
  }
  json data = {{"kind", "ops"},
               {"level", "kernels"},
               {"decided_by", choice->text()},
               {"ranks", ranks},
               {"sides", {{"baseline", w.base}, {"candidate", w.cand}}}};
  if (divergent_ranks > 0) {
    // Lead with where it started (an origin), earliest step first; else any rank.
    const KernelRankVerdict* lead = ops::detail::lead_rank(verdicts, starts_here);
    const KernelStepVerdict* sv = lead->first_divergent();
    return finish(1,
                  "kernel-level divergence on " + std::to_string(divergent_ranks) + " of " +
                      std::to_string(verdicts.size()) + " rank(s): first at rank " +
                      std::to_string(lead->rank) + " step " + std::to_string(sv->step) + ", " +
                      first_text(*sv, *sv->first) + " (decided by " + choice->text() + ")",
                  summary, data);
  }
  if (compared == 0) {
    nothing_why = steps == 0 ? "no rank and step is in both runs"
                             : "no launch's value could be compared by a strong hash (only constant or empty "
                               "tensors, hash_tensor 0)";
    return finish(2, "NOTHING COMPARED: " + nothing_why, summary, data);
  }
  const int code = exit_code_for(em.worst);
  if (code != 0)
    return finish(code, "incomplete: kernel-level evidence is missing (see findings)", summary, data);
  return finish(0,
                "kernel-level parity on " + std::to_string(verdicts.size()) + " rank(s), " +
                    std::to_string(steps) +
                    " rank-step(s): every launch read and wrote the same values in both runs (" +
                    std::to_string(compared) + " values, decided by " + choice->text() + ")",
                summary, data);
}

model::ops::RunProvenance read_run_provenance(const model::ops::OpRun& run) {
  model::ops::RunProvenance p;
  const std::string dir = model::ops::find_provenance_dir(run.path);
  if (dir.empty()) return p;
  try {
    p = model::ops::read_provenance(dir);
  } catch (const model::InputError& e) {
    // A trace that cannot be read costs its provenance, not the comparison.
    model::ops::RankProvenance r;
    r.path = dir;
    r.problems.push_back(e.what());
    p.dir = dir;
    p.ranks.push_back(std::move(r));
  }
  return p;
}

int compare_kernel_runs(const model::ops::OpRun& base, const model::ops::OpRun& cand,
                        const std::vector<ops::RankLogs>& base_logs,
                        const std::vector<ops::RankLogs>& cand_logs, const ops::OpCompareOptions& o,
                        FindingConsumer& out) {
  const model::ops::RunProvenance bp = read_run_provenance(base), cp = read_run_provenance(cand);
  return compare_kernel_logs(base_logs, cand_logs, {&bp, &cp}, o, out);
}

}  // namespace gparity::diff::kernels
