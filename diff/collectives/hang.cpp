#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "diff/collectives/schedule.hpp"

// Hangs from Flight Recorder dumps (schedule.hpp). A rank is blocked in its oldest collective not
// completed (by record_id, across its groups): NCCL runs a rank's collectives in the order their
// inputs become ready on the compute stream, so what it issued later waits behind that one. It
// waits for every member of that collective's group that has not reached it: a member that never
// issued it, or issued it behind a collective of its own it is blocked in. The ranks and these
// waits form a graph; its strongly connected components are the deadlocks.

namespace gparity::diff {
namespace {

/// A deadlock of thousands of ranks has as many cycles; these many name its shape.
constexpr std::size_t kMaxCyclesPerDeadlock = 16;

bool pending(const CollectiveOp& op) {
  return op.state == "scheduled" || op.state == "started";
}

/// One rank's view of one of its process groups.
struct GroupView {
  const CollectiveStream* stream = nullptr;
  std::int64_t last_issued = -1, last_completed = -1;
  const CollectiveOp* first_pending = nullptr;
  [[nodiscard]] const CollectiveOp* at(std::int64_t seq) const {
    const auto& ops = stream->ops;
    const auto it = std::lower_bound(ops.begin(), ops.end(), seq,
                                     [](const CollectiveOp& o, std::int64_t s) { return o.seq < s; });
    return it != ops.end() && it->seq == seq ? &*it : nullptr;
  }
  [[nodiscard]] std::int64_t first_seq() const {
    for (const auto& o : stream->ops)
      if (o.seq > 0) return o.seq;
    return -1;
  }
};

struct RankView {
  std::int32_t rank = 0;
  std::unordered_map<std::string, GroupView> groups;
  const CollectiveOp* blocked = nullptr;  // the oldest pending collective, by record_id
  const CollectiveStream* blocked_stream = nullptr;
};

/// A rank has a dump when one was read for it, even one with no entries.
bool has_dump(const RankCollectives& rc) {
  return rc.flight_recorder || std::any_of(rc.streams.begin(), rc.streams.end(),
                                           [](const CollectiveStream& s) { return s.flight_recorder(); });
}

RankView view_of(const RankCollectives& rc) {
  RankView v;
  v.rank = rc.rank;
  for (const auto& s : rc.streams) {
    if (!s.flight_recorder()) continue;
    GroupView g;
    g.stream = &s;
    g.last_issued = s.status.last_enqueued;
    g.last_completed = s.status.last_completed;
    for (const auto& op : s.ops) {
      if (op.p2p || op.seq <= 0) continue;
      g.last_issued = std::max(g.last_issued, op.seq);
      if (op.state == "completed") g.last_completed = std::max(g.last_completed, op.seq);
      if (g.first_pending == nullptr && pending(op)) g.first_pending = &op;
    }
    if (g.first_pending != nullptr && (v.blocked == nullptr || g.first_pending->record < v.blocked->record)) {
      v.blocked = g.first_pending;
      v.blocked_stream = &s;
    }
    v.groups.emplace(s.process_group(), g);
  }
  return v;
}

ScheduledCollective scheduled_op(const CollectiveStream& s, const CollectiveOp& op) {
  return {s.name, s.process_group(), op.seq, op};
}

/// The members of each process group: the pg_config ranks any dump gives, else the ranks that
/// hold the group.
std::map<std::string, std::vector<std::int64_t>> group_members(const CollectiveRun& run) {
  std::map<std::string, std::set<std::int64_t>> m;
  for (const auto& rc : run.ranks) {
    for (const auto& s : rc.streams) {
      if (!s.flight_recorder()) continue;
      auto& set = m[s.process_group()];
      if (s.ranks.empty()) set.insert(rc.rank);
      for (const auto r : s.ranks)
        if (r >= 0 && r <= INT32_MAX) set.insert(r);  // a rank is an int32 (the rest is damage)
    }
  }
  std::map<std::string, std::vector<std::int64_t>> out;
  for (auto& [g, set] : m) out[g].assign(set.begin(), set.end());
  return out;
}

/// Tarjan's strongly connected components, iteratively (a run may have thousands of ranks).
std::vector<std::vector<std::size_t>> components(const std::vector<std::vector<std::size_t>>& adj) {
  const std::size_t n = adj.size();
  std::vector<std::size_t> index(n, SIZE_MAX), low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<std::size_t> stack;
  std::vector<std::vector<std::size_t>> out;
  std::size_t next = 0;
  for (std::size_t root = 0; root < n; ++root) {
    if (index[root] != SIZE_MAX) continue;
    std::vector<std::pair<std::size_t, std::size_t>> work{{root, 0}};
    index[root] = low[root] = next++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!work.empty()) {
      auto& [v, k] = work.back();
      if (k < adj[v].size()) {
        const std::size_t w = adj[v][k++];
        if (index[w] == SIZE_MAX) {
          index[w] = low[w] = next++;
          stack.push_back(w);
          on_stack[w] = true;
          work.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const std::size_t done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
      if (low[done] != index[done]) continue;
      std::vector<std::size_t> comp;
      for (std::size_t w = SIZE_MAX; w != done;) {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        comp.push_back(w);
      }
      if (comp.size() > 1) out.push_back(std::move(comp));
    }
  }
  return out;
}

/// One cycle through `start` inside `comp` (breadth first: the shortest).
std::vector<std::size_t> cycle_through(std::size_t start, const std::vector<std::size_t>& comp,
                                       const std::vector<std::vector<std::size_t>>& adj) {
  std::unordered_map<std::size_t, std::size_t> parent;
  std::vector<std::size_t> queue{start};
  const auto inside = [&](std::size_t v) { return std::find(comp.begin(), comp.end(), v) != comp.end(); };
  for (std::size_t q = 0; q < queue.size(); ++q) {
    for (const std::size_t w : adj[queue[q]]) {
      if (w == start) {
        std::vector<std::size_t> path{queue[q]};
        while (path.back() != start) path.push_back(parent.at(path.back()));
        std::reverse(path.begin(), path.end());
        return path;  // start, ..., the node whose edge closes the cycle
      }
      if (!inside(w) || parent.contains(w) || w == start) continue;
      parent[w] = queue[q];
      queue.push_back(w);
    }
  }
  return {};
}

}  // namespace

HangAnalysis analyze_hang(const CollectiveRun& run) {
  HangAnalysis h;
  const auto members = group_members(run);
  std::unordered_map<std::int32_t, std::size_t> node;  // rank -> index into views
  std::vector<RankView> views;
  for (const auto& rc : run.ranks) {
    if (!has_dump(rc)) continue;
    node[rc.rank] = views.size();
    views.push_back(view_of(rc));
  }
  std::set<std::int32_t> missing;
  for (const auto& [g, ranks] : members)
    for (const auto r : ranks)
      if (!node.contains(static_cast<std::int32_t>(r))) missing.insert(static_cast<std::int32_t>(r));
  h.missing_dumps.assign(missing.begin(), missing.end());

  // Per group: the lowest collective some member is blocked or waiting in.
  for (const auto& [g, ranks] : members) {
    std::int64_t seq = INT64_MAX;
    const CollectiveOp* op = nullptr;
    const CollectiveStream* stream = nullptr;
    for (const auto& v : views) {
      const auto it = v.groups.find(g);
      if (it == v.groups.end() || it->second.first_pending == nullptr) continue;
      if (it->second.first_pending->seq < seq) {
        seq = it->second.first_pending->seq;
        op = it->second.first_pending;
        stream = it->second.stream;
      }
    }
    if (op == nullptr) continue;
    GroupWait w{stream->name, g, seq, *op, {}};
    for (const auto r : ranks) {
      MemberState m;
      m.rank = static_cast<std::int32_t>(r);
      const auto n = node.find(m.rank);
      const GroupView* gv = nullptr;
      if (n != node.end()) {
        const auto it = views[n->second].groups.find(g);
        if (it != views[n->second].groups.end()) gv = &it->second;
      }
      if (n == node.end()) {
        m.state = "no dump";
      } else if (gv == nullptr) {
        m.state = "not issued";
      } else {
        m.last_completed = gv->last_completed;
        m.last_issued = gv->last_issued;
        const auto* at = gv->at(seq);
        m.state = at != nullptr ? (at->state.empty() ? "completed" : at->state)
                                : (gv->last_issued >= seq ? "not in its ring" : "not issued");
      }
      w.members.push_back(m);
    }
    h.groups.push_back(std::move(w));
  }
  if (h.groups.empty()) return h;

  // Who waits for whom.
  std::vector<std::vector<std::size_t>> adj(views.size());
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& v = views[i];
    if (v.blocked == nullptr) continue;
    const auto& g = v.blocked_stream->process_group();
    const auto mit = members.find(g);
    if (mit == members.end()) continue;
    for (const auto r : mit->second) {
      const auto n = node.find(static_cast<std::int32_t>(r));
      if (n == node.end() || n->second == i) continue;
      const auto& m = views[n->second];
      const auto git = m.groups.find(g);
      const CollectiveOp* there = git == m.groups.end() ? nullptr : git->second.at(v.blocked->seq);
      WaitEdge e;
      e.from = v.rank;
      e.to = m.rank;
      e.waits_in = scheduled_op(*v.blocked_stream, *v.blocked);
      if (there != nullptr) {
        if (!pending(*there) || there == m.blocked) continue;  // done, or in it too
        e.issued = true;
        e.to_record = scheduled_op(*git->second.stream, *there);
      } else if (git != m.groups.end() &&
                 (git->second.last_issued >= v.blocked->seq || git->second.first_seq() > v.blocked->seq)) {
        continue;  // past it, or it left m's ring long ago
      }
      if (m.blocked != nullptr) {
        e.to_blocked = true;
        e.to_blocked_in = scheduled_op(*m.blocked_stream, *m.blocked);
      }
      adj[i].push_back(n->second);
      h.waits.push_back(std::move(e));
    }
  }
  const auto edge = [&](std::size_t from, std::size_t to) -> const WaitEdge& {
    for (const auto& e : h.waits)
      if (e.from == views[from].rank && e.to == views[to].rank) return e;
    return h.waits.front();  // unreachable: adj holds only edges that were added
  };

