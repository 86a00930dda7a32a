#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include "diff/collectives/collectives_internal.hpp"
#include "diff/graphs/trace_facts.hpp"

namespace gparity::diff::collectives {
namespace {

/// Leading entries of a Flight Recorder ring that the other rank no longer holds: both windows
/// start at the same collective_seq_id.
std::pair<std::size_t, std::size_t> common_start(const CollectiveStream& a, const CollectiveStream& b) {
  if (a.ops.empty() || b.ops.empty() || a.ops[0].seq <= 0 || b.ops[0].seq <= 0) return {0, 0};
  std::size_t i = 0, j = 0;
  while (i < a.ops.size() && a.ops[i].seq < b.ops[0].seq) ++i;
  while (j < b.ops.size() && b.ops[j].seq < a.ops[0].seq) ++j;
  return {i, j};
}

bool is_flight_recorder_stream(const CollectiveStream& s) {
  return s.name.starts_with("pg ");
}

Finding make_finding(Severity sev, std::string kind, std::int32_t rank, const std::string& stream,
                     std::string message) {
  Finding f;
  f.severity = sev;
  f.kind = std::move(kind);
  f.where.rank = rank;
  f.where.graph = stream;
  f.message = std::move(message);
  return f;
}

/// The first place where `other` departs from `ref`; false when it does.
bool check_rank_pair(const CollectiveStream& ref, std::int32_t ref_rank, const CollectiveStream& other,
                     std::int32_t rank, FindingConsumer& out, Tally& t) {
  auto [i, j] = common_start(ref, other);
  if (i > 0 || j > 0) {
    Finding f =
        make_finding(Severity::Warning, "collective_window", rank, ref.name,
                     "the Flight Recorder rings start at different collectives (" + rank_name(ref_rank) +
                         " drops " + std::to_string(i) + ", " + rank_name(rank) + " drops " +
                         std::to_string(j) + "); only the common window is compared");
    out.finding(f);
    t.see(f.severity);
  }
  for (; i < ref.ops.size() && j < other.ops.size(); ++i, ++j) {
    const auto sa = ref.ops[i].signature(), sb = other.ops[j].signature();
    if (sa == sb) continue;
    if (rooted_records_match(ref.ops[i], other.ops[j])) {
      ++t.rooted;
      continue;
    }
    Finding f = make_finding(Severity::Divergence, "collective_rank_mismatch", rank, ref.name,
                             rank_name(rank) + " departs from " + rank_name(ref_rank) + " at collective #" +
                                 std::to_string(j + 1) + " of " + ref.name + ": " + sb + " where " +
                                 rank_name(ref_rank) + " issues " + sa);
    f.where.node = other.ops[j].where;
    f.where.line = other.ops[j].line;
    f.values = {
        {"position", j + 1}, {"reference_rank", ref_rank},          {"reference", sa},
        {"this", sb},        {"reference_where", ref.ops[i].where}, {"this_where", other.ops[j].where}};
    out.finding(f);
    t.see(f.severity);
    ++t.rank_mismatches;
    return false;
  }
  const std::size_t left_ref = ref.ops.size() - i, left_other = other.ops.size() - j;
  if (left_ref == left_other) return true;
  const bool longer = left_other > left_ref;
  const auto& extra = longer ? other.ops[j] : ref.ops[i];
  Finding f = make_finding(Severity::Divergence, "collective_rank_mismatch", rank, ref.name,
                           rank_name(rank) + " issues " + std::to_string(other.ops.size()) +
                               " collectives in " + ref.name + ", " + rank_name(ref_rank) + " " +
                               std::to_string(ref.ops.size()) + "; the first one only " +
                               rank_name(longer ? rank : ref_rank) + " issues: " + extra.signature());
  f.where.node = extra.where;
  f.values = {
      {"reference_rank", ref_rank}, {"reference_count", ref.ops.size()}, {"this_count", other.ops.size()}};
  out.finding(f);
  t.see(f.severity);
  ++t.rank_mismatches;
  return false;
}

/// What a graph collective and a Flight Recorder entry have in common: the op family
/// (all_gather_into_tensor ~ _all_gather_base) and the first input's sizes.
bool graph_op_ran_as(const CollectiveOp& g, const CollectiveOp& fr) {
  if (collective_family(g.kind) != collective_family(fr.kind)) return false;
  if (g.input_shapes.empty() || fr.input_shapes.empty()) return true;
  const auto& shape = g.input_shapes[0];
  const bool symbolic = std::any_of(shape.begin(), shape.end(),
                                    [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
  return symbolic || shape == "?" || shape == fr.input_shapes[0];
}

std::string positions_text(const std::vector<std::size_t>& p) {
  std::string s;
  for (auto x : p) s += (s.empty() ? "#" : " #") + std::to_string(x + 1);
  return s;
}

void compare_stream(const CollectiveStream& a, const CollectiveStream& b, std::int32_t rank,
                    FindingConsumer& out, Tally& t) {
  const auto d = diff_sequences(a.ops, b.ops);
  for (const auto& r : d.reorderings) {
    std::vector<std::string> sigs;
    for (auto x : r.a) sigs.push_back(a.ops[x].signature());
    // Long blocks (one collective moved far) are summarized; values keep the whole permutation.
    const std::string text =
        r.a.size() <= 12
            ? "baseline collectives " + positions_text(r.a) + " of " + a.name + " come in the order (" +
                  r.permutation() + ") in the candidate, at " + positions_text(r.b)
            : "baseline collectives #" + std::to_string(r.a.front() + 1) + "..#" +
                  std::to_string(r.a.back() + 1) + " of " + a.name + " (" + std::to_string(r.a.size()) +
                  ") come in another order in the candidate";
    Finding f = make_finding(Severity::Divergence, "collective_reordered", rank, a.name,
                             text + "; first: " + sigs.front());
    f.where.node = b.ops[r.b.front()].where;
    std::vector<std::size_t> pa, pb;
    for (auto x : r.a) pa.push_back(x + 1);
    for (auto x : r.b) pb.push_back(x + 1);
    f.values = {{"baseline_positions", pa},
                {"candidate_positions", pb},
                {"permutation", r.permutation()},
                {"signatures", sigs}};
    out.finding(f);
    t.see(f.severity);
    ++t.reordered;
  }
  for (const auto& p : d.changed) {
    const auto sa = a.ops[p.a].signature(), sb = b.ops[p.b].signature();
    Finding f = make_finding(Severity::Divergence, "collective_changed", rank, a.name,
                             "collective #" + std::to_string(p.a + 1) + " of " + a.name + ": " + sa + " -> " +
                                 sb + (p.a == p.b ? "" : " (candidate #" + std::to_string(p.b + 1) + ")"));
    f.where.node = b.ops[p.b].where;
    f.where.line = b.ops[p.b].line;
    f.values = {
        {"baseline_position", p.a + 1}, {"candidate_position", p.b + 1}, {"baseline", sa}, {"candidate", sb}};
    out.finding(f);
    t.see(f.severity);
    ++t.changed;
  }
  for (auto x : d.removed) {
    Finding f = make_finding(Severity::Divergence, "collective_removed", rank, a.name,
                             "baseline collective #" + std::to_string(x + 1) + " of " + a.name +
                                 " is not in the candidate: " + a.ops[x].signature());
    f.where.node = a.ops[x].where;
    f.values = {{"baseline_position", x + 1}, {"baseline", a.ops[x].signature()}};
    out.finding(f);
    t.see(f.severity);
    ++t.removed;
  }
  for (auto x : d.added) {
    Finding f = make_finding(Severity::Divergence, "collective_added", rank, a.name,
                             "candidate collective #" + std::to_string(x + 1) + " of " + a.name +
                                 " is not in the baseline: " + b.ops[x].signature());
    f.where.node = b.ops[x].where;
    f.where.line = b.ops[x].line;
    f.values = {{"candidate_position", x + 1}, {"candidate", b.ops[x].signature()}};
    out.finding(f);
    t.see(f.severity);
    ++t.added;
  }
  Check c;
  c.name = "baseline: " + a.name;
  c.rank = rank;
  c.outcome = d.identical() ? Check::Outcome::Pass : Check::Outcome::Fail;
  c.message = std::to_string(a.ops.size()) + " vs " + std::to_string(b.ops.size()) + " collectives";
  out.check(c);
}

}  // namespace

void check_across_ranks(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  std::vector<std::string> names;
  for (const auto& rc : run.ranks)
    for (const auto& s : rc.streams)
      if (std::find(names.begin(), names.end(), s.name) == names.end()) names.push_back(s.name);
  t.streams = names.size();
  for (const auto& name : names) {
    std::vector<std::pair<std::int32_t, const CollectiveStream*>> holders;
    std::vector<std::int64_t> expected;
    for (const auto& rc : run.ranks) {
      if (const auto* s = rc.find(name)) {
        holders.emplace_back(rc.rank, s);
        for (auto r : s->ranks)
          if (std::find(expected.begin(), expected.end(), r) == expected.end()) expected.push_back(r);
      }
    }
    if (expected.empty())
      for (const auto& rc : run.ranks) expected.push_back(rc.rank);
    bool ok = true;
    for (auto r : expected) {
      const auto* rc = run.rank(static_cast<std::int32_t>(r));
      if (rc == nullptr || rc->find(name) != nullptr) continue;
      Finding f =
          make_finding(Severity::Divergence, "collective_stream_missing", static_cast<std::int32_t>(r), name,
                       rank_name(static_cast<std::int32_t>(r)) + " has no " + name + " while " +
                           rank_name(holders.front().first) + " issues " +
                           std::to_string(holders.front().second->ops.size()) + " collectives in it");
      out.finding(f);
      t.see(f.severity);
      ++t.rank_mismatches;
      ok = false;
    }
    // Point-to-point ops differ by design between ranks (send here, recv there): check_p2p pairs them.
    const auto collective_only = [](const CollectiveStream& s) {
      CollectiveStream c = s;
      std::erase_if(c.ops, [](const CollectiveOp& o) { return o.p2p; });
      return c;
    };
    const CollectiveStream ref = collective_only(*holders[0].second);
    for (std::size_t k = 1; k < holders.size(); ++k)
      ok = check_rank_pair(ref, holders[0].first, collective_only(*holders[k].second), holders[k].first, out,
                           t) &&
           ok;
    Check c;
    c.name = "ranks agree: " + name;
    c.outcome = ok ? Check::Outcome::Pass : Check::Outcome::Fail;
    c.message = std::to_string(holders.size()) + " ranks, " +
                std::to_string(holders.front().second->ops.size()) + " collectives on " +
                rank_name(holders.front().first);
    out.check(c);
  }
}

/// Point-to-point pairs as fr_trace matches them: the k-th send from a to b in a group pairs with
/// the k-th recv on b from a; sizes and dtypes must agree; an op without its partner is named.
void check_p2p(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  struct Side {
    std::int32_t rank;
    const CollectiveOp* op;
    std::string stream;
  };
  std::map<std::tuple<std::string, std::int64_t, std::int64_t>,
           std::pair<std::vector<Side>, std::vector<Side>>>
      pairs;
  for (const auto& rc : run.ranks)
    for (const auto& s : rc.streams)
      for (const auto& op : s.ops) {
        if (!op.p2p || op.src < 0 || op.dst < 0) continue;
        auto& slot = pairs[{op.group, op.src, op.dst}];
        (op.kind == "send" ? slot.first : slot.second).push_back({rc.rank, &op, s.name});
      }
  const auto tensor = [](const CollectiveOp& o) {
    return !o.input_shapes.empty()
               ? o.input_shapes[0] + " " + (o.input_dtypes.empty() ? "?" : o.input_dtypes[0])
               : (!o.output_shapes.empty() ? o.output_shapes[0] : "?");
  };
  for (const auto& [key, sr] : pairs) {
    const auto& [group, src, dst] = key;
    const auto& [sends, recvs] = sr;
    const std::size_t n = std::min(sends.size(), recvs.size());
    for (std::size_t k = 0; k < n; ++k) {
      ++t.p2p_pairs;
      if (tensor(*sends[k].op) == tensor(*recvs[k].op)) continue;
      Finding f =
          make_finding(Severity::Divergence, "collective_p2p_mismatch", recvs[k].rank, recvs[k].stream,
                       "send #" + std::to_string(k + 1) + " " + std::to_string(src) + "->" +
                           std::to_string(dst) + " in group '" + group + "' sends " + tensor(*sends[k].op) +
                           " (" + rank_name(sends[k].rank) + ", " + sends[k].op->where + ") but " +
                           rank_name(recvs[k].rank) + " receives " + tensor(*recvs[k].op));
      f.where.node = recvs[k].op->where;
      out.finding(f);
      t.see(f.severity);
      ++t.rank_mismatches;
    }
    const auto& rest = sends.size() > n ? sends : recvs;
    for (std::size_t k = n; k < rest.size(); ++k) {
      const bool send = &rest == &sends;
      Finding f = make_finding(Severity::Divergence, "collective_p2p_unmatched", rest[k].rank, rest[k].stream,
                               std::string(send ? "send" : "recv") + " #" + std::to_string(k + 1) + " " +
                                   std::to_string(src) + "->" + std::to_string(dst) + " in group '" + group +
                                   "' on " + rank_name(rest[k].rank) + " has no matching " +
                                   (send ? "recv" : "send") + " (" + rest[k].op->where + ")");
      f.where.node = rest[k].op->where;
      out.finding(f);
      t.see(f.severity);
      ++t.rank_mismatches;
    }
  }
}

/// Flight Recorder entries not completed when the dump was taken (fr_trace's scheduled /
/// started states): a collective some rank was still in, the first place to look for a hang.
void check_states(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  for (const auto& rc : run.ranks) {
    for (const auto& s : rc.streams) {
      std::size_t scheduled = 0, started = 0;
      const CollectiveOp* first = nullptr;
      for (const auto& op : s.ops) {
        if (op.state.empty() || op.state == "completed") continue;
        (op.state == "started" ? started : scheduled)++;
        if (first == nullptr) first = &op;
      }
      if (first == nullptr) continue;
      Finding f =
          make_finding(Severity::Warning, "collective_not_completed", rc.rank, s.name,
                       rank_name(rc.rank) + ": " + std::to_string(started) + " started and " +
                           std::to_string(scheduled) + " scheduled collectives of " + s.name +
                           " had not completed when the dump was taken; first: " + first->signature() + " (" +
                           first->state + ", " + first->where + ")");
      f.where.node = first->where;
      f.values = {{"started", started}, {"scheduled", scheduled}, {"first_state", first->state}};
      out.finding(f);
      t.see(f.severity);
      t.unfinished += started + scheduled;
    }
  }
}

/// Each rank's graph collectives (the inductor post-grad graphs: what ran) against the same
/// rank's Flight Recorder streams of the same process group: every graph collective must be
/// found, in order, with its kind and sizes.
void cross_check_graphs(const CollectiveRun& run, FindingConsumer& out, Tally& t) {
  for (const auto& rc : run.ranks) {
    std::map<std::string, const CollectiveStream*> fr_by_group;
    for (const auto& s : rc.streams)
      if (is_flight_recorder_stream(s) && !s.ops.empty()) fr_by_group[s.ops.front().group] = &s;
    if (fr_by_group.empty()) continue;
    for (const auto& s : rc.streams) {
      if (is_flight_recorder_stream(s) || s.name.find("inductor_post_grad_graph") == std::string::npos)
        continue;
      std::map<std::string, std::vector<const CollectiveOp*>> by_group;
      for (const auto& op : s.ops)
        if (op.kind != "wait_tensor" && !op.group.empty()) by_group[op.group].push_back(&op);
      bool ok = true;
      for (const auto& [group, ops] : by_group) {
        const auto it = fr_by_group.find(group);
        if (it == fr_by_group.end()) {
          Finding f =
              make_finding(Severity::Divergence, "collective_graph_group_not_recorded", rc.rank, s.name,
                           s.name + ": process group '" + group + "' of " + std::to_string(ops.size()) +
                               " graph collectives has no Flight Recorder entries on " + rank_name(rc.rank));
          f.where.node = ops.front()->where;
          out.finding(f);
          t.see(f.severity);
          ++t.graph_mismatches;
          ok = false;
          continue;
        }
        const auto& fr = it->second->ops;
        std::size_t p = 0;
        for (std::size_t k = 0; k < ops.size(); ++k) {
          while (p < fr.size() && !graph_op_ran_as(*ops[k], fr[p])) ++p;
          if (p < fr.size()) {
            ++p;
            continue;
          }
          Finding f =
              make_finding(Severity::Divergence, "collective_graph_not_run", rc.rank, s.name,
                           s.name + ": graph collective " + ops[k]->where + " (" + ops[k]->signature() +
                               ", group '" + group + "') is not in " + it->second->name +
                               " after the graph's previous collectives: the graph and what ran differ");
          f.where.node = ops[k]->where;
          f.where.line = ops[k]->line;
          f.values = {{"graph_position", k + 1}, {"stream", it->second->name}};
          out.finding(f);
          t.see(f.severity);
          ++t.graph_mismatches;
          ok = false;
          break;
        }
      }
      Check c;
      c.name = "graph vs Flight Recorder: " + s.name;
      c.rank = rc.rank;
      c.outcome = ok ? Check::Outcome::Pass : Check::Outcome::Fail;
      c.message = std::to_string(s.ops.size()) + " graph collectives";
      out.check(c);
      ++t.graph_checked;
    }
  }
}

void check_against_baseline(const CollectiveRun& base, const CollectiveRun& run, FindingConsumer& out,
                            Tally& t) {
  for (const auto& rb : base.ranks) {
    const auto* rc = run.rank(rb.rank);
    if (rc == nullptr) {
      Finding f = make_finding(Severity::Warning, "collective_rank_not_compared", rb.rank, "",
                               rank_name(rb.rank) + " is in the baseline only: not compared");
      out.finding(f);
      t.see(f.severity);
      continue;
    }
    // A run without graphs (eager) or without dumps has nothing of that source to compare.
    const auto has_source = [](const RankCollectives& r, bool fr) {
      return std::any_of(r.streams.begin(), r.streams.end(),
                         [&](const CollectiveStream& x) { return is_flight_recorder_stream(x) == fr; });
    };
    const auto one_sided = [&](const CollectiveStream& s, const RankCollectives& other, const char* side) {
      if (has_source(other, is_flight_recorder_stream(s))) return false;
      Finding f = make_finding(Severity::Info, "collective_stream_not_compared", rb.rank, s.name,
                               s.name + ": the " + side + " has no " +
                                   (is_flight_recorder_stream(s) ? "Flight Recorder dump" : "graphs") +
                                   " for this rank; not compared");
      out.finding(f);
      return true;
    };
    for (const auto& s : rb.streams) {
      if (const auto* c = rc->find(s.name)) {
        compare_stream(s, *c, rb.rank, out, t);
        continue;
      }
      if (one_sided(s, *rc, "candidate")) continue;
      Finding f = make_finding(
          Severity::Divergence, "collective_stream_removed", rb.rank, s.name,
          s.name + " (" + std::to_string(s.ops.size()) + " collectives) is in the baseline only");
      out.finding(f);
      t.see(f.severity);
      ++t.removed;
    }
    for (const auto& s : rc->streams) {
      if (rb.find(s.name) != nullptr || one_sided(s, rb, "baseline")) continue;
      Finding f = make_finding(
          Severity::Divergence, "collective_stream_added", rb.rank, s.name,
          s.name + " (" + std::to_string(s.ops.size()) + " collectives) is in the candidate only");
      out.finding(f);
      t.see(f.severity);
      ++t.added;
    }
  }
  for (const auto& rc : run.ranks) {
    if (base.rank(rc.rank) != nullptr) continue;
    Finding f = make_finding(Severity::Warning, "collective_rank_not_compared", rc.rank, "",
                             rank_name(rc.rank) + " is in the candidate only: not compared");
    out.finding(f);
    t.see(f.severity);
  }
}

}  // namespace gparity::diff::collectives
