#include "diff/collectives/schedule.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

// Order inversions across process groups (schedule.hpp). Per pair of groups (A, B) and per
// participant, each collective a of A gets f(a): the last B collective_seq_id the participant
// issued before a. Two participants order a and some b of B differently exactly when b lies in
// (f_lo(a), f_hi(a)] and both hold b; one pass over each participant's A and B collectives
// finds every inverted a, so 256 ranks of 2,000 entries cost a few million steps, not the
// pairwise comparison of every two ranks.

namespace gparity::diff {
namespace {

struct Token {
  std::uint32_t group = 0;
  std::int64_t seq = 0;
  const CollectiveOp* op = nullptr;
  const CollectiveStream* stream = nullptr;
};

struct Participant {
  std::int32_t rank = 0;
  bool candidate = false;     // order_moves: the candidate's side of the rank
  std::vector<Token> tokens;  // issue order; per group, seq strictly increasing
};

class GroupIds {
 public:
  std::uint32_t id(const std::string& name) {
    return ids_.emplace(name, static_cast<std::uint32_t>(names_.size())).second
               ? (names_.push_back(name), static_cast<std::uint32_t>(names_.size() - 1))
               : ids_.at(name);
  }
  [[nodiscard]] const std::string& name(std::uint32_t id) const { return names_[id]; }

