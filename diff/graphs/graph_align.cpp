#include "diff/graphs/graph_align.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace gparity::diff {

using model::kNoNode;
using model::NodeId;

std::size_t Alignment::matched() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(a_to_b.begin(), a_to_b.end(), [](NodeId b) { return b != kNoNode; }));
}

namespace {

// Gaps at most this large (|A| * |B|) get an exact LCS on operators; larger ones are paired greedily.
constexpr std::size_t kLcsCells = 1u << 20;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ULL;
}

std::vector<NodeId> order_of(const model::Graph& g) {
  if (auto t = model::topological_order(g)) return std::move(*t);
  std::vector<NodeId> o(g.nodes.size());
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = static_cast<NodeId>(i);
  return o;
}

// Indices (into `keys`) of a longest strictly increasing subsequence, in order.
std::vector<std::size_t> longest_increasing(const std::vector<std::uint32_t>& keys) {
  std::vector<std::size_t> tails, prev(keys.size(), SIZE_MAX);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto it = std::lower_bound(tails.begin(), tails.end(), keys[i],
                                     [&](std::size_t t, std::uint32_t k) { return keys[t] < k; });
    if (it != tails.begin()) prev[i] = *(it - 1);
    if (it == tails.end()) {
      tails.push_back(i);
    } else {
      *it = i;
    }
  }
  std::vector<std::size_t> out;
  for (std::size_t i = tails.empty() ? SIZE_MAX : tails.back(); i != SIZE_MAX; i = prev[i]) out.push_back(i);
  std::reverse(out.begin(), out.end());
  return out;
}

// Patience diff of `ua` against `ub` (unmatched nodes, each in topological order): tokens are
// content hashes, anchors the tokens unique on both sides, longest increasing subsequence, the
// gaps with an explicit stack; a gap without anchors pairs same-op nodes (LCS when small, greedy
// otherwise). Shared by the whole-graph aligner and the patched-graph one, so both pair alike.
template <typename ContentA, typename ContentB, typename OpA, typename OpB, typename Match>
void sequence_align(const std::vector<NodeId>& ua, const std::vector<NodeId>& ub, ContentA&& content_a,
                    ContentB&& content_b, OpA&& op_a, OpB&& op_b, Match&& match) {
  struct Range {
    std::size_t a0, a1, b0, b1;
  };
  // A gap with no common unique content: pair nodes running the same operator, in order.
  const auto pair_by_op = [&](std::size_t a0, std::size_t a1, std::size_t b0, std::size_t b1) {
    const std::size_t n = a1 - a0, m = b1 - b0;
    const auto same = [&](std::size_t i, std::size_t j) { return op_a(ua[a0 + i]) == op_b(ub[b0 + j]); };
    if (n * m <= kLcsCells) {
      std::vector<std::uint32_t> t((n + 1) * (m + 1), 0);  // suffix LCS lengths
      const auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return t[i * (m + 1) + j]; };
      for (std::size_t i = n; i-- > 0;) {
        for (std::size_t j = m; j-- > 0;)
          at(i, j) = same(i, j) ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
      }
      for (std::size_t i = 0, j = 0; i < n && j < m;) {
        if (same(i, j)) {
          match(ua[a0 + i++], ub[b0 + j++]);
        } else if (at(i + 1, j) >= at(i, j + 1)) {
          ++i;
        } else {
          ++j;
        }
      }
      return;
    }
    std::size_t j = 0;
    for (std::size_t i = 0; i < n && j < m; ++i) {
      for (std::size_t k = j; k < m && k < j + 64; ++k) {
        if (same(i, k)) {
          match(ua[a0 + i], ub[b0 + k]);
          j = k + 1;
          break;
        }
      }
    }
  };
  std::vector<Range> work{{0, ua.size(), 0, ub.size()}};
  while (!work.empty()) {
    Range g = work.back();
    work.pop_back();
    const auto same = [&](std::size_t i, std::size_t j) { return content_a(ua[i]) == content_b(ub[j]); };
    while (g.a0 < g.a1 && g.b0 < g.b1 && same(g.a0, g.b0)) {
      match(ua[g.a0], ub[g.b0]);
      ++g.a0;
      ++g.b0;
    }
    while (g.a0 < g.a1 && g.b0 < g.b1 && same(g.a1 - 1, g.b1 - 1)) {
      --g.a1;
      --g.b1;
      match(ua[g.a1], ub[g.b1]);
    }
    if (g.a0 == g.a1 || g.b0 == g.b1) continue;
    // Tokens that occur exactly once on each side anchor the gap.
    struct Count {
      std::uint32_t in_a = 0, in_b = 0;
      std::size_t pos_a = 0, pos_b = 0;
    };
    std::unordered_map<std::uint64_t, Count> counts;
    for (std::size_t i = g.a0; i < g.a1; ++i) {
      auto& c = counts[content_a(ua[i])];
      ++c.in_a;
      c.pos_a = i;
    }
    for (std::size_t j = g.b0; j < g.b1; ++j) {
      const auto it = counts.find(content_b(ub[j]));
      if (it != counts.end()) {
        ++it->second.in_b;
        it->second.pos_b = j;
      }
    }
    std::vector<std::pair<std::size_t, std::uint32_t>> uniq;  // (pos in A, pos in B), by A
    for (std::size_t i = g.a0; i < g.a1; ++i) {
      const auto& c = counts[content_a(ua[i])];
      if (c.in_a == 1 && c.in_b == 1) uniq.emplace_back(i, static_cast<std::uint32_t>(c.pos_b));
    }
    if (uniq.empty()) {
      pair_by_op(g.a0, g.a1, g.b0, g.b1);
      continue;
    }
    std::vector<std::uint32_t> bpos;
    bpos.reserve(uniq.size());
    for (const auto& u : uniq) bpos.push_back(u.second);
    std::size_t pa = g.a0, pb = g.b0;
    for (const std::size_t k : longest_increasing(bpos)) {
      const auto [i, j] = uniq[k];
      work.push_back({pa, i, pb, j});
      match(ua[i], ub[j]);
      pa = i + 1;
      pb = j + 1;
    }
    work.push_back({pa, g.a1, pb, g.b1});
  }
}

