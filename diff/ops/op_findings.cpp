// The findings of an op-level comparison (op_findings.hpp): a divergence's finding and message,
// a step's summary, the two sides' hash functions, damage and presence, and the evidence rule's
// account.

#include "diff/ops/op_findings.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/model/base/display_text.hpp"

namespace gparity::diff::ops::detail {

using json = nlohmann::json;
using model::ops::OpLog;
using model::ops::OpRecord;

std::string printable(std::string_view s) {
  return model::display_text(s);
}

namespace {

std::string base_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

std::string op_text(const OpLog& log, const OpRecord& r) {
  std::string s = printable(log.op_name(r));
  std::string ctx;
  if (r.module != 0) ctx = printable(log.str(r.module));
  if (const std::string src = log.source_text(r); !src.empty())
    ctx += (ctx.empty() ? "" : ", ") + printable(src);
  if (!ctx.empty()) s += " (" + ctx + ")";
  return s;
}

json record_json(const OpLog& log, const OpRecord& r) {
  json j = {{"op", log.op_name(r)},
            {"index", r.index},
            {"log", log.path},
            {"line", r.line},
            {"phase", model::ops::phase_name(r.phase)}};
  j["module"] = r.module != 0 ? json(log.str(r.module)) : json(nullptr);
  j["source"] = model::ops::source_json<json>(log, r.source);
  return j;
}

namespace {

std::string tensor_label(const OpLog& log, const model::ops::TensorRef& t) {
  std::string s = t.id >= 0 ? "t$" + std::to_string(t.id) + " " : std::string();
  return s + printable(log.tensor_text(t));
}

/// "aten::mul.Tensor x5, aten::add.Tensor x2, aten::tanh" (first appearance order).
std::string counterparts_text(const StepVerdict& sv, std::span<const std::uint32_t> cps,
                              std::size_t max_listed) {
  std::vector<std::pair<std::string, std::size_t>> names;
  for (const auto c : cps) {
    const std::string n(sv.compiled.log->op_name(sv.compiled.at(c)));
    auto it = std::find_if(names.begin(), names.end(), [&](const auto& p) { return p.first == n; });
    if (it == names.end()) {
      names.emplace_back(n, 1);
    } else {
      ++it->second;
    }
  }
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max_listed + 3; ++i) {
    if (!s.empty()) s += ", ";
    s += printable(names[i].first);
    if (names[i].second > 1) s += " x" + std::to_string(names[i].second);
  }
  if (names.size() > max_listed + 3) s += ", ...";
  return s;
}

}  // namespace

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (const int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + s;
}

/// A collective's group: {name, ranks} (ranks null where the log does not list them).
json group_json(const OpLog& log, const OpRecord& r) {
  const auto it = r.group != 0 ? log.group_ranks.find(r.group) : log.group_ranks.end();
  return {{"name", collective_group(log, r)},
          {"ranks", it != log.group_ranks.end() ? json(it->second) : json(nullptr)}};
}

namespace {

/// " (group '3': ranks 2, 3)" for a collective on a named group other than the world; "".
std::string group_clause(const OpLog& log, const OpRecord& r) {
  const std::string_view name = collective_group(log, r);
  if (name == kAllRanksGroup) return {};
  const auto it = log.group_ranks.find(r.group);
  return " (group '" + printable(name) + "'" +
         (it != log.group_ranks.end() ? ": " + ranks_text(it->second) : "") + ")";
}

}  // namespace

bool shows_compiled_code(const std::vector<RankLogs>& side) {
  for (const auto& r : side) {
    for (const auto& log : r.logs) {
      for (const auto& rec : log.records) {
        if (rec.kind == model::ops::RecordKind::Triton) return true;
        if (rec.source != 0 && log.str(log.sources[rec.source].file).starts_with("<eval_with_key>"))
          return true;
      }
    }
  }
  return false;
}

SideWords side_words(const std::vector<RankLogs>& baseline, const std::vector<RankLogs>& candidate) {
  if (shows_compiled_code(candidate) && !shows_compiled_code(baseline)) return {};
  return {"baseline", "a baseline", "candidate", "the candidate"};
}

Finding divergence_finding(const RankVerdict& rv, const StepVerdict& sv, const OpDivergence& d,
                           const HashChoice& choice, std::size_t max_listed, bool follow_up,
                           const SideWords& w) {
  const OpLog& el = *sv.eager.log;
  const OpRecord& r = sv.eager.at(d.record);
  const SliceAlignment& a = sv.alignment;
  Finding f;
  f.severity = Severity::Divergence;
  f.kind = follow_up && d.cause == OpCause::FollowsStep ? "op_divergence_follows" : "op_divergence";
  f.where.rank = rv.rank;
  f.where.step = sv.step;
  f.where.node = std::string(el.op_name(r));
  f.where.source = el.path;
  f.where.line = r.line;

  std::string msg = "first divergent op " + op_text(el, r) + ", " +
                    std::string(model::ops::phase_name(r.phase)) +
                    (r.module == 0 ? " (module not recorded)" : "") + ": ";
  const OpRecord& judged = d.collective >= 0 ? sv.eager.at(static_cast<std::uint32_t>(d.collective)) : r;
  json inputs = json::array();
  std::vector<std::string> differing;
  for (const auto& c : d.inputs) {
    const auto& t = el.arg(judged, c.arg);
    json j = {{"arg", c.arg},
              {"tensor", tensor_label(el, t)},
              {"state", c.state == InputState::Equal     ? "equal"
                        : c.state == InputState::Differs ? "differs"
                                                         : "unknown"},
              {"decided_by", c.by_hash         ? "its hash"
                             : c.producer >= 0 ? "its producer"
                                               : "nothing"}};
    if (c.producer >= 0) j["producer"] = record_json(el, sv.eager.at(static_cast<std::uint32_t>(c.producer)));
    inputs.push_back(j);
    if (c.state != InputState::Differs) continue;
    std::string what = tensor_label(el, t);
    if (c.producer >= 0) what += " from " + op_text(el, sv.eager.at(static_cast<std::uint32_t>(c.producer)));
    differing.push_back(what);
  }
  switch (d.cause) {
    case OpCause::Origin: {
      msg += "origin (its inputs' values are in " + w.cand_run + ", its output's is not)";
      const auto unknown = std::count_if(d.inputs.begin(), d.inputs.end(),
                                         [](const InputCheck& c) { return c.state == InputState::Unknown; });
      if (unknown > 0) msg += "; " + std::to_string(unknown) + " input(s) without evidence taken as equal";
      break;
    }
    case OpCause::Propagated:
      msg += differing.empty() ? printable(d.causal_text)
                               : "propagated: its input " + differing.front() + " already differed";
      break;
    case OpCause::Received:
      msg += "received through " + printable(el.op_name(judged)) + group_clause(el, judged) + " from " +
             ranks_text(d.from_ranks) + " (its local inputs are equal, theirs differ)";
      if (d.origin_rank >= 0)
        msg += ", origin " + printable(d.origin_op) +
               (d.origin_source.empty() ? "" : " at " + printable(d.origin_source)) + " on rank " +
               std::to_string(d.origin_rank);
      if (!d.through_op.empty())
        msg += ", reaching " + printable(el.op_name(judged)) + " through " + printable(d.through_op) +
               (d.through_source.empty() ? "" : " at " + printable(d.through_source));
      break;
    case OpCause::Unknown:
      msg += printable(d.causal_text.empty() ? std::string("cause unknown") : d.causal_text);
      break;
    case OpCause::FollowsStep:
      msg += "follows from step " + std::to_string(d.follows_step) + " (its input " + differing.front() +
             " was made before this step and differs)";
      break;
    case OpCause::Input:
      msg += differing.empty() ? printable(d.causal_text)
                               : "input: " + differing.front() +
                                     ", made before this step, differs with no earlier divergence seen";
      break;
  }
  const auto cps = a.counterparts_of(d.record);
  json compiled = json::array();
  for (const auto c : cps) compiled.push_back(record_json(*sv.compiled.log, sv.compiled.at(c)));
  if (!cps.empty()) {
    const OpRecord& c0 = sv.compiled.at(cps.front());
    const OpRecord& c1 = sv.compiled.at(cps.back());
    msg += "; " + w.cand + " counterpart(s): " + counterparts_text(sv, cps, max_listed) + " (" +
           printable(base_name(sv.compiled.log->path)) + ":" + std::to_string(c0.line) +
           (c1.line != c0.line ? "-" + std::to_string(c1.line) : "") + ", by " +
           std::string(paired_by_name(a.eager[d.record].paired_by)) + ")";
  } else {
    msg += "; no " + w.cand + " counterpart found";
  }
  json carriers = json::array();
  if (!d.carriers.empty()) {
    msg += "; carried on by ";
    for (std::size_t i = 0; i < d.carriers.size(); ++i) {
      const OpRecord& cr = sv.eager.at(d.carriers[i]);
      msg += (i ? ", " : "") + printable(el.op_name(cr)) + " #" + std::to_string(cr.index);
      carriers.push_back(record_json(el, cr));
    }
    msg += " (" + std::to_string(d.carried_total) + " divergent op(s) computed from it)";
  }
  if (d.other_received_total > 0)
    msg += "; " + std::to_string(d.other_received_total) + " other collective(s) of the step received too";
  if (d.other_origin_total > 0)
    msg += "; " + std::to_string(d.other_origin_total) + " other origin(s) in the step";
  msg += "; decided by " + choice.text();
  f.message = msg;
  json other = json::array();
  for (const auto o : d.other_origins) other.push_back(record_json(el, sv.eager.at(o)));
  json other_received = json::array();
  for (const auto o : d.other_received) other_received.push_back(record_json(el, sv.eager.at(o)));
  f.values = {{"rank", rv.rank},
              {"step", sv.step},
              {"eager", record_json(el, r)},
              {"cause", op_cause_name(d.cause)},
              {"inputs", inputs},
              {"compiled", compiled},
              {"paired_by", paired_by_name(a.eager[d.record].paired_by)},
              {"carriers", carriers},
              {"carried_total", d.carried_total},
              {"other_origins", other},
              {"other_origin_total", d.other_origin_total},
              {"other_received", other_received},
              {"other_received_total", d.other_received_total},
              {"from_ranks", d.from_ranks},
              {"decided_by", choice.text()}};
  if (d.collective >= 0) f.values["collective"] = record_json(el, judged);
  if (!d.causal.is_null()) f.values["causality"] = d.causal;
  if (is_collective(el.op_name(judged))) f.values["group"] = group_json(el, judged);
  if (d.origin_rank >= 0)
    f.values["origin"] = {{"rank", d.origin_rank},
                          {"op", d.origin_op},
                          {"source", d.origin_source},
                          {"index", d.origin_index},
                          {"step", sv.step}};
  if (d.follows_step > 0) f.values["follows_step"] = d.follows_step;
  return f;
}

Finding step_info(const RankVerdict& rv, const StepVerdict& sv, const SideWords& w) {
  const SliceAlignment& a = sv.alignment;
  Finding f;
  f.severity = Severity::Info;
  f.kind = "op_step_compared";
  f.where.rank = rv.rank;
  f.where.step = sv.step;
  // Ops only: a torch-function call wraps the ops it dispatches (they hold its values).
  const std::uint32_t eager_ops = program_ops(sv.eager),
                      compiled_ops = program_ops(sv.compiled) + static_cast<std::uint32_t>(a.compiled_noise);
  f.message =
      std::to_string(eager_ops) + " " + w.base + " ops, " + std::to_string(compiled_ops) + " " + w.cand +
      "; " + std::to_string(a.values_matched) + " of " + std::to_string(a.values_compared) + " " + w.base +
      " values found by a strong hash, " + std::to_string(a.values_weak) +
      " weak (constant or empty tensors: no evidence), " + std::to_string(sv.divergent) + " divergent ops, " +
      std::to_string(sv.unobserved) + " unobserved, " +
      (sv.not_recorded ? std::to_string(sv.not_recorded) + " not recorded (the " + w.cand + " records stop), "
                       : std::string()) +
      std::to_string(a.compiled_only) + " " + w.cand + " ops without " + w.a_base + " partner" +
      (a.compiled_noise
           ? ", " + std::to_string(a.compiled_noise) + " of DebugMode's own kernel-argument hashing"
           : std::string());
  f.values = {{"eager_ops", eager_ops},
              {"compiled_ops", compiled_ops},
              {"values_compared", a.values_compared},
              {"values_matched", a.values_matched},
              {"values_weak", a.values_weak},
              {"divergent_ops", sv.divergent},
              {"unobserved_ops", sv.unobserved},
              {"not_recorded_ops", sv.not_recorded},
              {"weakly_matched_ops", sv.weak_only},
              {"unhashed_ops", sv.unhashed},
              {"compiled_only_ops", a.compiled_only},
              {"compiled_hash_noise_ops", a.compiled_noise}};
  return f;
}

std::string cut_text(const StepVerdict& sv, const StepCut& cut, const SideWords& w) {
  const OpSlice& s = cut.compiled ? sv.compiled : sv.eager;
  const OpRecord& r = s.at(cut.last);
  return "the " + (cut.compiled ? w.cand : w.base) + " records of step " + std::to_string(sv.step) +
         " stop at " + printable(base_name(s.log->path)) + ":" + std::to_string(r.line) + " (" +
         printable(s.log->op_name(r)) + ")";
}

Finding cut_finding(const RankVerdict& rv, const StepVerdict& sv, const StepCut& cut, const SideWords& w) {
  const OpSlice& s = cut.compiled ? sv.compiled : sv.eager;
  Finding f{Severity::Incomplete, "op_step_cut", {}, "", json::object()};
  f.where.rank = rv.rank;
  f.where.step = sv.step;
  f.where.source = s.log->path;
  f.where.line = s.at(cut.last).line;
  std::string msg =
      "rank " + std::to_string(rv.rank) + ": " + cut_text(sv, cut, w) + " (" + printable(cut.why) + "): ";
  f.values = {{"rank", rv.rank},
              {"step", sv.step},
              {"side", cut.compiled ? "compiled" : "eager"},
              {"why", cut.why},
              {"last_record", record_json(*s.log, s.at(cut.last))}};
  if (cut.compiled) {
    const OpRecord& first = sv.eager.at(cut.eager_from);
    msg += "not compared from " + w.base + " op " + op_text(*sv.eager.log, first) + " #" +
           std::to_string(first.index) + " on (" + std::to_string(cut.eager_after) + " " + w.base +
           " op(s), " + std::to_string(cut.not_recorded) + " of them with values past where the " + w.cand +
           " records stop): not recorded, never divergent";
    f.where.node = std::string(sv.eager.log->op_name(first));
    f.values["first_not_compared"] = record_json(*sv.eager.log, first);
    f.values["eager_ops_after"] = cut.eager_after;
    f.values["not_recorded"] = cut.not_recorded;
  } else {
    msg +=
        std::to_string(cut.compiled_after) + " " + w.cand + " record(s) from " + w.cand + " " +
        printable(base_name(sv.compiled.log->path)) + ":" +
        std::to_string(cut.compiled_from < sv.compiled.size() ? sv.compiled.at(cut.compiled_from).line : 0) +
        " on hold values the " + w.base + " records never show: not compared";
    if (cut.compiled_from < sv.compiled.size())
      f.values["first_not_compared"] = record_json(*sv.compiled.log, sv.compiled.at(cut.compiled_from));
    f.values["compiled_records_after"] = cut.compiled_after;
  }
  f.message = msg + " (a rank killed mid-step or a cut log leaves this)";
  return f;
}

/// Every log of a side must carry the same hash functions; returns the spec or reports why not.
std::optional<model::ops::HashSpec> side_spec(const std::vector<RankLogs>& side, const std::string& which,
                                              Emitter& em) {
  std::optional<model::ops::HashSpec> spec;
  std::string spec_path;
  std::vector<std::string> unhashed;
  for (const auto& r : side) {
    for (const auto& log : r.logs) {
      if (log.hash_spec.empty()) {
        unhashed.push_back(log.path);
        continue;
      }
      if (!spec) {
        spec = log.hash_spec;
        spec_path = log.path;
      } else if (!(*spec == log.hash_spec)) {
        Finding f{Severity::Error, "op_hash_functions_differ", {}, "", json::object()};
        f.where.source = log.path;
        f.message = which + ": " + printable(log.path) + " is hashed with " + log.hash_spec.text() + ", " +
                    printable(spec_path) + " with " + spec->text() + ": one run, one set of hash functions";
        em.emit(f);
        return std::nullopt;
      }
    }
  }
  if (!unhashed.empty()) {
    Finding f{Severity::Error, "op_no_hashes", {}, "", json::object()};
    f.where.source = unhashed.front();
    f.message =
        which + ": " + printable(unhashed.front()) +
        (unhashed.size() > 1 ? " and " + std::to_string(unhashed.size() - 1) + " other log(s)" : "") +
        " have no tensor hashes (record them with DebugMode.log_tensor_hashes(hash_fn=[\"hash_tensor\"], "
        "hash_inputs=True)): without values there is nothing to compare";
    f.values = {{"logs", unhashed}};
    em.emit(f);
    return std::nullopt;
  }
  return spec;
}

void damage(const std::vector<RankLogs>& side, const std::string& which, Emitter& em) {
  for (const auto& r : side) {
    for (const auto& log : r.logs) {
      std::size_t n = 0;
      for (const auto& i : log.issues) {
        if (n++ == 10) {
          Finding more{Severity::Incomplete, "op_log_damaged", {}, "", json::object()};
          more.where.source = log.path;
          more.where.rank = r.rank;
          more.message =
              which + ": " + std::to_string(log.issues.size() - 10) + " more unreadable line(s) in this log";
          em.emit(more);
          break;
        }
        Finding f{Severity::Incomplete,
                  log.truncated && &i == &log.issues.back() ? "op_log_truncated" : "op_log_damaged",
                  {},
                  "",
                  json::object()};
        f.where.source = log.path;
        f.where.line = i.line;
        f.where.rank = r.rank;
        f.message = which + ": " + printable(i.problem) + " (this record is not compared)";
        em.emit(f);
      }
      if (log.records.empty()) {
        Finding f{Severity::Incomplete, "op_log_empty", {}, "", json::object()};
        f.where.source = log.path;
        f.where.rank = r.rank;
        f.message = which + ": no DebugMode record in this log";
        em.emit(f);
      }
    }
  }
}

/// Ranks and steps that only one side has: missing evidence.
void presence(const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled, Emitter& em) {
  auto steps_of = [](const RankLogs& r) {
    std::set<std::int64_t> s;
    for (const auto& l : r.logs) s.insert(l.steps.begin(), l.steps.end());
    return s;
  };
  const SideWords& w = em.words;
  for (const auto& [side, other, name, other_name] :
       {std::tuple{&eager, &compiled, &w.base, &w.cand}, std::tuple{&compiled, &eager, &w.cand, &w.base}}) {
    for (const auto& r : *side) {
      const auto it =
          std::find_if(other->begin(), other->end(), [&](const RankLogs& o) { return o.rank == r.rank; });
      if (it == other->end()) {
        Finding f{Severity::Incomplete, "op_rank_missing", {}, "", json::object()};
        f.where.rank = r.rank;
        f.message = std::string("rank ") + std::to_string(r.rank) + " has " + *name + " logs but no " +
                    *other_name + " logs: not compared";
        em.emit(f);
        continue;
      }
      const auto mine = steps_of(r), theirs = steps_of(*it);
      for (const auto s : mine) {
        if (theirs.contains(s)) continue;
        Finding f{Severity::Incomplete, "op_step_missing", {}, "", json::object()};
        f.where.rank = r.rank;
        f.where.step = s;
        f.message = std::string("step ") + std::to_string(s) + " is in the " + *name + " logs of rank " +
                    std::to_string(r.rank) + " but not in the " + *other_name + " logs: not compared";
        em.emit(f);
      }
    }
  }
}

namespace {

/// Hashed output values per rank of one side: those a strong hash of `choice` decides, or every
/// hashed output when no choice could be made.
std::map<int, std::uint64_t> values_per_rank(const std::vector<RankLogs>& side, const HashChoice* choice,
                                             bool compiled) {
  std::map<int, std::uint64_t> out;
  std::vector<std::uint64_t> dtype_cache;
  for (const auto& r : side) {
    auto& n = out[r.rank];
    for (const auto& log : r.logs) {
      dtype_cache.clear();  // string ids are per log
      for (const auto& rec : log.records) {
        if (rec.output_hash_unreliable || rec.hash_noise) continue;
        for (std::uint32_t i = 0; i < rec.out_count; ++i) {
          const auto& t = log.out(rec, i);
          if (!t.hashed()) continue;
          if (choice != nullptr) {
            const ValueKey k = value_key(log, t, *choice, compiled, dtype_cache);
            if (!k.valid || k.weak) continue;
          }
          ++n;
        }
      }
    }
  }
  return out;
}

/// What the comparison had to work with, for the evidence rule (diff/report/evidence.hpp).

}  // namespace

bool is_debugmode_log(const model::ops::OpLog* log) {
  return !(log && log->format == "gparity op records");
}

std::string log_kinds(const model::ops::OpLog* baseline, const model::ops::OpLog* candidate) {
  const auto kind = [](const model::ops::OpLog* l) {
    return std::string(is_debugmode_log(l) ? "PyTorch DebugMode logs" : "gparity op records");
  };
  const std::string b = kind(baseline), c = kind(candidate);
  return b == c ? b : b + " vs " + c;
}

std::vector<std::string> hash_notes(const std::optional<HashChoice>& choice, const OpCompareOptions& o) {
  std::vector<std::string> notes;
  const bool usable = choice && choice->usable();
  if (!usable || choice->text().find("hash_tensor") != std::string::npos)
    notes.push_back(
        "hash_tensor is order-blind (an XOR-style reduction) and 0 for any constant tensor: hash 0 is never "
        "evidence");
  if (usable && choice->names.front() != "hash_tensor" && choice->names.front() != "norm")
    notes.push_back(
        "xxh3 is XXH3-64 of a tensor's bytes, shard its shard-invariant hash (docs/hashing.md): identities, "
        "a value is found only where the same bits are");
  if (usable && !choice->identity())
    notes.push_back(
        "only norm decides: an L1 norm is closeness, not identity; equal norms cannot prove bitwise parity");
  if (o.allow_incomplete)
    notes.push_back("--allow-incomplete: missing evidence is reported but does not fail");
  return notes;
}

int finish_op_verdict(Verdict v, const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled,
                      const OpCompareOptions& o, const std::optional<HashChoice>& choice,
                      std::uint64_t compared, std::string nothing_why, FindingConsumer& out) {
  const HashChoice* usable = choice && choice->usable() ? &*choice : nullptr;
  return finish_verdict(v, op_evidence(eager, compiled, o, usable, compared, std::move(nothing_why)), out);
}

Evidence op_evidence(const std::vector<RankLogs>& eager, const std::vector<RankLogs>& compiled,
                     const OpCompareOptions& o, const HashChoice* choice, std::uint64_t compared,
                     std::string nothing_why) {
  Evidence e;
  e.what = "op values";
  e.allow_incomplete = o.allow_incomplete;
  e.compared = compared;
  e.nothing_why = std::move(nothing_why);
  const auto ev = values_per_rank(eager, choice, false);
  const auto cv = values_per_rank(compiled, choice, true);
  auto side = [&](const char* role, const std::string& input, const std::vector<RankLogs>& logs,
                  const std::map<int, std::uint64_t>& per_rank) {
    EvidenceSide s;
    s.role = role;
    s.input = input;
    std::size_t records = 0;  // ops only (is_program_op): not the torch-function calls around them
    bool hashed = false;
    for (const auto& r : logs) {
      for (const auto& l : r.logs) {
        records += static_cast<std::size_t>(
            std::count_if(l.records.begin(), l.records.end(),
                          [](const model::ops::OpRecord& x) { return is_program_op(x); }));
        hashed = hashed || !l.hash_spec.empty();
      }
    }
    for (const auto& [rank, n] : per_rank) s.items += n;
    s.detail = std::to_string(s.items) + " op values (strong hashes) of " + std::to_string(records) +
               " ops on " + std::to_string(logs.size()) + (logs.size() == 1 ? " rank" : " ranks");
    if (!hashed) s.nothing = "holds DebugMode logs without tensor hashes";
    s.tried = {"PyTorch DebugMode debug_string text", "DebugMode dump_tensor_hashes",
               "gparity op records (trace v1)"};
    return s;
  };
  e.sides.push_back(side("baseline", o.eager_name, eager, ev));
  e.sides.push_back(side("candidate", o.compiled_name, compiled, cv));
  std::set<int> ranks;
  for (const auto& [r, n] : ev) ranks.insert(r);
  for (const auto& [r, n] : cv) ranks.insert(r);
  for (const int r : ranks) {
    RankEvidenceCount rc;
    rc.rank = r;
    rc.baseline = ev.contains(r) ? ev.at(r) : 0;
    rc.candidate = cv.contains(r) ? cv.at(r) : 0;
    rc.reported = !ev.contains(r) || !cv.contains(r);  // op_rank_missing names it
    e.ranks.push_back(rc);
  }
  return e;
}

}  // namespace gparity::diff::ops::detail