 private:
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<std::string> names_;
};

ScheduledCollective scheduled_token(const Token& t, const GroupIds& ids) {
  return {t.stream->name, ids.name(t.group), t.seq, *t.op};
}

/// The tokens of one group of a participant, in seq order (binary-searchable).
struct GroupTokens {
  std::vector<const Token*> tokens;
  [[nodiscard]] const Token* find(std::int64_t seq) const {
    const auto it = std::lower_bound(tokens.begin(), tokens.end(), seq,
                                     [](const Token* t, std::int64_t s) { return t->seq < s; });
    return it != tokens.end() && (*it)->seq == seq ? *it : nullptr;
  }
};

struct Extreme {
  std::int64_t lo = 0, hi = 0;
  std::size_t p_lo = 0, p_hi = 0;
  bool set = false;
};

/// Inversions of groups a and b among `ps` (indices into `all`).
void inversions_of_pair(std::uint32_t a, std::uint32_t b, const std::vector<const Participant*>& ps,
                        const GroupIds& ids, const std::string& source, std::vector<OrderInversion>& out) {
  std::vector<GroupTokens> as(ps.size()), bs(ps.size());
  std::int64_t min_a = INT64_MAX, max_a = INT64_MIN;
  for (std::size_t p = 0; p < ps.size(); ++p) {
    for (const auto& t : ps[p]->tokens) {
      if (t.group == a) {
        as[p].tokens.push_back(&t);
        min_a = std::min(min_a, t.seq);
        max_a = std::max(max_a, t.seq);
      } else if (t.group == b) {
        bs[p].tokens.push_back(&t);
      }
    }
  }
  // Sequence numbers are input: the span is taken in unsigned arithmetic, which cannot overflow.
  if (min_a > max_a || static_cast<std::uint64_t>(max_a) - static_cast<std::uint64_t>(min_a) > 100'000'000ULL)
    return;
  std::vector<Extreme> f(static_cast<std::size_t>(max_a - min_a + 1));
  for (std::size_t p = 0; p < ps.size(); ++p) {
    if (as[p].tokens.empty() || bs[p].tokens.empty()) continue;
    std::int64_t last_b = bs[p].tokens.front()->seq - 1;  // below the ring: nothing both can hold
    for (const auto& t : ps[p]->tokens) {
      if (t.group == b) last_b = t.seq;
      if (t.group != a) continue;
      auto& e = f[static_cast<std::size_t>(t.seq - min_a)];
      if (!e.set || last_b < e.lo) e.lo = last_b, e.p_lo = p;
      if (!e.set || last_b > e.hi) e.hi = last_b, e.p_hi = p;
      e.set = true;
    }
  }
  OrderInversion first;
  std::size_t count = 0;
  for (std::size_t k = 0; k < f.size(); ++k) {
    const auto& e = f[k];
    if (!e.set || e.lo >= e.hi) continue;
    // The first b after a on p_lo that p_hi issued before a (both must hold it).
    const auto& lo_b = bs[e.p_lo].tokens;
    auto it = std::upper_bound(lo_b.begin(), lo_b.end(), e.lo,
                               [](std::int64_t s, const Token* t) { return s < t->seq; });
    const Token* b_lo = nullptr;
    const Token* b_hi = nullptr;
    for (int tries = 0; it != lo_b.end() && (*it)->seq <= e.hi && tries < 64; ++it, ++tries) {
      if (const Token* other = bs[e.p_hi].find((*it)->seq)) {
        b_lo = *it;
        b_hi = other;
        break;
      }
    }
    if (b_lo == nullptr) continue;
    if (count++ > 0) continue;
    const std::int64_t seq_a = min_a + static_cast<std::int64_t>(k);
    first.source = source;
    first.first_rank = ps[e.p_lo]->rank;
    first.second_rank = ps[e.p_hi]->rank;
    first.candidate_first = ps[e.p_lo]->candidate;
    first.a_first = scheduled_token(*as[e.p_lo].find(seq_a), ids);
    first.b_first = scheduled_token(*b_lo, ids);
    first.a_second = scheduled_token(*as[e.p_hi].find(seq_a), ids);
    first.b_second = scheduled_token(*b_hi, ids);
  }
  if (count == 0) return;
  first.count = count;
  out.push_back(std::move(first));
}

/// Every pair of groups two or more participants hold, in the order the groups were first seen.
void find_inversions(const std::vector<Participant>& all, const GroupIds& ids, const std::string& source,
                     std::vector<OrderInversion>& out) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<const Participant*>> pairs;
  for (const auto& p : all) {
    std::vector<std::uint32_t> groups;
    for (const auto& t : p.tokens)
      if (std::find(groups.begin(), groups.end(), t.group) == groups.end()) groups.push_back(t.group);
    std::sort(groups.begin(), groups.end());
    for (std::size_t i = 0; i < groups.size(); ++i)
      for (std::size_t j = i + 1; j < groups.size(); ++j) pairs[{groups[i], groups[j]}].push_back(&p);
  }
  for (const auto& [ab, ps] : pairs)
    if (ps.size() >= 2) inversions_of_pair(ab.first, ab.second, ps, ids, source, out);
}

bool schedulable(const CollectiveOp& op) {
  return !op.p2p && op.kind != "wait_tensor" && !op.group.empty();
}

void by_record(Participant& p) {
  std::stable_sort(p.tokens.begin(), p.tokens.end(),
                   [](const Token& x, const Token& y) { return x.op->record < y.op->record; });
}

/// A rank's Flight Recorder collectives of every group in record order, one token per
/// collective_seq_id (the ops of a coalesced launch share one).
Participant flight_recorder_schedule(const RankCollectives& rc, GroupIds& ids) {
  Participant p;
  p.rank = rc.rank;
  for (const auto& s : rc.streams) {
    if (!s.flight_recorder()) continue;
    std::int64_t last = INT64_MIN;
    for (const auto& op : s.ops) {
      if (!schedulable(op) || op.seq <= 0 || op.seq <= last) continue;
      last = op.seq;
      p.tokens.push_back({ids.id(s.process_group()), op.seq, &op, &s});
    }
  }
  by_record(p);
  return p;
}

/// A graph stream's collectives in graph order, each numbered within its group.
Participant graph_schedule(std::int32_t rank, const CollectiveStream& s, GroupIds& ids) {
  Participant p;
  p.rank = rank;
  std::unordered_map<std::uint32_t, std::int64_t> n;
  for (const auto& op : s.ops) {
    if (!schedulable(op)) continue;
    const auto g = ids.id(op.group);
    p.tokens.push_back({g, ++n[g], &op, &s});
  }
  return p;
}

/// What CollectiveOp::signature() says, field by field (no strings built).
bool same_signature(const CollectiveOp* a, const CollectiveOp* b) {
  return a->kind == b->kind && a->params == b->params && a->input_shapes == b->input_shapes &&
         a->input_dtypes == b->input_dtypes && a->output_shapes == b->output_shapes &&
         a->output_dtypes == b->output_dtypes;
}

/// Baseline and candidate tokens of one stream: per process group, the in-place pairs of the
/// alignment of that group's collectives, numbered as the baseline numbers them
/// (collective_seq_id, or the place among the group's collectives in a graph), in stream order;
/// the rest is left out.
void aligned_tokens(const CollectiveStream& base, const CollectiveStream& cand, GroupIds& ids,
                    Participant& pb, Participant& pc) {
  std::vector<std::string> groups;
  for (const auto& op : base.ops)
    if (schedulable(op) && std::find(groups.begin(), groups.end(), op.group) == groups.end())
      groups.push_back(op.group);
  const auto first = pb.tokens.size();
  for (const auto& g : groups) {
    std::vector<const CollectiveOp*> ob, oc;
    for (const auto& op : base.ops)
      if (schedulable(op) && op.group == g) ob.push_back(&op);
    for (const auto& op : cand.ops)
      if (schedulable(op) && op.group == g) oc.push_back(&op);
    const auto id = ids.id(g);
    // Equal sequences (the common case) pair in place without the alignment's signatures.
    const bool equal = ob.size() == oc.size() && std::equal(ob.begin(), ob.end(), oc.begin(), same_signature);
    std::vector<SequenceDiff::Pair> pairs;
    if (equal)
      for (std::size_t k = 0; k < ob.size(); ++k) pairs.push_back({k, k});
    if (!equal) {
      std::vector<CollectiveOp> vb, vc;
      for (const auto* op : ob) vb.push_back(*op);
      for (const auto* op : oc) vc.push_back(*op);
      pairs = diff_sequences(vb, vc).same;
    }
    for (const auto& pair : pairs) {
      const auto seq = ob[pair.a]->seq > 0 ? ob[pair.a]->seq : static_cast<std::int64_t>(pair.a) + 1;
      pb.tokens.push_back({id, seq, ob[pair.a], &base});
      pc.tokens.push_back({id, seq, oc[pair.b], &cand});
    }
  }
  // Stream order (a Flight Recorder stream is one group: record order is sorted later).
  for (auto* p : {&pb, &pc}) {
    const auto* ops = (p == &pb ? base : cand).ops.data();
    std::stable_sort(p->tokens.begin() + static_cast<std::ptrdiff_t>(first), p->tokens.end(),
                     [&](const Token& x, const Token& y) { return x.op - ops < y.op - ops; });
  }
}

/// The two sides of one rank, baseline first.
std::vector<Participant> sides(std::int32_t rank) {
  std::vector<Participant> ps(2);
  ps[0].rank = ps[1].rank = rank;
  ps[1].candidate = true;
  return ps;
}

}  // namespace

