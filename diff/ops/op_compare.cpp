#include "diff/ops/op_compare.hpp"

#include <algorithm>

#include "core/model/base/input_error.hpp"
#include "diff/kernels/fused_kernels.hpp"
#include "diff/kernels/kernel_verdicts.hpp"
#include "diff/ops/op_cut.hpp"
#include "diff/ops/op_findings.hpp"
#include "diff/report/evidence.hpp"

namespace gparity::diff::ops {

using json = nlohmann::json;
using model::ops::OpLog;
using model::ops::OpRecord;
using namespace detail;

int compare_op_logs(const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled,
                    const OpCompareOptions& o, FindingConsumer& out) {
  Emitter em{out, o, side_words(eager, compiled)};
  const SideWords& w = em.words;
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
  h.mode = "op values by " + (choice && choice->usable() ? choice->text() : std::string("no common hash")) +
           " (" + log_kinds(e0, c0) + ")";
  h.notes = hash_notes(choice, o);
  out.begin(h);

  // Every verdict finishes through the evidence rule: nothing compared is never parity.
  std::uint64_t compared = 0;
  std::string nothing_why;
  auto finish = [&](int code, std::string headline, std::vector<std::string> summary, json data) {
    return finish_op_verdict({code, std::move(headline), std::move(summary), std::move(data)}, eager,
                             compiled, o, choice, compared, nothing_why, out);
  };

  damage(eager, w.base, em);
  damage(compiled, w.cand, em);
  const auto es_spec = side_spec(eager, w.base, em);
  const auto cs_spec = side_spec(compiled, w.cand, em);
  if (!es_spec || !cs_spec)
    return finish(2, "nothing compared: the op logs carry no usable hashes", {}, {{"kind", "ops"}});
  if (!choice || !choice->usable()) {
    Finding f{Severity::Error, "op_hash_functions_differ", {}, "", json::object()};
    f.message =
        "the two sides were hashed with different functions: " + w.base + " " + printable(e0->path) +
        " with " + es_spec->text() + ", " + w.cand + " " + printable(c0->path) + " with " + cs_spec->text() +
        "; no value can be compared (" +
        (e0->format == "gparity op records" && c0->format == "gparity op records"
             ? "record both with the same gparity.record_ops hashes and shard_spec: shard hashes of two "
               "specs are different functions"
             : "log both with the same DebugMode.log_tensor_hashes hash_fn") +
        ")";
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
      em.emit(step_info(rv, sv, w));
      for (const auto& cut : sv.cuts) em.emit(cut_finding(rv, sv, cut, w));
      if (!sv.first) continue;
      const bool follow_up = first != nullptr;
      if (!first) first = &sv;
      em.emit(divergence_finding(rv, sv, *sv.first, *choice, o.max_listed, follow_up, w));
    }
    const StepVerdict* cut = rv.first_cut();
    json rj = {{"rank", rv.rank}, {"steps", rv.steps.size()}, {"parity", first == nullptr && cut == nullptr}};
    if (cut) rj["incomplete"] = {{"step", cut->step}, {"text", cut_text(*cut, cut->cuts.front(), w)}};
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
      if (cut) summary.back() += "; incomplete: " + cut_text(*cut, cut->cuts.front(), w);
    } else if (cut) {
      // No divergence where both sides recorded, but not every op was: never parity.
      summary.push_back("rank " + std::to_string(rv.rank) +
                        ": incomplete: " + cut_text(*cut, cut->cuts.front(), w) +
                        ", not compared from there; no divergence before it");
    } else {
      std::size_t v = 0;
      for (const auto& sv : rv.steps) v += sv.alignment.values_matched;
      summary.push_back("rank " + std::to_string(rv.rank) + ": every " + w.base + " op's value found in " +
                        w.cand_run + " (" + std::to_string(rv.steps.size()) + " step(s), " +
                        std::to_string(v) + " values)");
    }
    const Check::Outcome outcome = detail::rank_outcome(first != nullptr, cut != nullptr, o.allow_incomplete);
    out.check({"ops", rv.rank, outcome,
               outcome == Check::Outcome::Pass ? std::string("op-level parity") : summary.back()});
    ranks.push_back(rj);
  }
  json data = {{"kind", "ops"},
               {"decided_by", choice->text()},
               {"ranks", ranks},
               {"sides", {{"baseline", w.base}, {"candidate", w.cand}}}};
  if (divergent_ranks > 0) {
    // Lead with an origin (the rank where it started), earliest step first; else any rank.
    const RankVerdict* rv = lead_rank(verdicts, [](OpCause c) { return c == OpCause::Origin; });
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
    nothing_why = steps_compared == 0 ? "no rank and step is in both runs"
                                      : "no " + w.base +
                                            " value could be looked up by a strong hash (only constant or "
                                            "empty tensors, hash_tensor 0)";
    compared = 0;
    return finish(2, "NOTHING COMPARED: " + nothing_why, summary, data);
  }
  const int code = exit_code_for(em.worst);
  if (code != 0)
    return finish(code, "incomplete: op-level evidence is missing (see findings)", summary, data);
  return finish(0,
                "op-level parity on " + std::to_string(verdicts.size()) + " rank(s), " +
                    std::to_string(steps_compared) + " rank-step(s): every " + w.base +
                    " op's value was found in " + w.cand_run + " (decided by " + choice->text() + ")",
                summary, data);
}