class Aligner {
 public:
  Aligner(const NormalizedGraph& a, const NormalizedGraph& b)
      : a_(a),
        b_(b),
        ea_(a.graph()),
        eb_(b.graph()),
        order_a_(order_of(a.graph())),
        order_b_(order_of(b.graph())) {
    r_.a_to_b.assign(a.graph().nodes.size(), kNoNode);
    r_.b_to_a.assign(b.graph().nodes.size(), kNoNode);
    r_.how.assign(a.graph().nodes.size(), MatchHow::None);
    r_.moved.assign(a.graph().nodes.size(), false);
  }

  Alignment run() {
    by_name(true);
    propagate();
    by_name(false);
    propagate();
    sequence();
    propagate();
    by_name(false, true);  // what is left and shares a name: the same node with another operator
    mark_moved();
    return std::move(r_);
  }

 private:
  void match(NodeId x, NodeId y, MatchHow how) {
    r_.a_to_b[x] = y;
    r_.b_to_a[y] = x;
    r_.how[x] = how;
  }

  void by_name(bool strict, bool any_op = false) {
    if (names_.empty()) {
      const auto& gb = b_.graph();
      names_.reserve(gb.nodes.size());
      for (std::size_t i = 0; i < gb.nodes.size(); ++i)
        names_.emplace(gb.node_name(static_cast<NodeId>(i)), i);
    }
    const auto& ga = a_.graph();
    for (std::size_t i = 0; i < ga.nodes.size(); ++i) {
      if (r_.a_to_b[i] != kNoNode) continue;
      const auto it = names_.find(ga.node_name(static_cast<NodeId>(i)));
      if (it == names_.end() || r_.b_to_a[it->second] != kNoNode) continue;
      const bool same = any_op   ? true
                        : strict ? a_.content_hash(static_cast<NodeId>(i)) == b_.content_hash(it->second)
                                 : a_.op_hash(static_cast<NodeId>(i)) == b_.op_hash(it->second);
      if (same) match(static_cast<NodeId>(i), it->second, MatchHow::Name);
    }
  }

  // Content plus the identities of the inputs, in B's numbering.
  template <typename Map>
  std::uint64_t key(const NormalizedGraph& g, const model::UseEdges& e, NodeId n, Map&& to_b) const {
    std::uint64_t h = g.content_hash(n);
    for (const NodeId in : e.inputs(n)) {
      const NodeId m = to_b(in);
      if (m == kNoNode) return 0;
      h = mix(h, m);
    }
    return h == 0 ? 1 : h;
  }