  std::vector<std::vector<std::size_t>> back(views.size());  // who waits for each rank
  for (std::size_t v = 0; v < views.size(); ++v)
    for (const auto w : adj[v]) back[w].push_back(v);
  for (auto comp : components(adj)) {
    std::sort(comp.begin(), comp.end(),
              [&](std::size_t a, std::size_t b) { return views[a].rank < views[b].rank; });
    std::vector<std::int32_t> ranks, behind;
    for (const auto v : comp) ranks.push_back(views[v].rank);
    // Everyone with a path into the component waits on it.
    std::vector<bool> reaches(views.size(), false);
    std::vector<std::size_t> queue(comp.begin(), comp.end());
    for (const auto v : comp) reaches[v] = true;
    for (std::size_t q = 0; q < queue.size(); ++q)
      for (const auto w : back[queue[q]])
        if (!reaches[w]) reaches[w] = true, queue.push_back(w);
    for (std::size_t v = 0; v < views.size(); ++v)
      if (reaches[v] && std::find(comp.begin(), comp.end(), v) == comp.end()) behind.push_back(views[v].rank);
    std::sort(behind.begin(), behind.end());
    std::vector<bool> covered(views.size(), false);
    std::size_t cycles = 0;
    for (const auto start : comp) {
      if (covered[start] || cycles == kMaxCyclesPerDeadlock) continue;
      const auto path = cycle_through(start, comp, adj);
      if (path.empty()) continue;
      ++cycles;
      Deadlock d;
      for (std::size_t k = 0; k < path.size(); ++k) {
        covered[path[k]] = true;
        d.cycle.push_back(edge(path[k], path[(k + 1) % path.size()]));
      }
      const auto issued = static_cast<std::size_t>(
          std::count_if(d.cycle.begin(), d.cycle.end(), [](const WaitEdge& e) { return e.issued; }));
      if (issued > 0 && issued < d.cycle.size()) {
        d.cause = Deadlock::Cause::SkippedCollective;
        for (std::size_t k = 0; k < d.cycle.size(); ++k)
          if (!d.cycle[k].issued) {
            d.skipped_edge = k;
            break;
          }
      }
      d.behind = behind;
      d.component = ranks;
      h.deadlocks.push_back(std::move(d));
    }
  }
  std::stable_sort(h.deadlocks.begin(), h.deadlocks.end(), [](const Deadlock& a, const Deadlock& b) {
    return a.component.front() < b.component.front();
  });

  // A member that never issued what others wait in and has nothing pending: it never arrived.
  std::set<std::tuple<std::int32_t, std::string, std::int64_t>> seen;
  for (const auto& e : h.waits) {
    if (e.issued || e.to_blocked) continue;
    if (seen.insert({e.to, e.waits_in.group, e.waits_in.seq}).second) h.never_arrived.push_back(e);
  }
  return h;
}

}  // namespace gparity::diff