std::vector<RankLogs> read_rank_logs(const model::ops::OpRun& run) {
  std::vector<RankLogs> side;
  for (const int r : run.ranks()) {
    RankLogs rl;
    rl.rank = r;
    for (const auto* f : run.files_of(r)) rl.logs.push_back(model::ops::read_op_run_file(*f));
    side.push_back(std::move(rl));
  }
  return side;
}

int compare_op_runs(const model::ops::OpRun& eager, const model::ops::OpRun& compiled, OpCompareOptions o,
                    FindingConsumer& out) {
  const auto e = read_rank_logs(eager);
  const auto c = read_rank_logs(compiled);
  if (o.require_kernels) {
    for (const auto* side : {&e, &c})
      for (const auto& rank : *side)
        if (!kernels::rank_shows_kernels(rank))
          throw model::InputError(side == &e ? eager.path : compiled.path,
                                  "rank " + std::to_string(rank.rank) +
                                      " shows no kernel launches: the gate's \"ops\" requires kernel-level "
                                      "parity (\"kernels\": true; docs/gate.md)");
  }
  if (o.eager_name == "eager") o.eager_name = eager.path;
  if (o.compiled_name == "compiled") o.compiled_name = compiled.path;
  // Records that show kernel launches (diff/kernels): two compiled runs kernel by kernel; eager
  // against one naming the fused kernel that wrote each divergent value.
  return kernels::compare_runs_with_kernels(eager, compiled, e, c, o, out);
}

// ---- a step recorded in part (StepCut, op_cut.hpp) ------------------------------------------------

