#include <algorithm>
#include <cstdint>
#include <map>

#include "diff/collectives/collectives_internal.hpp"
#include "diff/collectives/schedule.hpp"

// The findings of the schedule analyses (schedule.hpp): order inversions across ranks and
// against a baseline, and hangs. Each names what a user must fix; --json carries the same
// structures under verdict.data (inversions, moved_across_groups, deadlocks, hang).

namespace gparity::diff::collectives {
namespace {

nlohmann::json op_json(const ScheduledCollective& c) {
  nlohmann::json j = {{"stream", c.stream},
                      {"group", c.group},
                      {"seq", c.seq},
                      {"kind", c.op.kind},
                      {"signature", c.op.signature()},
                      {"where", c.op.where},
                      {"state", c.op.state}};
  if (!c.op.site.empty()) j["site"] = c.op.site;
  if (!c.op.node.empty()) j["node"] = c.op.node;
  if (c.op.line > 0) j["line"] = c.op.line;
  return j;
}

/// "pg 3 (mesh_tp)" / "group '3'": the group as a user reads it.
std::string group_text(const ScheduledCollective& c) {
  return c.stream.starts_with("pg ") ? c.stream : "group '" + c.group + "'";
}

std::string ranks_text(const std::vector<std::int32_t>& ranks, std::size_t shown = 16) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size() && i < shown; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > shown) s += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return s;
}

void emit_schedule(FindingConsumer& out, Tally& t, Finding f) {
  t.see(f.severity);
  out.finding(f);
}

std::string edge_json_key(bool issued) {
  return issued ? "issued_behind" : "not_issued";
}

nlohmann::json edge_json(const WaitEdge& e) {
  nlohmann::json j = {{"from", e.from},
                      {"to", e.to},
                      {"waits_in", op_json(e.waits_in)},
                      {"to_state", edge_json_key(e.issued)}};
  if (e.to_blocked) j["to_blocked_in"] = op_json(e.to_blocked_in);
  if (e.issued) j["to_record"] = op_json(e.to_record);
  return j;
}

/// "rank 0 waits in X for rank 1, which issued it behind Y, where it is blocked".
std::string edge_text(const WaitEdge& e) {
  std::string s =
      rank_name(e.from) + " waits in " + e.waits_in.text() + " for " + rank_name(e.to) + ", which ";
  if (e.issued) return s + "issued it behind " + e.to_blocked_in.text() + ", where it is blocked";
  if (e.to_blocked) return s + "never issued it and is blocked in " + e.to_blocked_in.text();
  return s + "never issued it and has nothing pending";
}

void report_deadlock(const Deadlock& d, FindingConsumer& out, Tally& t) {
  std::vector<std::string> waits;
  for (const auto& e : d.cycle) waits.push_back(edge_text(e));
  std::string cause;
  std::string fix;
  std::vector<std::string> groups;
  for (const auto& e : d.cycle)
    if (std::find(groups.begin(), groups.end(), group_text(e.waits_in)) == groups.end())
      groups.push_back(group_text(e.waits_in));
  if (d.cause == Deadlock::Cause::OrderInversion) {
    std::vector<std::string> orders;
    for (std::size_t k = 0; k < d.cycle.size(); ++k) {
      const auto& into = d.cycle[(k + d.cycle.size() - 1) % d.cycle.size()];  // who waits for this rank
      const auto& mine = d.cycle[k];
      orders.push_back(
          rank_name(mine.from) + (into.issued ? " issued " : " blocks in ") + mine.waits_in.text() +
          (into.issued ? " before " + into.to_record.text() : " before reaching " + into.waits_in.text()));
    }
    cause = "an order inversion across process groups: " + join(orders, "; ");
    fix = "issue the collectives of " + join(groups, " and ") + " in one order on every rank";
  } else {
    const auto& e = d.cycle[d.skipped_edge];
    cause = "a skipped collective: " + rank_name(e.to) + " never issued " + e.waits_in.text() + " (" +
            rank_name(e.from) + " issued it and waits in it)" +
            (e.to_blocked ? " and went on to " + e.to_blocked_in.text() : "");
    fix = "make " + rank_name(e.to) + " issue " + e.waits_in.text() + " as every other member does";
    if (e.to_blocked)
      fix += " (if its program issues it later, after " + e.to_blocked_in.text() +
             ", the order is the cause: issue them in one order on every rank)";
  }
  std::string msg = "deadlock: " + join(waits, "; ") + "; back to " + rank_name(d.cycle.front().from) +
                    ". Cause: " + cause + ". Fix: " + fix;
  if (d.component.size() > d.cycle.size())
    msg += ". This cycle is one of the deadlock of ranks " + ranks_text(d.component) +
           " (each of them waits, through others, on itself)";
  if (!d.behind.empty()) msg += ". Ranks " + ranks_text(d.behind) + " wait on this deadlock";
  Finding f;
  f.severity = Severity::Divergence;
  f.kind = "collective_deadlock";
  f.where.rank = d.cycle.front().from;
  f.where.graph = d.cycle.front().waits_in.stream;
  f.where.node = d.cycle.front().waits_in.op.where;
  f.message = msg;
  nlohmann::json cycle = nlohmann::json::array();
  for (const auto& e : d.cycle) cycle.push_back(edge_json(e));
  f.values = {
      {"cause", d.cause == Deadlock::Cause::OrderInversion ? "order_inversion" : "skipped_collective"},
      {"cycle", cycle},
      {"behind", d.behind},
      {"component", d.component},
      {"fix", fix}};
  if (d.cause == Deadlock::Cause::SkippedCollective) {
    const auto& e = d.cycle[d.skipped_edge];
    f.values["skipped"] = {{"rank", e.to}, {"collective", op_json(e.waits_in)}, {"issued_by", e.from}};
  }
  t.schedule["deadlocks"].push_back(f.values);
  emit_schedule(out, t, std::move(f));
  ++t.deadlocks;
}