  void propagate() {
    if (keys_b_.empty()) {
      keys_b_.reserve(b_.graph().nodes.size());
      for (std::size_t i = 0; i < b_.graph().nodes.size(); ++i) {
        const auto n = static_cast<NodeId>(i);
        keys_b_.emplace_back(key(b_, eb_, n, [](NodeId x) { return x; }), n);
      }
      std::sort(keys_b_.begin(), keys_b_.end());
    }
    for (const NodeId x : order_a_) {
      if (r_.a_to_b[x] != kNoNode) continue;
      const std::uint64_t k = key(a_, ea_, x, [&](NodeId in) { return r_.a_to_b[in]; });
      if (k == 0) continue;
      auto it = std::lower_bound(keys_b_.begin(), keys_b_.end(), std::pair<std::uint64_t, NodeId>{k, 0});
      for (; it != keys_b_.end() && it->first == k; ++it) {
        if (r_.b_to_a[it->second] == kNoNode) {
          match(x, it->second, MatchHow::Structure);
          break;
        }
      }
    }
  }

  // Patience diff of the unmatched nodes of both graphs, in topological order.
  void sequence() {
    std::vector<NodeId> ua, ub;
    for (const NodeId x : order_a_) {
      if (r_.a_to_b[x] == kNoNode) ua.push_back(x);
    }
    for (const NodeId y : order_b_) {
      if (r_.b_to_a[y] == kNoNode) ub.push_back(y);
    }
    sequence_align(
        ua, ub, [&](NodeId x) { return a_.content_hash(x); }, [&](NodeId y) { return b_.content_hash(y); },
        [&](NodeId x) { return a_.op_hash(x); }, [&](NodeId y) { return b_.op_hash(y); },
        [&](NodeId x, NodeId y) { match(x, y, MatchHow::Sequence); });
  }

  void mark_moved() {
    std::vector<std::uint32_t> pos_b(b_.graph().nodes.size());
    for (std::size_t i = 0; i < order_b_.size(); ++i) pos_b[order_b_[i]] = static_cast<std::uint32_t>(i);
    std::vector<NodeId> pairs_a;
    std::vector<std::uint32_t> keys;
    for (const NodeId x : order_a_) {
      if (r_.a_to_b[x] == kNoNode) continue;
      pairs_a.push_back(x);
      keys.push_back(pos_b[r_.a_to_b[x]]);
    }
    std::vector<bool> in_order(pairs_a.size(), false);
    for (const std::size_t k : longest_increasing(keys)) in_order[k] = true;
    for (std::size_t k = 0; k < pairs_a.size(); ++k) r_.moved[pairs_a[k]] = !in_order[k];
  }

  const NormalizedGraph& a_;
  const NormalizedGraph& b_;
  model::UseEdges ea_, eb_;
  std::vector<NodeId> order_a_, order_b_;
  Alignment r_;
  std::unordered_map<std::string_view, NodeId> names_;
  std::vector<std::pair<std::uint64_t, NodeId>> keys_b_;
};

}  // namespace

Alignment align_graphs(const NormalizedGraph& a, const NormalizedGraph& b) {
  return Aligner(a, b).run();
}

NodeId PatchedAlignment::a_to_b(NodeId x) const {
  const auto it = std::lower_bound(changed.begin(), changed.end(), std::pair<NodeId, NodeId>{x, 0});
  return it != changed.end() && it->first == x ? it->second : x;
}

namespace {

// align_graphs' steps on the patched positions only: every other node of A is matched with its
// own position by the first step (same name, same content), so only patched nodes are ever left
// unmatched, on either side, and both topological orders are the positions themselves.
class PatchedAligner {
 public:
  PatchedAligner(const NormalizedGraph& a, const model::UseEdges& ea, const std::vector<PatchedNode>& p)
      : a_(a), ea_(ea), p_(p), a_match_(p.size(), kNoNode), b_match_(p.size(), kNoNode) {}

  PatchedAlignment run() {
    for (std::size_t k = 0; k < p_.size(); ++k) {  // 1. names, same content
      if (a_.content_hash(p_[k].at) == p_[k].content) match(k, k);
    }
    propagate();
    by_name([&](std::size_t k) { return a_.op_hash(p_[k].at) == p_[k].op; });
    propagate();
    std::vector<NodeId> ua, ub;
    for (std::size_t k = 0; k < p_.size(); ++k) {
      if (a_match_[k] == kNoNode) ua.push_back(p_[k].at);
      if (b_match_[k] == kNoNode) ub.push_back(p_[k].at);
    }
    sequence_align(
        ua, ub, [&](NodeId x) { return a_.content_hash(x); }, [&](NodeId y) { return p_[index(y)].content; },
        [&](NodeId x) { return a_.op_hash(x); }, [&](NodeId y) { return p_[index(y)].op; },
        [&](NodeId x, NodeId y) { match(index(x), index(y)); });
    propagate();
    by_name([](std::size_t) { return true; });
    return result();
  }

