// classify_rank_set: classify_ranks over every rank's version held in a RankGraphSet. The first
// group's representative is built whole; every other group's is compared as its patches
// (align_patched) when it is a delta of that graph, else rebuilt, compared and dropped.
// rank_classification.hpp does the rest, as it does for classify_ranks.

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "diff/graphs/graph_align.hpp"
#include "diff/graphs/rank_classification.hpp"
#include "diff/graphs/rank_classify.hpp"

namespace gparity::diff {

using model::Graph;
using model::kNoNode;
using model::NodeId;

namespace {

/// Some nodes of a member's graph (patched nodes as they are, shared nodes from the base with
/// the device remapped) and a name-only stub for every node they refer to: what diff_nodes and
/// value_text need of a representative, without building the whole graph.
class Excerpt {
 public:
  explicit Excerpt(const RankGraphSet::Member& m) : m_(m), base_(m.base->graph) {
    g_.name = g_.intern(base_.str(base_.name));
  }

  /// Node `at` of the member's graph, whole; its id here.
  NodeId whole(NodeId at) {
    const NodeId here = id(at);
    if (whole_[here]) return here;
    const auto stub_of = [this](NodeId r) { return id(r); };
    const std::size_t k = patch_index(at);
    model::Node n = k < m_.patched.size()
                        ? copy_node(m_.patches, m_.patches.nodes[k], g_, std::nullopt, std::nullopt, stub_of)
                        : copy_node(base_, base_.nodes[at], g_, m_.base->local, m_.local, stub_of);
    g_.nodes[here] = std::move(n);
    whole_[here] = true;
    return here;
  }
  [[nodiscard]] NodeId here(NodeId at) const { return ids_.at(at); }
  [[nodiscard]] NodeId position(NodeId here) const { return at_[here]; }
  [[nodiscard]] const Graph& graph() const noexcept { return g_; }

 private:
  /// The index of `at` in the member's patched positions, or patched.size().
  std::size_t patch_index(NodeId at) const {
    const auto it = std::lower_bound(m_.patched.begin(), m_.patched.end(), at);
    return it != m_.patched.end() && *it == at ? static_cast<std::size_t>(it - m_.patched.begin())
                                               : m_.patched.size();
  }
  /// A stub (the name only: every position keeps the base's name) unless already here.
  NodeId id(NodeId at) {
    const auto [it, fresh] = ids_.emplace(at, static_cast<NodeId>(g_.nodes.size()));
    if (fresh) {
      model::Node stub;
      stub.name = g_.intern(base_.node_name(at));
      g_.nodes.push_back(std::move(stub));
      at_.push_back(at);
      whole_.push_back(false);
    }
    return it->second;
  }

