#include "diff/ops/op_compare.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/model/base/display_text.hpp"
#include "core/model/base/input_error.hpp"
#include "diff/causality/causality.hpp"
#include "diff/report/evidence.hpp"

namespace gparity::diff::ops {

using json = nlohmann::json;
using model::ops::OpLog;
using model::ops::OpRecord;

std::string_view op_cause_name(OpCause c) noexcept {
  switch (c) {
    case OpCause::Origin: return "origin";
    case OpCause::Propagated: return "propagated";
    case OpCause::Received: return "received";
    case OpCause::FollowsStep: return "follows step";
    case OpCause::Input: return "input";
    case OpCause::Unknown: return "unknown";
  }
  return "origin";
}

bool is_collective(std::string_view op) noexcept {
  const bool ns = op.rfind("c10d::", 0) == 0 || op.rfind("_c10d_functional::", 0) == 0 ||
                  op.rfind("c10d_functional::", 0) == 0;
  return ns && op.find("wait_tensor") == std::string_view::npos;
}

std::string_view collective_group(const OpLog& log, const OpRecord& r) noexcept {
  return r.group != 0 ? log.str(r.group) : std::string_view(kAllRanksGroup);
}

void CollectiveInputs::record(int rank, std::int64_t step, std::string_view group, std::string_view op,
                              std::size_t sequence, bool inputs_differ) {
  members_[{step, std::string(group), std::string(op), sequence}].emplace_back(rank, inputs_differ);
}

std::vector<int> CollectiveInputs::ranks_with_differing_inputs(std::int64_t step, std::string_view group,
                                                               std::string_view op, std::size_t sequence,
                                                               int rank) const {
  std::vector<int> out;
  const auto it = members_.find({step, std::string(group), std::string(op), sequence});
  if (it == members_.end()) return out;
  for (const auto& [r, differ] : it->second) {
    if (r != rank && differ) out.push_back(r);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const StepVerdict* RankVerdict::first_divergent() const {
  for (const auto& s : steps) {
    if (s.first) return &s;
  }
  return nullptr;
}

namespace {

/// Artifact text in a report: model::display_text (controls and invalid UTF-8 as \xNN).
std::string printable(std::string_view s) {
  return model::display_text(s);
}

std::string base_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

/// Every step's slice of a rank's logs.
std::map<std::int64_t, OpSlice> step_slices(const RankLogs& r) {
  std::map<std::int64_t, OpSlice> out;
  for (const auto& log : r.logs) {
    for (const auto& s : slices_of(log)) out.emplace(s.step, s);
  }
  return out;
}

bool is_leaf(const OpSlice& s, std::uint32_t e) {
  return !s.at(e).has_children;
}

std::vector<InputCheck> input_checks(const StepVerdict& sv, std::uint32_t e) {
  const SliceAlignment& a = sv.alignment;
  const OpRecord& r = sv.eager.at(e);
  std::vector<InputCheck> out;
  for (std::uint32_t j = 0; j < r.arg_count; ++j) {
    const std::uint32_t at = a.arg_first[e] + j;
    InputCheck c;
    c.arg = j;
    c.producer = a.arg_producer[at];
    if (a.arg_value[at] == 1) {
      c.state = InputState::Equal;
      c.by_hash = true;
    } else if (a.arg_value[at] == 2) {
      c.state = InputState::Differs;
      c.by_hash = true;
    } else if (c.producer >= 0) {
      const auto s = a.eager[static_cast<std::uint32_t>(c.producer)].status;
      if (s == ValueStatus::Matched || s == ValueStatus::Unobserved) c.state = InputState::Equal;
      if (s == ValueStatus::Divergent) c.state = InputState::Differs;
    }
    out.push_back(c);
  }
  return out;
}

bool any_differs(const std::vector<InputCheck>& in) {
  return std::any_of(in.begin(), in.end(),
                     [](const InputCheck& c) { return c.state == InputState::Differs; });
}

/// Position of `e` among the collectives of its name on its group in the step (0-based).
std::size_t collective_sequence(const OpSlice& s, std::uint32_t e) {
  const std::string_view op = s.log->op_name(s.at(e));
  const std::uint32_t group = s.at(e).group;
  std::size_t n = 0;
  for (std::uint32_t i = 0; i < e; ++i) n += s.at(i).group == group && s.log->op_name(s.at(i)) == op ? 1 : 0;
  return n;
}

/// The members of `e`'s collective (its group's k-th instance of that op) whose inputs differed,
/// other than `rank`.
std::vector<int> senders(const CollectiveInputs& table, const StepVerdict& sv, std::uint32_t e, int rank) {
  const OpRecord& r = sv.eager.at(e);
  return table.ranks_with_differing_inputs(sv.step, collective_group(*sv.eager.log, r),
                                           sv.eager.log->op_name(r), collective_sequence(sv.eager, e), rank);
}

/// The record a divergence of `e` is judged at: a wait's collective (its value is the
/// collective's), else `e` itself.
std::uint32_t judged_record(const StepVerdict& sv, std::uint32_t e) {
  if (sv.eager.log->op_name(sv.eager.at(e)).find("wait_tensor") == std::string_view::npos ||
      sv.eager.at(e).arg_count == 0)
    return e;
  const std::int32_t p = sv.alignment.arg_producer[sv.alignment.arg_first[e]];
  if (p >= 0 && is_collective(sv.eager.log->op_name(sv.eager.at(static_cast<std::uint32_t>(p)))))
    return static_cast<std::uint32_t>(p);
  return e;
}

OpDivergence classify(const StepVerdict& sv, std::uint32_t e, int rank, std::int64_t diverged_before,
                      const CollectiveInputs& table) {
  OpDivergence d;
  d.record = e;
  // A wait's value is its collective's: judge the collective's inputs.
  const std::uint32_t target = judged_record(sv, e);
  if (target != e) d.collective = static_cast<std::int32_t>(target);
  d.inputs = input_checks(sv, target);
  if (any_differs(d.inputs)) {
    const bool made_here = std::any_of(d.inputs.begin(), d.inputs.end(), [](const InputCheck& c) {
      return c.state == InputState::Differs && c.producer >= 0;
    });
    if (made_here) {
      d.cause = OpCause::Propagated;
    } else if (diverged_before > 0) {
      d.cause = OpCause::FollowsStep;
      d.follows_step = diverged_before;
    } else {
      d.cause = OpCause::Input;
    }
  } else if (const std::string_view top = sv.eager.log->op_name(sv.eager.at(target)); is_collective(top)) {
    // Provisional (the k-th collective of this name on every rank); judge_op_logs judges it in
    // diff/causality's causal order over the step of every rank.
    d.from_ranks = senders(table, sv, target, rank);
    d.cause = d.from_ranks.empty() ? OpCause::Origin : OpCause::Received;
    d.collective = static_cast<std::int32_t>(target);
  } else {
    d.cause = OpCause::Origin;
  }
  return d;
}

/// The divergent ops computed from `e` (transitively, through divergent consumers); the other
/// collectives of the step received from other ranks (local inputs equal, another member's
/// differ); and the divergent leaf ops outside both whose inputs all agree (independent
/// origins). Ops consuming a received value have a differing input: propagated, never origins.
void spread(const StepVerdict& sv, OpDivergence& d, std::size_t max_listed, int rank,
            const CollectiveInputs& table) {
  const SliceAlignment& a = sv.alignment;
  std::vector<bool> seen(sv.eager.size(), false);
  // The divergent ops computed from `stack`, transitively (a collective's wait carries its value
  // even when it has no hash of its own), marked seen.
  auto carry = [&](std::vector<std::uint32_t> stack) {
    for (const auto s : stack) seen[s] = true;
    std::vector<std::uint32_t> reached;
    while (!stack.empty()) {
      const std::uint32_t u = stack.back();
      stack.pop_back();
      for (const std::uint32_t c : a.consumers_of(u)) {
        if (seen[c]) continue;
        const bool unhashed_wait =
            c != u && judged_record(sv, c) == u && a.eager[c].status == ValueStatus::Unhashed;
        if (a.eager[c].status != ValueStatus::Divergent && !unhashed_wait) continue;
        seen[c] = true;
        if (a.eager[c].status == ValueStatus::Divergent) reached.push_back(c);
        stack.push_back(c);
      }
    }
    std::sort(reached.begin(), reached.end());
    return reached;
  };
  std::vector<std::uint32_t> roots{d.record};
  if (d.collective >= 0) roots.push_back(static_cast<std::uint32_t>(d.collective));
  const auto reached = carry(roots);
  d.carried_total = reached.size();
  d.carriers.assign(reached.begin(),
                    reached.begin() + static_cast<std::ptrdiff_t>(std::min(max_listed, reached.size())));
  for (std::uint32_t o = 0; o < sv.eager.size(); ++o) {
    if (seen[o] || a.eager[o].status != ValueStatus::Divergent || !is_leaf(sv.eager, o)) continue;
    const std::uint32_t target = judged_record(sv, o);
    if (seen[target] || any_differs(input_checks(sv, target))) continue;
    if (const std::string_view op = sv.eager.log->op_name(sv.eager.at(target)); is_collective(op)) {
      if (!senders(table, sv, target, rank).empty()) {
        ++d.other_received_total;
        if (d.other_received.size() < max_listed) d.other_received.push_back(target);
        carry({target, o});  // what it reaches is propagated, never an origin
        continue;
      }
    }
    ++d.other_origin_total;
    if (d.other_origins.size() < max_listed) d.other_origins.push_back(o);
  }
}

/// The eager position of the op a divergence was judged at (a wait's collective, a collective).
std::uint32_t judged_at(const OpDivergence& d) {
  return d.collective >= 0 ? static_cast<std::uint32_t>(d.collective) : d.record;
}

/// One step of every rank in diff/causality's records: each eager op a record reading the
/// records that made its arguments in the step; an argument from before the step whose own hash
/// is missing in the compiled run is a graph input record that differs. A collective whose own
/// output has no hash (hashed before it completed) differs when its wait does.
struct CausalStep {
  std::vector<causality::RankRecords> ranks;
  std::vector<std::vector<std::size_t>> index;  // per rank (as `ranks`), per eager position: its record
  causality::Result result;
};

/// One side's process groups, as its logs list their members. An unnamed group ("default" when
/// no log lists it) is the world: every rank either side has logs of (a rank that did not record
/// the step, or has no logs on one side, makes the collective unknown, never an origin). A named
/// group no log lists has as members the ranks whose records name it (diff/causality).
causality::GroupTable group_table(const std::vector<RankVerdict>& verdicts, const std::vector<int>& world,
                                  bool eager) {
  causality::GroupTable groups;
  groups[std::string(kAllRanksGroup)] = {world, "default_pg"};
  std::set<const OpLog*> seen;
  std::set<std::string> listed;
  for (const auto& rv : verdicts) {
    for (const auto& sv : rv.steps) {
      const OpLog* log = eager ? sv.eager.log : sv.compiled.log;
      if (!seen.insert(log).second) continue;
      // The first log to list a group's members decides for its side (each reader checks its
      // own file); "default" listed with its members replaces the world.
      for (const auto& [name, ranks] : log->group_ranks) {
        std::string key(log->str(name));
        if (!listed.insert(key).second) continue;
        const bool all = key == kAllRanksGroup;
        groups[std::move(key)] = {ranks, all ? "default_pg" : ""};
      }
    }
  }
  return groups;
}

CausalStep causal_step(const std::vector<RankVerdict>& verdicts, std::int64_t step,
                       const std::vector<int>& world) {
  CausalStep cs;
  for (const auto& rv : verdicts) {
    const auto it =
        std::find_if(rv.steps.begin(), rv.steps.end(), [&](const StepVerdict& s) { return s.step == step; });
    if (it == rv.steps.end()) continue;
    const StepVerdict& sv = *it;
    const SliceAlignment& a = sv.alignment;
    const OpLog& log = *sv.eager.log;
    causality::RankRecords rr;
    rr.rank = rv.rank;
    std::vector<std::size_t> index(sv.eager.size(), 0);
    const std::string graph = "step " + std::to_string(step);
    for (std::uint32_t e = 0; e < sv.eager.size(); ++e) {
      const OpRecord& r = sv.eager.at(e);
      causality::Record rec;
      rec.graph = graph;
      for (std::uint32_t j = 0; j < r.arg_count; ++j) {
        const std::uint32_t at = a.arg_first[e] + j;
        const std::int32_t p = a.arg_producer[at];
        if (p >= 0 && static_cast<std::uint32_t>(p) < e) {
          rec.inputs.push_back(index[static_cast<std::uint32_t>(p)]);
        } else if (p < 0 && a.arg_value[at] == 2) {
          causality::Record in;
          in.graph = graph;
          in.node = "input of " + std::string(log.op_name(r)) + " #" + std::to_string(r.index);
          in.graph_input = true;
          in.differs = true;
          rec.inputs.push_back(rr.records.size());
          rr.records.push_back(std::move(in));
        }
      }
      const std::string_view op = log.op_name(r);
      const ValueStatus status = a.eager[e].status;
      rec.compared = status != ValueStatus::Unhashed;
      rec.differs = status == ValueStatus::Divergent;
      if (is_collective(op)) {
        rec.comm =
            causality::Comm{causality::Comm::Kind::Collective, std::string(collective_group(log, r)), -1};
        if (status == ValueStatus::Unhashed) {
          for (const std::uint32_t c : a.consumers_of(e)) {
            if (log.op_name(sv.eager.at(c)).find("wait_tensor") == std::string_view::npos) continue;
            if (a.eager[c].status == ValueStatus::Divergent) rec.compared = rec.differs = true;
          }
        }
      }
      if (rec.differs || rec.comm) {
        rec.op = std::string(op);
        rec.node = rec.op + " #" + std::to_string(r.index);
        rec.source = log.source_text(r);
      }
      std::sort(rec.inputs.begin(), rec.inputs.end());
      rec.inputs.erase(std::unique(rec.inputs.begin(), rec.inputs.end()), rec.inputs.end());
      index[e] = rr.records.size();
      rr.records.push_back(std::move(rec));
    }
    cs.ranks.push_back(std::move(rr));
    cs.index.push_back(std::move(index));
  }
  cs.result =
      causality::classify(cs.ranks, group_table(verdicts, world, true), group_table(verdicts, world, false));
  return cs;
}

/// A collective's divergence as the causal order judges it.
void apply_causality(const CausalStep& cs, std::size_t pos, OpDivergence& d) {
  const int rank = cs.ranks[pos].rank;
  const std::size_t rec = cs.index[pos][judged_at(d)];
  const causality::Classification* c = cs.result.find(rank, rec);
  if (c == nullptr) return;
  d.causal = c->to_json();
  d.causal_text = c->text(cs.ranks[pos].records[rec].node, rank);
  d.from_ranks = c->from_ranks;
  switch (c->cause) {
    case causality::Cause::Origin: d.cause = OpCause::Origin; break;
    case causality::Cause::Received: d.cause = OpCause::Received; break;
    case causality::Cause::Propagated: d.cause = OpCause::Propagated; break;
    case causality::Cause::Input: d.cause = OpCause::Input; break;
    case causality::Cause::Unknown: d.cause = OpCause::Unknown; break;
  }
  if (c->origin.rank >= 0 && !(c->origin.rank == rank && c->origin.record == rec)) {
    d.origin_rank = c->origin.rank;
    d.origin_op = c->origin.op;
    d.origin_source = c->origin.source;
    const auto node = c->origin.node;
    if (const auto hash = node.rfind(" #"); hash != std::string::npos) {
      try {
        d.origin_index = std::stoll(node.substr(hash + 2));
      } catch (const std::exception&) {
        d.origin_index = -1;
      }
    }
  }
}

}  // namespace

std::vector<RankVerdict> judge_op_logs(const std::vector<RankLogs>& eager,
                                       const std::vector<RankLogs>& compiled, const HashChoice& choice,
                                       std::size_t max_listed) {
  std::vector<RankVerdict> out;
  for (const auto& er : eager) {
    const auto cr =
        std::find_if(compiled.begin(), compiled.end(), [&](const RankLogs& c) { return c.rank == er.rank; });
    if (cr == compiled.end()) continue;
    RankVerdict rv;
    rv.rank = er.rank;
    const auto es = step_slices(er);
    const auto cs = step_slices(*cr);
    for (const auto& [step, slice] : es) {
      const auto it = cs.find(step);
      if (it == cs.end()) continue;
      StepVerdict sv;
      sv.step = step;
      sv.eager = slice;
      sv.compiled = it->second;
      sv.alignment = align_slices(sv.eager, sv.compiled, choice);
      for (const auto& op : sv.alignment.eager) {
        sv.divergent += op.status == ValueStatus::Divergent ? 1 : 0;
        sv.unobserved += op.status == ValueStatus::Unobserved ? 1 : 0;
        sv.weak_only += op.status == ValueStatus::WeakMatched ? 1 : 0;
        sv.unhashed += op.status == ValueStatus::Unhashed ? 1 : 0;
      }
      rv.steps.push_back(std::move(sv));
    }
    out.push_back(std::move(rv));
  }
  // Every rank's collectives first: a received divergence names the ranks whose inputs differed.
  CollectiveInputs table;
  for (const auto& rv : out) {
    for (const auto& sv : rv.steps) {
      std::map<std::pair<std::string_view, std::string_view>, std::size_t> seq;
      for (std::uint32_t e = 0; e < sv.eager.size(); ++e) {
        const std::string_view op = sv.eager.log->op_name(sv.eager.at(e));
        if (!is_collective(op)) continue;
        const std::string_view group = collective_group(*sv.eager.log, sv.eager.at(e));
        table.record(rv.rank, sv.step, group, op, seq[{group, op}]++, any_differs(input_checks(sv, e)));
      }
    }
  }
  for (auto& rv : out) {
    std::int64_t diverged = 0;
    for (auto& sv : rv.steps) {
      for (std::uint32_t e = 0; e < sv.eager.size(); ++e) {
        if (sv.alignment.eager[e].status != ValueStatus::Divergent || !is_leaf(sv.eager, e)) continue;
        OpDivergence d = classify(sv, e, rv.rank, diverged, table);
        spread(sv, d, max_listed, rv.rank, table);
        sv.first = std::move(d);
        break;
      }
      if (sv.first && diverged == 0) diverged = sv.step;
    }
  }
  // Collectives across ranks, in the causal order of the step on every rank.
  std::set<std::int64_t> cross_rank_steps;
  for (const auto& rv : out) {
    for (const auto& sv : rv.steps) {
      if (sv.first && sv.first->collective >= 0 && !any_differs(sv.first->inputs))
        cross_rank_steps.insert(sv.step);
    }
  }
  std::set<int> world_set;
  for (const auto* side : {&eager, &compiled})
    for (const auto& r : *side) world_set.insert(r.rank);
  const std::vector<int> world(world_set.begin(), world_set.end());
  for (const std::int64_t step : cross_rank_steps) {
    const CausalStep cs = causal_step(out, step, world);
    for (std::size_t pos = 0; pos < cs.ranks.size(); ++pos) {
      for (auto& rv : out) {
        if (rv.rank != cs.ranks[pos].rank) continue;
        for (auto& sv : rv.steps) {
          if (sv.step != step || !sv.first || sv.first->collective < 0 || any_differs(sv.first->inputs))
            continue;
          apply_causality(cs, pos, *sv.first);
        }
      }
    }
  }
  return out;
}

// ---- the report -----------------------------------------------------------------------------------

namespace {

struct Emitter {
  FindingConsumer& out;
  const OpCompareOptions& o;
  Severity worst = Severity::Info;

  void emit(Finding f) {
    if (f.severity == Severity::Incomplete && o.allow_incomplete) {
      // still reported; does not fail the comparison
    } else if (static_cast<int>(f.severity) > static_cast<int>(worst)) {
      worst = f.severity;
    }
    out.finding(f);
  }
};

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

/// " (group '3': ranks 2, 3)" for a collective on a named group other than the world; "".
std::string group_clause(const OpLog& log, const OpRecord& r) {
  const std::string_view name = collective_group(log, r);
  if (name == kAllRanksGroup) return {};
  const auto it = log.group_ranks.find(r.group);
  return " (group '" + printable(name) + "'" +
         (it != log.group_ranks.end() ? ": " + ranks_text(it->second) : "") + ")";
}

Finding divergence_finding(const RankVerdict& rv, const StepVerdict& sv, const OpDivergence& d,
                           const HashChoice& choice, std::size_t max_listed, bool follow_up) {
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
      msg += "origin (its inputs' values are in the compiled run, its output's is not)";
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
    msg += "; compiled counterpart(s): " + counterparts_text(sv, cps, max_listed) + " (" +
           printable(base_name(sv.compiled.log->path)) + ":" + std::to_string(c0.line) +
           (c1.line != c0.line ? "-" + std::to_string(c1.line) : "") + ", by " +
           std::string(paired_by_name(a.eager[d.record].paired_by)) + ")";
  } else {
    msg += "; no compiled counterpart found";
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

Finding step_info(const RankVerdict& rv, const StepVerdict& sv) {
  const SliceAlignment& a = sv.alignment;
  Finding f;
  f.severity = Severity::Info;
  f.kind = "op_step_compared";
  f.where.rank = rv.rank;
  f.where.step = sv.step;
  f.message = std::to_string(sv.eager.size()) + " eager ops, " + std::to_string(sv.compiled.size()) +
              " compiled; " + std::to_string(a.values_matched) + " of " + std::to_string(a.values_compared) +
              " eager values found by a strong hash, " + std::to_string(a.values_weak) +
              " weak (constant or empty tensors: no evidence), " + std::to_string(sv.divergent) +
              " divergent ops, " + std::to_string(sv.unobserved) + " unobserved, " +
              std::to_string(a.compiled_only) + " compiled ops without an eager partner" +
              (a.compiled_noise
                   ? ", " + std::to_string(a.compiled_noise) + " of DebugMode's own kernel-argument hashing"
                   : std::string());
  f.values = {{"eager_ops", sv.eager.size()},
              {"compiled_ops", sv.compiled.size()},
              {"values_compared", a.values_compared},
              {"values_matched", a.values_matched},
              {"values_weak", a.values_weak},
              {"divergent_ops", sv.divergent},
              {"unobserved_ops", sv.unobserved},
              {"weakly_matched_ops", sv.weak_only},
              {"unhashed_ops", sv.unhashed},
              {"compiled_only_ops", a.compiled_only},
              {"compiled_hash_noise_ops", a.compiled_noise}};
  return f;
}

/// Every log of a side must carry the same hash functions; returns the spec or reports why not.
std::optional<model::ops::HashSpec> side_spec(const std::vector<RankLogs>& side, const char* which,
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
        f.message = std::string(which) + ": " + printable(log.path) + " is hashed with " +
                    log.hash_spec.text() + ", " + printable(spec_path) + " with " + spec->text() +
                    ": one run, one set of hash functions";
        em.emit(f);
        return std::nullopt;
      }
    }
  }
  if (!unhashed.empty()) {
    Finding f{Severity::Error, "op_no_hashes", {}, "", json::object()};
    f.where.source = unhashed.front();
    f.message =
        std::string(which) + ": " + printable(unhashed.front()) +
        (unhashed.size() > 1 ? " and " + std::to_string(unhashed.size() - 1) + " other log(s)" : "") +
        " have no tensor hashes (record them with DebugMode.log_tensor_hashes(hash_fn=[\"hash_tensor\"], "
        "hash_inputs=True)): without values there is nothing to compare";
    f.values = {{"logs", unhashed}};
    em.emit(f);
    return std::nullopt;
  }
  return spec;
}

void damage(const std::vector<RankLogs>& side, const char* which, Emitter& em) {
  for (const auto& r : side) {
    for (const auto& log : r.logs) {
      std::size_t n = 0;
      for (const auto& i : log.issues) {
        if (n++ == 10) {
          Finding more{Severity::Incomplete, "op_log_damaged", {}, "", json::object()};
          more.where.source = log.path;
          more.where.rank = r.rank;
          more.message = std::string(which) + ": " + std::to_string(log.issues.size() - 10) +
                         " more unreadable line(s) in this log";
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
        f.message = std::string(which) + ": " + printable(i.problem) + " (this record is not compared)";
        em.emit(f);
      }
      if (log.records.empty()) {
        Finding f{Severity::Incomplete, "op_log_empty", {}, "", json::object()};
        f.where.source = log.path;
        f.where.rank = r.rank;
        f.message = std::string(which) + ": no DebugMode record in this log";
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
  for (const auto& [side, other, name, other_name] : {std::tuple{&eager, &compiled, "eager", "compiled"},
                                                      std::tuple{&compiled, &eager, "compiled", "eager"}}) {
    for (const auto& r : *side) {
      const auto it =
          std::find_if(other->begin(), other->end(), [&](const RankLogs& o) { return o.rank == r.rank; });
      if (it == other->end()) {
        Finding f{Severity::Incomplete, "op_rank_missing", {}, "", json::object()};
        f.where.rank = r.rank;
        f.message = std::string("rank ") + std::to_string(r.rank) + " has " + name + " logs but no " +
                    other_name + " logs: not compared";
        em.emit(f);
        continue;
      }
      const auto mine = steps_of(r), theirs = steps_of(*it);
      for (const auto s : mine) {
        if (theirs.contains(s)) continue;
        Finding f{Severity::Incomplete, "op_step_missing", {}, "", json::object()};
        f.where.rank = r.rank;
        f.where.step = s;
        f.message = std::string("step ") + std::to_string(s) + " is in the " + name + " logs of rank " +
                    std::to_string(r.rank) + " but not in the " + other_name + " logs: not compared";
        em.emit(f);
      }
    }
  }
}

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
    std::size_t records = 0;
    bool hashed = false;
    for (const auto& r : logs) {
      for (const auto& l : r.logs) {
        records += l.records.size();
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

}  // namespace

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