std::string ScheduledCollective::text() const {
  if (stream.starts_with("pg ")) {
    std::string s = stream + " #" + std::to_string(seq) + " " + op.kind;
    if (!op.site.empty()) s += " at " + op.site;
    return s;
  }
  return "group '" + group + "' #" + std::to_string(seq) + " " + op.kind + " (node " + op.where + ")";
}

std::vector<OrderInversion> order_inversions(const CollectiveRun& run) {
  std::vector<OrderInversion> out;
  {
    GroupIds ids;
    std::vector<Participant> ps;
    for (const auto& rc : run.ranks) ps.push_back(flight_recorder_schedule(rc, ids));
    find_inversions(ps, ids, "Flight Recorder", out);
  }
  std::vector<std::string> graphs;
  for (const auto& rc : run.ranks)
    for (const auto& s : rc.streams)
      if (!s.flight_recorder() && std::find(graphs.begin(), graphs.end(), s.name) == graphs.end())
        graphs.push_back(s.name);
  for (const auto& name : graphs) {
    GroupIds ids;
    std::vector<Participant> ps;
    for (const auto& rc : run.ranks)
      if (const auto* s = rc.find(name)) ps.push_back(graph_schedule(rc.rank, *s, ids));
    find_inversions(ps, ids, name, out);
  }
  return out;
}

std::vector<OrderInversion> order_moves(const CollectiveRun& baseline, const CollectiveRun& candidate) {
  std::vector<OrderInversion> out;
  for (const auto& rb : baseline.ranks) {
    const auto* rc = candidate.rank(rb.rank);
    if (rc == nullptr) continue;
    GroupIds ids;
    auto fr = sides(rb.rank);
    for (const auto& sb : rb.streams) {
      const auto* sc = rc->find(sb.name);
      if (sc == nullptr) continue;
      if (sb.flight_recorder()) {
        aligned_tokens(sb, *sc, ids, fr[0], fr[1]);
        continue;
      }
      GroupIds gids;
      auto g = sides(rb.rank);
      aligned_tokens(sb, *sc, gids, g[0], g[1]);
      find_inversions(g, gids, sb.name, out);
    }
    by_record(fr[0]);
    by_record(fr[1]);
    find_inversions(fr, ids, "Flight Recorder", out);
  }
  return out;
}

}  // namespace gparity::diff