 private:
  std::size_t index(NodeId at) const {
    return static_cast<std::size_t>(
        std::lower_bound(p_.begin(), p_.end(), at, [](const PatchedNode& n, NodeId x) { return n.at < x; }) -
        p_.begin());
  }
  bool patched(NodeId at) const {
    const std::size_t k = index(at);
    return k < p_.size() && p_[k].at == at;
  }
  void match(std::size_t ka, std::size_t kb) {
    a_match_[ka] = p_[kb].at;
    b_match_[kb] = p_[ka].at;
  }
  NodeId a_to_b(NodeId x) const { return patched(x) ? a_match_[index(x)] : x; }

  // Names are distinct and kept at their positions: A's node x's namesake in B is B's node x.
  template <typename Same>
  void by_name(Same&& same) {
    for (std::size_t k = 0; k < p_.size(); ++k) {
      if (a_match_[k] == kNoNode && b_match_[k] == kNoNode && same(k)) match(k, k);
    }
  }

  void propagate() {
    if (keys_b_.empty()) {
      for (std::size_t k = 0; k < p_.size(); ++k) {
        std::uint64_t h = p_[k].content;
        for (const NodeId in : p_[k].inputs) h = mix(h, in);
        keys_b_.emplace_back(h == 0 ? 1 : h, p_[k].at);
      }
      std::sort(keys_b_.begin(), keys_b_.end());
    }
    for (std::size_t k = 0; k < p_.size(); ++k) {
      if (a_match_[k] != kNoNode) continue;
      const NodeId x = p_[k].at;
      std::uint64_t h = a_.content_hash(x);
      bool known = true;
      for (const NodeId in : ea_.inputs(x)) {
        const NodeId m = a_to_b(in);
        if (m == kNoNode) {
          known = false;
          break;
        }
        h = mix(h, m);
      }
      if (!known) continue;
      const std::uint64_t key = h == 0 ? 1 : h;
      auto it = std::lower_bound(keys_b_.begin(), keys_b_.end(), std::pair<std::uint64_t, NodeId>{key, 0});
      for (; it != keys_b_.end() && it->first == key; ++it) {
        const std::size_t kb = index(it->second);
        if (b_match_[kb] == kNoNode) {
          match(k, kb);
          break;
        }
      }
    }
  }

  PatchedAlignment result() const {
    PatchedAlignment r;
    bool displaced = false;
    for (std::size_t k = 0; k < p_.size(); ++k) {
      if (a_match_[k] != p_[k].at) r.changed.emplace_back(p_[k].at, a_match_[k]);
      if (b_match_[k] == kNoNode) r.b_unmatched.push_back(p_[k].at);
      displaced = displaced || (a_match_[k] != kNoNode && a_match_[k] != p_[k].at);
    }
    if (!displaced) return r;  // every pair at its own position: nothing is out of order
    // As align_graphs marks moves: the pairs off one longest increasing run of B positions.
    std::vector<NodeId> pairs_a;
    std::vector<std::uint32_t> keys;
    const std::size_t n = a_.graph().nodes.size();
    for (std::size_t x = 0; x < n; ++x) {
      const NodeId y = r.a_to_b(static_cast<NodeId>(x));
      if (y == kNoNode) continue;
      pairs_a.push_back(static_cast<NodeId>(x));
      keys.push_back(y);
    }
    std::vector<bool> in_order(pairs_a.size(), false);
    for (const std::size_t k : longest_increasing(keys)) in_order[k] = true;
    for (std::size_t k = 0; k < pairs_a.size(); ++k) {
      if (!in_order[k]) r.moved.push_back(pairs_a[k]);
    }
    return r;
  }

  const NormalizedGraph& a_;
  const model::UseEdges& ea_;
  const std::vector<PatchedNode>& p_;
  std::vector<NodeId> a_match_, b_match_;  // per patched position: its match on the other side
  std::vector<std::pair<std::uint64_t, NodeId>> keys_b_;
};

}  // namespace

PatchedAlignment align_patched(const NormalizedGraph& a, const model::UseEdges& a_edges,
                               const std::vector<PatchedNode>& patched) {
  return PatchedAligner(a, a_edges, patched).run();
}

}  // namespace gparity::diff
