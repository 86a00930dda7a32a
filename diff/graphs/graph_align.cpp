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
    struct Range {
      std::size_t a0, a1, b0, b1;
    };
    std::vector<Range> work{{0, ua.size(), 0, ub.size()}};
    while (!work.empty()) {
      Range g = work.back();
      work.pop_back();
      const auto same = [&](std::size_t i, std::size_t j) {
        return a_.content_hash(ua[i]) == b_.content_hash(ub[j]);
      };
      while (g.a0 < g.a1 && g.b0 < g.b1 && same(g.a0, g.b0))
        match(ua[g.a0++], ub[g.b0++], MatchHow::Sequence);
      while (g.a0 < g.a1 && g.b0 < g.b1 && same(g.a1 - 1, g.b1 - 1))
        match(ua[--g.a1], ub[--g.b1], MatchHow::Sequence);
      if (g.a0 == g.a1 || g.b0 == g.b1) continue;
      // Tokens that occur exactly once on each side anchor the gap.
      struct Count {
        std::uint32_t in_a = 0, in_b = 0;
        std::size_t pos_a = 0, pos_b = 0;
      };
      std::unordered_map<std::uint64_t, Count> counts;
      for (std::size_t i = g.a0; i < g.a1; ++i) {
        auto& c = counts[a_.content_hash(ua[i])];
        ++c.in_a;
        c.pos_a = i;
      }
      for (std::size_t j = g.b0; j < g.b1; ++j) {
        const auto it = counts.find(b_.content_hash(ub[j]));
        if (it != counts.end()) {
          ++it->second.in_b;
          it->second.pos_b = j;
        }
      }
      std::vector<std::pair<std::size_t, std::uint32_t>> uniq;  // (pos in A, pos in B), by A
      for (std::size_t i = g.a0; i < g.a1; ++i) {
        const auto& c = counts[a_.content_hash(ua[i])];
        if (c.in_a == 1 && c.in_b == 1) uniq.emplace_back(i, static_cast<std::uint32_t>(c.pos_b));
      }
      if (uniq.empty()) {
        pair_by_op(ua, ub, g.a0, g.a1, g.b0, g.b1);
        continue;
      }
      std::vector<std::uint32_t> bpos;
      bpos.reserve(uniq.size());
      for (const auto& u : uniq) bpos.push_back(u.second);
      std::size_t pa = g.a0, pb = g.b0;
      for (const std::size_t k : longest_increasing(bpos)) {
        const auto [i, j] = uniq[k];
        work.push_back({pa, i, pb, j});
        match(ua[i], ub[j], MatchHow::Sequence);
        pa = i + 1;
        pb = j + 1;
      }
      work.push_back({pa, g.a1, pb, g.b1});
    }
  }

  // A gap with no common unique content: pair nodes running the same operator, in order.
  void pair_by_op(const std::vector<NodeId>& ua, const std::vector<NodeId>& ub, std::size_t a0,
                  std::size_t a1, std::size_t b0, std::size_t b1) {
    const std::size_t n = a1 - a0, m = b1 - b0;
    const auto same = [&](std::size_t i, std::size_t j) {
      return a_.op_hash(ua[a0 + i]) == b_.op_hash(ub[b0 + j]);
    };
    if (n * m <= kLcsCells) {
      std::vector<std::uint32_t> t((n + 1) * (m + 1), 0);  // suffix LCS lengths
      const auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return t[i * (m + 1) + j]; };
      for (std::size_t i = n; i-- > 0;) {
        for (std::size_t j = m; j-- > 0;)
          at(i, j) = same(i, j) ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
      }
      for (std::size_t i = 0, j = 0; i < n && j < m;) {
        if (same(i, j)) {
          match(ua[a0 + i++], ub[b0 + j++], MatchHow::Sequence);
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
          match(ua[a0 + i], ub[b0 + k], MatchHow::Sequence);
          j = k + 1;
          break;
        }
      }
    }
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

}  // namespace gparity::diff
