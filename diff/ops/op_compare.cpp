#include "diff/ops/op_compare.hpp"

#include "core/model/base/input_error.hpp"
#include "diff/ops/op_findings.hpp"
#include "diff/report/evidence.hpp"

namespace gparity::diff::ops {

using json = nlohmann::json;
using model::ops::OpLog;
using model::ops::OpRecord;
using namespace detail;

int compare_op_logs(const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled,
                    const OpCompareOptions& o, FindingConsumer& out) {
  Emitter em{out, o};
  ReportHeader h;
  h.title = o.title;
  h.baseline = o.eager_name;
  h.candidate = o.compiled_name;
  std::optional<HashChoice> choice;
  // The header names the deciding hash functions, so choose them before begin().
  const OpLog* e0 = nullptr;
  const OpLog* c0 = nullptr;
  for (const auto& r : eager) {
    for (const auto& l : r.logs) {
      if (!e0 && !l.hash_spec.empty()) e0 = &l;
    }
  }
  for (const auto& r : compiled) {
    for (const auto& l : r.logs) {
      if (!c0 && !l.hash_spec.empty()) c0 = &l;
    }
  }
  if (e0 && c0) choice = choose_hashes(*e0, *c0);
  const auto records_of = [](const OpLog* l) {
    return l && l->format == "gparity op records" ? "gparity op records" : "PyTorch DebugMode logs";
  };
  const std::string e_kind = records_of(e0), c_kind = records_of(c0);
  h.mode = "op values by " + (choice && choice->usable() ? choice->text() : std::string("no common hash")) +
           " (" + (e_kind == c_kind ? e_kind : e_kind + " vs " + c_kind) + ")";
  if (!choice || !choice->usable() || choice->text().find("hash_tensor") != std::string::npos)
    h.notes.push_back(
        "hash_tensor is order-blind (an XOR-style reduction) and 0 for any constant tensor: hash 0 is never "
        "evidence");
  if (choice && choice->usable() && choice->names.front() != "hash_tensor" && choice->names.front() != "norm")
    h.notes.push_back(
        "xxh3 is XXH3-64 of a tensor's bytes, shard its shard-invariant hash (docs/hashing.md): identities, "
        "a value is found only where the same bits are");
  if (choice && choice->usable() && !choice->identity())
    h.notes.push_back(
        "only norm decides: an L1 norm is closeness, not identity; equal norms cannot prove bitwise parity");
  if (o.allow_incomplete)
    h.notes.push_back("--allow-incomplete: missing evidence is reported but does not fail");
  out.begin(h);

  // Every verdict finishes through the evidence rule: nothing compared is never parity.
  std::uint64_t compared = 0;
  std::string nothing_why;
  auto finish = [&](int code, std::string headline, std::vector<std::string> summary, json data) {
    Verdict v;
    v.exit_code = code;
    v.headline = std::move(headline);
    v.summary = std::move(summary);
    v.data = std::move(data);
    const HashChoice* usable = choice && choice->usable() ? &*choice : nullptr;
    return finish_verdict(v, op_evidence(eager, compiled, o, usable, compared, nothing_why), out);
  };

  damage(eager, "eager", em);
  damage(compiled, "compiled", em);
  const auto es_spec = side_spec(eager, "eager", em);
  const auto cs_spec = side_spec(compiled, "compiled", em);
  if (!es_spec || !cs_spec)
    return finish(2, "nothing compared: the op logs carry no usable hashes", {}, {{"kind", "ops"}});
  if (!choice || !choice->usable()) {
    Finding f{Severity::Error, "op_hash_functions_differ", {}, "", json::object()};
    f.message = "the two sides were hashed with different functions: eager " + printable(e0->path) +
                " with " + es_spec->text() + ", compiled " + printable(c0->path) + " with " +
                cs_spec->text() +
                "; no value can be compared (log both with the same DebugMode.log_tensor_hashes hash_fn)";
    f.values = {{"eager", es_spec->functions}, {"compiled", cs_spec->functions}};
    em.emit(f);
    nothing_why = "the two sides were hashed with different functions";
    return finish(2, "nothing compared: different hash functions", {}, {{"kind", "ops"}});
  }
  if (!choice->identity()) {
    Finding f{Severity::Warning, "op_hash_closeness", {}, "", json::object()};
    f.message = "values are decided by norm alone (L1 norms): equal norms are not proof of equal bits";
    em.emit(f);
  }
  presence(eager, compiled, em);

  const auto verdicts = judge_op_logs(eager, compiled, *choice, o.max_listed);
  std::size_t matched = 0, divergent_ranks = 0, steps_compared = 0;
  std::vector<std::string> summary;
  json ranks = json::array();
  for (const auto& rv : verdicts) {
    const StepVerdict* first = nullptr;
    for (const auto& sv : rv.steps) {
      ++steps_compared;
      matched += sv.alignment.values_matched;
      compared += sv.alignment.values_compared - sv.alignment.values_weak;
      em.emit(step_info(rv, sv));
      if (!sv.first) continue;
      const bool follow_up = first != nullptr;
      if (!first) first = &sv;
      em.emit(divergence_finding(rv, sv, *sv.first, *choice, o.max_listed, follow_up));
    }
    json rj = {{"rank", rv.rank}, {"steps", rv.steps.size()}, {"parity", first == nullptr}};
    if (first) {
      ++divergent_ranks;
      const OpRecord& r = first->eager.at(first->first->record);
      rj["first_divergence"] = {{"step", first->step},
                                {"op", first->eager.log->op_name(r)},
                                {"cause", op_cause_name(first->first->cause)},
                                {"eager", record_json(*first->eager.log, r)},
                                {"from_ranks", first->first->from_ranks}};
      if (first->first->collective >= 0) {
        const OpRecord& c = first->eager.at(static_cast<std::uint32_t>(first->first->collective));
        rj["first_divergence"]["group"] = group_json(*first->eager.log, c);
      }
      if (first->first->origin_rank >= 0)
        rj["first_divergence"]["origin"] = {{"rank", first->first->origin_rank},
                                            {"op", first->first->origin_op},
                                            {"source", first->first->origin_source},
                                            {"index", first->first->origin_index}};
      summary.push_back(
          "rank " + std::to_string(rv.rank) + ": first divergent op at step " + std::to_string(first->step) +
          ": " + op_text(*first->eager.log, r) + ", " + std::string(op_cause_name(first->first->cause)) +
          (first->first->from_ranks.empty() ? "" : " from " + ranks_text(first->first->from_ranks)));
    } else {
      std::size_t v = 0;
      for (const auto& sv : rv.steps) v += sv.alignment.values_matched;
      summary.push_back("rank " + std::to_string(rv.rank) +
                        ": every eager op's value found in the compiled run (" +
                        std::to_string(rv.steps.size()) + " step(s), " + std::to_string(v) + " values)");
    }
    out.check({"ops", rv.rank, first ? Check::Outcome::Fail : Check::Outcome::Pass,
               first ? summary.back() : std::string("op-level parity")});
    ranks.push_back(rj);
  }
  json data = {{"kind", "ops"}, {"decided_by", choice->text()}, {"ranks", ranks}};
  if (divergent_ranks > 0) {
    // Lead with an origin (the rank where it started), earliest step first; else any rank.
    const RankVerdict* rv = nullptr;
    for (const bool origin_only : {true, false}) {
      for (const auto& v : verdicts) {
        const StepVerdict* s = v.first_divergent();
        if (!s || (origin_only && s->first->cause != OpCause::Origin)) continue;
        if (!rv || s->step < rv->first_divergent()->step) rv = &v;
      }
      if (rv) break;
    }
    const StepVerdict* sv = rv->first_divergent();
    const OpRecord& r = sv->eager.at(sv->first->record);
    return finish(1,
                  "op-level divergence on " + std::to_string(divergent_ranks) + " of " +
                      std::to_string(verdicts.size()) + " rank(s): first at rank " +
                      std::to_string(rv->rank) + " step " + std::to_string(sv->step) + ", " +
                      op_text(*sv->eager.log, r) + ", " + std::string(op_cause_name(sv->first->cause)) +
                      " (decided by " + choice->text() + ")",
                  summary, data);
  }
  if (matched == 0) {
    nothing_why = steps_compared == 0
                      ? "no rank and step is in both runs"
                      : "no eager value could be looked up by a strong hash (only constant or "
                        "empty tensors, hash_tensor 0)";
    compared = 0;
    return finish(2, "NOTHING COMPARED: " + nothing_why, summary, data);
  }
  const int code = exit_code_for(em.worst);
  if (code != 0)
    return finish(code, "incomplete: op-level evidence is missing (see findings)", summary, data);
  return finish(0,
                "op-level parity on " + std::to_string(verdicts.size()) + " rank(s), " +
                    std::to_string(steps_compared) +
                    " rank-step(s): every eager op's value was found in the compiled run (decided by " +
                    choice->text() + ")",
                summary, data);
}

int compare_op_runs(const model::ops::OpRun& eager, const model::ops::OpRun& compiled, OpCompareOptions o,
                    FindingConsumer& out) {
  auto load = [](const model::ops::OpRun& run) {
    std::vector<RankLogs> side;
    for (const int r : run.ranks()) {
      RankLogs rl;
      rl.rank = r;
      for (const auto* f : run.files_of(r)) rl.logs.push_back(model::ops::read_op_run_file(*f));
      side.push_back(std::move(rl));
    }
    return side;
  };
  const auto e = load(eager);
  const auto c = load(compiled);
  if (o.eager_name == "eager") o.eager_name = eager.path;
  if (o.compiled_name == "compiled") o.compiled_name = compiled.path;
  return compare_op_logs(e, c, o, out);
}

}  // namespace gparity::diff::ops