void report_group_wait(const GroupWait& w, FindingConsumer& out, Tally& t) {
  std::vector<std::string> states;
  std::int64_t last_completed = INT64_MAX;
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : w.members) {
    std::string s = rank_name(m.rank) + " " + m.state;
    if (m.state == "not issued" && m.last_issued >= 0)
      s += " (last issued #" + std::to_string(m.last_issued) + ")";
    states.push_back(s);
    if (m.state != "no dump") last_completed = std::min(last_completed, m.last_completed);
    members.push_back({{"rank", m.rank},
                       {"state", m.state},
                       {"last_completed", m.last_completed},
                       {"last_issued", m.last_issued}});
  }
  if (last_completed == INT64_MAX) last_completed = -1;
  const ScheduledCollective c{w.stream, w.group, w.seq, w.op};
  Finding f;
  f.severity = Severity::Warning;
  f.kind = "collective_group_stuck";
  f.where.graph = w.stream;
  f.where.node = w.op.where;
  f.message = w.stream + " is stuck at #" + std::to_string(w.seq) + " " + w.op.signature() +
              (w.op.site.empty() ? "" : " at " + w.op.site) + "; last completed on every member: " +
              (last_completed >= 0 ? "#" + std::to_string(last_completed) : "none") + "; " +
              join(states, ", ");
  f.values = {{"stream", w.stream},
              {"group", w.group},
              {"seq", w.seq},
              {"collective", op_json(c)},
              {"last_completed", last_completed},
              {"members", members}};
  t.schedule["hang"]["groups"].push_back(f.values);
  emit_schedule(out, t, std::move(f));
}

}  // namespace

void check_order_inversions(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  t.schedule["inversions"] = nlohmann::json::array();
  for (const auto& inv : order_inversions(run)) {
    const std::string ga = group_text(inv.a_first), gb = group_text(inv.b_first);
    Finding f;
    f.severity = Severity::Divergence;
    f.kind = "collective_order_inversion";
    f.where.rank = inv.first_rank;
    f.where.graph = inv.source;
    f.where.node = inv.a_first.op.where;
    f.where.line = inv.a_first.op.line;
    f.message =
        (inv.source == "Flight Recorder" ? "" : inv.source + ": ") + rank_name(inv.first_rank) + " issues " +
        inv.a_first.text() + " before " + inv.b_first.text() + "; " + rank_name(inv.second_rank) +
        " issues " + inv.b_second.text() + " before " + inv.a_second.text() +
        ": each can block in its first while the other waits in it (a deadlock under NCCL)" +
        (inv.count > 1
             ? "; " + std::to_string(inv.count) + " collectives of " + ga + " are inverted against " + gb
             : "") +
        ". Fix: issue the collectives of " + ga + " and " + gb + " in one order on every rank";
    f.values = {{"source", inv.source},
                {"first_rank", inv.first_rank},
                {"second_rank", inv.second_rank},
                {"first", {op_json(inv.a_first), op_json(inv.b_first)}},
                {"second", {op_json(inv.b_second), op_json(inv.a_second)}},
                {"count", inv.count}};
    t.schedule["inversions"].push_back(f.values);
    emit_schedule(out, t, std::move(f));
    ++t.inversions;
  }
  Check c;
  c.name = "one order across process groups";
  c.outcome = t.inversions == 0 ? Check::Outcome::Pass : Check::Outcome::Fail;
  c.message = std::to_string(t.inversions) + " inversions";
  out.check(c);
}

