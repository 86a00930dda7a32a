// Op-level verdicts (op_compare.hpp): each rank's first divergent eager op per step, its cause
// judged on the rank (origin, propagated, follows step, input) and, for a collective, across
// ranks in diff/causality's causal order of the step, with the collective's process group.

#include <algorithm>
#include <set>

#include "diff/causality/causality.hpp"
#include "diff/ops/op_compare.hpp"
#include "diff/ops/op_cut.hpp"

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

void CollectiveInputs::record_unrecorded(int rank, std::int64_t step, std::string_view group,
                                         std::string_view op, std::size_t sequence) {
  unrecorded_[{step, std::string(group), std::string(op), sequence}].push_back(rank);
}

bool CollectiveInputs::has_unrecorded_member(std::int64_t step, std::string_view group, std::string_view op,
                                             std::size_t sequence) const {
  return unrecorded_.contains({step, std::string(group), std::string(op), sequence});
}

const StepVerdict* RankVerdict::first_divergent() const {
  for (const auto& s : steps) {
    if (s.first) return &s;
  }
  return nullptr;
}

const StepVerdict* RankVerdict::first_cut() const {
  for (const auto& s : steps) {
    if (!s.cuts.empty()) return &s;
  }
  return nullptr;
}

namespace {

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
      const EagerOp& p = a.eager[static_cast<std::uint32_t>(c.producer)];
      const auto s = p.status;
      // A value the compiled run never wrote (op_align.hpp, step 4) is no evidence either way.
      if (s == ValueStatus::Matched || (s == ValueStatus::Unobserved && !p.never_written))
        c.state = InputState::Equal;
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

/// Whether a member of `e`'s collective did not record it (its compiled records stop before it).
bool member_unrecorded(const CollectiveInputs& table, const StepVerdict& sv, std::uint32_t e) {
  const OpRecord& r = sv.eager.at(e);
  return table.has_unrecorded_member(sv.step, collective_group(*sv.eager.log, r), sv.eager.log->op_name(r),
                                     collective_sequence(sv.eager, e));
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
    d.cause = !d.from_ranks.empty()                  ? OpCause::Received
              : member_unrecorded(table, sv, target) ? OpCause::Unknown
                                                     : OpCause::Origin;
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
        // A value the compiled run never wrote passes the divergence on to what reads it.
        if (a.eager[c].status != ValueStatus::Divergent && !unhashed_wait && !a.eager[c].never_written)
          continue;
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
      if (member_unrecorded(table, sv, target)) {
        carry({target, o});  // a member did not record it: unknown, never an origin
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
    // Where the compiled records of the step stop, the rank's records end: a collective past it
    // is one this member did not record (unknown), never one whose inputs were equal.
    const std::uint32_t end = detail::compiled_end(sv);
    for (std::uint32_t e = 0; e < end; ++e) {
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
      rec.compared = status != ValueStatus::Unhashed && status != ValueStatus::NotRecorded;
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
  if (c->through) {
    d.through_op = c->through->op;
    d.through_source = c->through->source;
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
  const detail::SideSteps eager_steps = detail::side_steps(eager),
                          compiled_steps = detail::side_steps(compiled);
  const detail::SideWords words = detail::side_words(eager, compiled);
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
      detail::judge_cuts(sv, rv.rank, choice, eager_steps, compiled_steps, words);
      for (const auto& op : sv.alignment.eager) {
        sv.divergent += op.status == ValueStatus::Divergent ? 1 : 0;
        sv.unobserved += op.status == ValueStatus::Unobserved ? 1 : 0;
        sv.weak_only += op.status == ValueStatus::WeakMatched ? 1 : 0;
        sv.unhashed += op.status == ValueStatus::Unhashed ? 1 : 0;
        sv.not_recorded += op.status == ValueStatus::NotRecorded ? 1 : 0;
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
      const std::uint32_t end = detail::compiled_end(sv);
      for (std::uint32_t e = 0; e < sv.eager.size(); ++e) {
        const std::string_view op = sv.eager.log->op_name(sv.eager.at(e));
        if (!is_collective(op)) continue;
        const std::string_view group = collective_group(*sv.eager.log, sv.eager.at(e));
        if (e >= end) {
          table.record_unrecorded(rv.rank, sv.step, group, op, seq[{group, op}]++);
        } else {
          table.record(rv.rank, sv.step, group, op, seq[{group, op}]++, any_differs(input_checks(sv, e)));
        }
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

}  // namespace gparity::diff::ops