  const RankGraphSet::Member& m_;
  const Graph& base_;
  Graph g_;
  std::unordered_map<NodeId, NodeId> ids_;
  std::vector<NodeId> at_;
  std::vector<bool> whole_;
};

/// Distinct references of a node, first use first (as UseEdges lists inputs).
std::vector<NodeId> inputs_of(const model::Node& n, std::size_t graph_size) {
  std::vector<NodeId> out;
  const auto add = [&](NodeId r) {
    if (r < graph_size && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  };
  for (const auto& a : n.args) model::for_each_ref(a, add);
  for (const auto& k : n.kwargs) model::for_each_ref(k.value, add);
  return out;
}

class SetClassifier {
 public:
  SetClassifier(const RankGraphSet& set, const RankLayout& layout)
      : set_(set), norm_(set.normalization()), layout_(layout), b_(layout) {}

  GraphClassification run() {
    members_ = set_.members();
    for (std::size_t i = 0; i < members_.size(); ++i)
      b_.add_rank(members_[i]->fingerprint, members_[i]->rank, i);
    const auto& m0 = *members_[b_.representative(0)];
    if (m0.is_base) {
      a_ = &m0.base->graph;
    } else {
      own_a_ = set_.materialize(m0);
      a_ = &own_a_;
    }
    na_ = std::make_unique<NormalizedGraph>(*a_, norm_, layout_.local_device(m0.rank));
    b_.set_first(*na_);
    fast_ = m0.is_base && !norm_.renumber_symbols && m0.base->refs_backward && m0.base->distinct_names &&
            set_.ranks_per_node() == layout_.ranks_per_node;
    if (fast_) edges_ = std::make_unique<model::UseEdges>(*a_);
    for (std::size_t g = 1; g < b_.groups(); ++g) compare_group(g);
    return b_.finish();
  }

 private:
  bool patches_align(const RankGraphSet::Member& m) const {
    for (std::size_t k = 0; k < m.patched.size(); ++k) {
      const NodeId at = m.patched[k];
      const auto& n = m.patches.nodes[k];
      if (m.patches.str(n.name) != a_->node_name(at)) return false;
      bool backward = true;
      const auto check = [&](NodeId r) { backward = backward && r < at; };
      for (const auto& v : n.args) model::for_each_ref(v, check);
      for (const auto& kw : n.kwargs) model::for_each_ref(kw.value, check);
      if (!backward) return false;
    }
    return true;
  }

  void compare_group(std::size_t g) {
    const auto& m = *members_[b_.representative(g)];
    if (fast_ && !m.is_base && m.base == members_[b_.representative(0)]->base && patches_align(m)) {
      compare_patched(g, m);
      return;
    }
    Graph built;
    if (!m.is_base) built = set_.materialize(m);
    b_.compare_whole(g,
                     NormalizedGraph(m.is_base ? m.base->graph : built, norm_, layout_.local_device(m.rank)));
  }

  // The representative as its patches: only patched nodes and the users of nodes that leave
  // their position are compared; every other node equals the first representative's.
  void compare_patched(std::size_t g, const RankGraphSet::Member& m) {
    const std::size_t n = a_->nodes.size();
    Excerpt ex(m);
    std::vector<NodeId> here;
    for (const NodeId at : m.patched) here.push_back(ex.whole(at));
    std::vector<PatchedNode> patched;
    {
      const NormalizedGraph first(ex.graph(), norm_, layout_.local_device(m.rank));
      for (std::size_t k = 0; k < m.patched.size(); ++k) {
        patched.push_back({m.patched[k], first.content_hash(here[k]), first.op_hash(here[k]),
                           inputs_of(m.patches.nodes[k], n)});
      }
    }
    const auto al = align_patched(*na_, *edges_, patched);
    std::vector<NodeId> compared;
    for (const auto& [x, y] : al.changed) {
      if (y == kNoNode) b_.note_absent(g, x);
      for (const NodeId u : edges_->users(x)) {
        if (al.a_to_b(u) != kNoNode) compared.push_back(u);
      }
    }
    for (const NodeId at : m.patched) {
      if (al.a_to_b(at) != kNoNode) compared.push_back(at);
    }
    std::sort(compared.begin(), compared.end());
    compared.erase(std::unique(compared.begin(), compared.end()), compared.end());
    for (const NodeId x : compared) ex.whole(al.a_to_b(x));
    const NormalizedGraph b(ex.graph(), norm_, layout_.local_device(m.rank));
    const auto refs_equal = [&](NodeId x, NodeId y) { return x < n && al.a_to_b(x) == ex.position(y); };
    for (const NodeId x : al.moved) b_.note_moved(g, x);
    for (const NodeId x : compared)
      b_.note_diffs(g, x, b, diff_nodes(*na_, x, b, ex.here(al.a_to_b(x)), refs_equal));
    for (const NodeId j : al.b_unmatched) b_.note_extra(g, node_finding(ex.graph(), ex.here(j), "node"));
  }

  const RankGraphSet& set_;
  const GraphNormalization& norm_;
  const RankLayout& layout_;
  RankClassificationBuilder b_;
  std::vector<const RankGraphSet::Member*> members_;
  const Graph* a_ = nullptr;  // the first group's representative
  Graph own_a_;               // ... when it had to be rebuilt
  std::unique_ptr<NormalizedGraph> na_;
  std::unique_ptr<model::UseEdges> edges_;
  bool fast_ = false;
};

}  // namespace

GraphClassification classify_rank_set(const RankGraphSet& set, const RankLayout& layout) {
  if (set.members().empty()) return {};
  return SetClassifier(set, layout).run();
}

}  // namespace gparity::diff