void check_order_moves(const CollectiveRun& base, const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  t.schedule["moved_across_groups"] = nlohmann::json::array();
  for (const auto& inv : order_moves(base, run)) {
    // The candidate's two collectives in its order, and the baseline's.
    const auto& c1 = inv.candidate_first ? inv.a_first : inv.b_second;
    const auto& c2 = inv.candidate_first ? inv.b_first : inv.a_second;
    const auto& b1 = inv.candidate_first ? inv.b_second : inv.a_first;
    const auto& b2 = inv.candidate_first ? inv.a_second : inv.b_first;
    Finding f;
    f.severity = Severity::Divergence;
    f.kind = "collective_moved_across_group";
    f.where.rank = inv.first_rank;
    f.where.graph = inv.source;
    f.where.node = c1.op.where;
    f.where.line = c1.op.line;
    f.message = (inv.source == "Flight Recorder" ? "" : inv.source + ": ") + rank_name(inv.first_rank) +
                ": the candidate issues " + c1.text() + " before " + c2.text() + "; the baseline issues " +
                b1.text() + " before " + b2.text() + ": a collective moved across another group's" +
                (inv.count > 1 ? " (" + std::to_string(inv.count) + " collectives of " +
                                     group_text(inv.a_first) + " against " + group_text(inv.b_first) + ")"
                               : "") +
                ". Every rank must move it alike, or the ranks' orders invert";
    f.values = {{"source", inv.source},
                {"rank", inv.first_rank},
                {"candidate", {op_json(c1), op_json(c2)}},
                {"baseline", {op_json(b1), op_json(b2)}},
                {"count", inv.count}};
    t.schedule["moved_across_groups"].push_back(f.values);
    emit_schedule(out, t, std::move(f));
    ++t.moved;
  }
}

void check_hang(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  const auto h = analyze_hang(run);
  t.schedule["deadlocks"] = nlohmann::json::array();
  t.schedule["hang"] = {{"groups", nlohmann::json::array()},
                        {"never_arrived", nlohmann::json::array()},
                        {"missing_dumps", h.missing_dumps},
                        {"waits", nlohmann::json::array()}};
  for (const auto& e : h.waits) t.schedule["hang"]["waits"].push_back(edge_json(e));
  if (!h.missing_dumps.empty()) {
    Finding f;
    f.severity = Severity::Incomplete;
    f.kind = "collective_dump_missing";
    f.where.rank = h.missing_dumps.front();
    f.message = "no Flight Recorder dump of rank" + std::string(h.missing_dumps.size() > 1 ? "s " : " ") +
                ranks_text(h.missing_dumps) + ", named by the process groups of the dumps given: what " +
                (h.missing_dumps.size() > 1 ? "they" : "it") +
                " issued is unknown, not assumed. Give every rank's dump (PyTorch writes one per rank: "
                "TORCH_FR_DUMP_TEMP_FILE + rank)";
    f.values = {{"ranks", h.missing_dumps}};
    emit_schedule(out, t, std::move(f));
  }
  for (const auto& w : h.groups) report_group_wait(w, out, t);
  for (const auto& d : h.deadlocks) report_deadlock(d, out, t);
  for (const auto& e : h.never_arrived) {
    std::vector<std::int32_t> waiting;
    for (const auto& w : h.waits)
      if (w.to == e.to && w.waits_in.group == e.waits_in.group && w.waits_in.seq == e.waits_in.seq)
        waiting.push_back(w.from);
    Finding f;
    f.severity = Severity::Divergence;
    f.kind = "collective_never_arrived";
    f.where.rank = e.to;
    f.where.graph = e.waits_in.stream;
    f.where.node = e.waits_in.op.where;
    f.message = rank_name(e.to) + " never issued " + e.waits_in.text() + " (" + e.waits_in.op.signature() +
                ") that rank" + (waiting.size() > 1 ? "s " : " ") + ranks_text(waiting) + " wait" +
                (waiting.size() > 1 ? "" : "s") +
                " in, and has nothing pending: it skipped the collective or " +
                "stopped before it. Fix: make " + rank_name(e.to) + " issue it as every other member does";
    f.values = {{"rank", e.to}, {"collective", op_json(e.waits_in)}, {"waiting", waiting}};
    t.schedule["hang"]["never_arrived"].push_back(f.values);
    emit_schedule(out, t, std::move(f));
    ++t.never_arrived;
  }
  if (!h.hung()) return;
  Check c;
  c.name = "no hang";
  c.outcome = h.deadlocks.empty() && h.never_arrived.empty() ? Check::Outcome::Pass : Check::Outcome::Fail;
  c.message = std::to_string(h.waits.size()) + " waits, " + std::to_string(h.deadlocks.size()) + " deadlocks";
  out.check(c);
}

}  // namespace gparity::diff::collectives