namespace detail {

SideSteps side_steps(const std::vector<RankLogs>& side) {
  SideSteps out;
  for (const auto& r : side) {
    auto& steps = out[r.rank];
    for (const auto& l : r.logs) steps.insert(l.steps.begin(), l.steps.end());
  }
  return out;
}

/// The eager position where the compiled records of the step stop (StepCut), else its end.
std::uint32_t compiled_end(const StepVerdict& sv) {
  std::uint32_t end = sv.eager.size();
  for (const auto& cut : sv.cuts)
    if (cut.compiled) end = std::min(end, cut.eager_from);
  return end;
}

namespace {

/// Past this many records after the last one paired with an eager op (compiled side: new values
/// only), a side's step is taken to go on, not to stop.
constexpr std::uint32_t kCutSlack = 8;

}  // namespace

StopSign stop_sign(const OpSlice& s, int rank, const std::string& side, const SideSteps& mine,
                   const SideSteps& theirs) {
  if (s.log->truncated) return {true, "the log's last line is cut"};
  const auto own = mine.find(rank);
  if (own != mine.end() && !own->second.empty() && *own->second.rbegin() != s.step) return {};
  std::int64_t later = 0;
  for (const auto* steps : {&mine, &theirs})
    for (const auto& [r, set] : *steps)
      if (!set.empty()) later = std::max(later, *set.rbegin());
  if (later <= s.step) return {};
  return {false, "rank " + std::to_string(rank) + " recorded no later " + side +
                     " step, while the run has step " + std::to_string(later)};
}

namespace {

/// The stop sign's words, else what the alignment says ("its records end 2 record(s) after ...").
std::string cut_why(const StopSign& sign, std::string alignment) {
  return sign.why.empty() ? std::move(alignment) : sign.why;
}

/// Whether a record writes a strong value of its own: an output unlike every value it reads
/// (`read`: what the caller knows it reads, its hashed inputs added here). A view, detach, copy
/// or transpose holds its input's value, found wherever that value was, past a cut too: it says
/// nothing of where the records stop.
bool writes_own_value(const OpLog& log, const OpRecord& r, const HashChoice& choice, bool compiled,
                      std::vector<ValueKey>& read, std::vector<std::uint64_t>& dtypes) {
  for (std::uint32_t j = 0; j < r.arg_count && r.has_input_hashes; ++j)
    read.push_back(value_key(log, log.arg(r, j), choice, compiled, dtypes));
  for (std::uint32_t k = 0; k < r.out_count; ++k) {
    const ValueKey v = value_key(log, log.out(r, k), choice, compiled, dtypes);
    if (v.valid && !v.weak &&
        std::none_of(read.begin(), read.end(), [&](const ValueKey& x) { return x.valid && x == v; }))
      return true;
  }
  return false;
}

/// The same for eager op `e`, which also reads what its inputs' producers wrote.
bool holds_own_value(const StepVerdict& sv, std::uint32_t e, const HashChoice& choice,
                     std::vector<std::uint64_t>& dtypes) {
  const OpLog& log = *sv.eager.log;
  const OpRecord& r = sv.eager.at(e);
  std::vector<ValueKey> read;
  for (std::uint32_t j = 0; j < r.arg_count; ++j) {
    const std::int32_t p = sv.alignment.arg_producer[sv.alignment.arg_first[e] + j];
    if (p < 0) continue;
    const OpRecord& made = sv.eager.at(static_cast<std::uint32_t>(p));
    for (std::uint32_t k = 0; k < made.out_count; ++k)
      read.push_back(value_key(log, log.out(made, k), choice, false, dtypes));
  }
  return writes_own_value(log, r, choice, false, read, dtypes);
}

/// How far the compiled records of a step reach: the last eager op (eager order) matched by a
/// value of its own, and the furthest compiled record holding its value.
struct Reach {
  std::int64_t eager_last = -1;
  std::int64_t compiled_last = -1;
};

Reach reach_of(const StepVerdict& sv, const HashChoice& choice) {
  const SliceAlignment& a = sv.alignment;
  std::vector<std::uint64_t> dtypes;
  Reach out;
  for (std::uint32_t e = sv.eager.size(); e-- > 0;) {
    if (a.eager[e].status != ValueStatus::Matched || a.eager[e].paired_by != PairedBy::Value ||
        !holds_own_value(sv, e, choice, dtypes))
      continue;
    out.eager_last = e;
    for (const std::uint32_t c : a.counterparts_of(e))
      out.compiled_last = std::max<std::int64_t>(out.compiled_last, c);
    break;
  }
  return out;
}

/// Where the compiled records stop in eager order: past the reach, the eager ops that compiled
/// records after it were paired with (by op name, decomposition or fusion: records the compiled
/// run wrote, whatever their values), up to the first divergent op that no compiled record was
/// paired with. The first eager position past them, and the last compiled record paired so far.
std::pair<std::uint32_t, std::int64_t> stop_in_eager(const StepVerdict& sv, const Reach& reach) {
  const SliceAlignment& a = sv.alignment;
  auto from = static_cast<std::uint32_t>(reach.eager_last + 1);
  std::int64_t compiled = reach.compiled_last;
  for (std::uint32_t e = from; e < sv.eager.size(); ++e) {
    std::int64_t hi = -1;
    for (const std::uint32_t c : a.counterparts_of(e)) hi = std::max<std::int64_t>(hi, c);
    if (hi > reach.compiled_last) {
      from = e + 1;
      compiled = std::max(compiled, hi);
    } else if (a.eager[e].status == ValueStatus::Divergent || a.eager[e].never_written) {
      break;  // nothing of it in the compiled records (a value never written is not there either)
    }
  }
  return {from, compiled};
}

/// Whether eager op `e`'s value is judged where the compiled records do not reach: past `from`,
/// or a collective whose value only its readers show (hashed before it completed), all past it.
bool past_stop(const StepVerdict& sv, std::uint32_t e, std::uint32_t from) {
  if (e >= from) return true;
  const auto readers = sv.alignment.consumers_of(e);
  return sv.eager.at(e).output_hash_unreliable && !readers.empty() &&
         std::all_of(readers.begin(), readers.end(), [&](std::uint32_t c) { return c >= from; });
}

/// The compiled records of a step stop short (certainly, or where they end right after the last
/// record paired with an eager op while eager ops go on): every eager op past where they stop
/// whose value was not found is not recorded, and its inputs' own hashes say nothing either.
std::optional<StepCut> compiled_cut(StepVerdict& sv, const Reach& reach, const HashChoice& choice,
                                    const StopSign& sign, const SideWords& w) {
  SliceAlignment& a = sv.alignment;
  const auto [from, paired] = stop_in_eager(sv, reach);
  std::uint32_t missing = 0, first = sv.eager.size();
  for (std::uint32_t e = 0; e < sv.eager.size(); ++e) {
    if (a.eager[e].status != ValueStatus::Divergent || !past_stop(sv, e, from)) continue;
    first = std::min(first, e);
    ++missing;
  }
  if (missing == 0) return std::nullopt;
  // The compiled records after it that go on: new values (detaches and views of what was made
  // before hold old ones: a compiled region ends with them), not paired with eager ops before it.
  std::uint32_t tail = 0;
  std::vector<std::uint64_t> dtypes;
  for (auto c = static_cast<std::uint32_t>(paired + 1);
       c < sv.compiled.size() && !sign.certain && tail <= kCutSlack; ++c) {
    const std::int32_t partner = a.compiled_partner[c];
    std::vector<ValueKey> read;
    tail += !sv.compiled.at(c).hash_noise && is_program_op(sv.compiled.at(c)) &&
            (partner < 0 || static_cast<std::uint32_t>(partner) >= from) &&
            writes_own_value(*sv.compiled.log, sv.compiled.at(c), choice, true, read, dtypes);
  }
  if (tail > kCutSlack) return std::nullopt;
  for (std::uint32_t e = first; e < sv.eager.size(); ++e) {
    if (!past_stop(sv, e, from)) continue;
    if (a.eager[e].status == ValueStatus::Divergent) a.eager[e].status = ValueStatus::NotRecorded;
    for (std::uint32_t j = 0; j < sv.eager.at(e).arg_count; ++j)
      if (a.arg_value[a.arg_first[e] + j] == 2) a.arg_value[a.arg_first[e] + j] = 0;
  }
  StepCut cut;
  cut.why = cut_why(sign, "its records end " + std::to_string(tail) +
                              " new value(s) after the last record paired with " + w.a_base + " op");
  cut.last = sv.compiled.size() - 1;
  cut.eager_from = first;
  cut.eager_after = sv.eager.size() - first;
  cut.not_recorded = missing;
  return cut;
}

/// The eager records of a step stop short (a stop sign, and the compiled records go on past the
/// last one paired with an eager op with values the eager step never showed; with no sign that
/// is what an Inductor step looks like): those compiled records are not compared. Without this a
/// cut eager log is parity on what it kept.
std::optional<StepCut> eager_cut(const StepVerdict& sv, const HashChoice& choice, const StopSign& sign,
                                 const SideWords& w) {
  std::uint32_t from = sv.compiled.size();
  while (from > 0 && sv.alignment.compiled_partner[from - 1] < 0) --from;
  if (sign.why.empty() || (!sign.certain && program_ops(sv.compiled, from) <= kCutSlack)) return std::nullopt;
  const ValueIndex eager_values(sv.eager, choice, false);
  const OpLog& log = *sv.compiled.log;
  std::vector<std::uint64_t> dtypes;
  std::uint32_t unseen = 0;
  for (std::uint32_t c = from; c < sv.compiled.size(); ++c) {
    const OpRecord& r = sv.compiled.at(c);
    bool any = false;
    for (std::uint32_t j = 0; j < r.out_count && !r.hash_noise && !r.output_hash_unreliable; ++j) {
      const ValueKey k = value_key(log, log.out(r, j), choice, true, dtypes);
      any = any || (k.valid && !k.weak && !eager_values.contains(k));
    }
    unseen += any;
  }
  if (unseen == 0 || (!sign.certain && unseen <= kCutSlack)) return std::nullopt;
  StepCut cut;
  cut.compiled = false;
  cut.why =
      cut_why(sign, "the " + w.cand + " records go on for " + std::to_string(sv.compiled.size() - from) +
                        " record(s) after the last one paired with " + w.a_base + " op");
  cut.last = sv.eager.size() - 1;
  cut.compiled_from = from;
  cut.compiled_after = unseen;
  return cut;
}

}  // namespace

/// A step that ends a side's log may have been cut there (StepCut): judged before the step's
/// first divergence is chosen, so nothing past the cut is ever one.
void judge_cuts(StepVerdict& sv, int rank, const HashChoice& choice, const SideSteps& eager_steps,
                const SideSteps& compiled_steps, const SideWords& w) {
  const auto& ops = sv.alignment.eager;
  const bool divergent = std::any_of(ops.begin(), ops.end(),
                                     [](const EagerOp& op) { return op.status == ValueStatus::Divergent; });
  // Only a divergent op can lie past a compiled cut.
  if (divergent && sv.compiled.end == sv.compiled.log->records.size() && sv.compiled.size() > 0) {
    const StopSign sign = stop_sign(sv.compiled, rank, w.cand, compiled_steps, eager_steps);
    if (auto cut = compiled_cut(sv, reach_of(sv, choice), choice, sign, w))
      sv.cuts.push_back(std::move(*cut));
  }
  if (sv.eager.end == sv.eager.log->records.size() && sv.eager.size() > 0) {
    const StopSign sign = stop_sign(sv.eager, rank, w.base, eager_steps, compiled_steps);
    if (auto cut = eager_cut(sv, choice, sign, w)) sv.cuts.push_back(std::move(*cut));
  }
}

}  // namespace detail

}  // namespace gparity::diff::ops
