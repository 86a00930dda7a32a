#pragma once
// Every rank's version of one graph, held as one graph plus what differs (issue 25: `graph ranks`
// at 256 ranks and beyond). Ranks' graphs are nearly identical: the same nodes up to the rank's
// own device, and a few rank parameters. A graph added here is compared node by node, position
// by position, with a base graph (the first one added, or another base when it is structurally
// different); a node equal to the base's node up to the local device (cuda:<base's local> in
// the base where cuda:<this rank's local> is here, in device literals, 'cuda:k' strings and
// annotations) is shared, and only the other nodes are kept, with their positions. A graph that
// shares fewer than 3/4 of its nodes with every base becomes a base itself. Each graph's
// fingerprint (model::fingerprint under the rank's normalization, as classify_ranks groups by)
// is computed from the base's bytes and the patched nodes' bytes.
//
// Sharing is exact: materialize(rank) gives back the graph that was added, node for node. It
// is also conservative: a node is shared only when every normalization of diff/ (fingerprint,
// content hash, field diff) sees it exactly as it sees the base's node, so a classifier may take
// a shared node for the base's (classify_rank_set in rank_classify.hpp does). A node with a
// device index equal to the other rank's local device, a non-cuda device literal equal to the
// local device, a 'cuda:k' string not spelled as the fingerprint spells it, or an annotation text
// naming a cuda device is never shared.
//
// add() is thread-safe, so rank files can be read in parallel; which graphs become bases depends
// on the order they arrive in, the contents do not.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "diff/graphs/graph_normalize.hpp"
#include "diff/graphs/rank_text.hpp"

namespace gparity::diff {

class RankGraphSet {
 public:
  /// `ranks_per_node` as RankLayout's: the local device is rank % ranks_per_node (0: the rank).
  RankGraphSet(GraphNormalization norm, std::int32_t ranks_per_node);
  RankGraphSet(const RankGraphSet&) = delete;
  RankGraphSet& operator=(const RankGraphSet&) = delete;
  RankGraphSet(RankGraphSet&&) = delete;
  RankGraphSet& operator=(RankGraphSet&&) = delete;
  ~RankGraphSet();

  /// A graph's FX payload text and the log line of its first line.
  struct PayloadText {
    std::string_view text;
    std::int64_t first_line = 1;
  };

  /// Adds `rank`'s graph (each rank once): its patched nodes, or a copy when it becomes a base.
  /// Thread-safe. The caller drops the graph (freeing a 100,000-node graph costs about what
  /// comparing it does: it belongs to reading it). `text`: the payload `graph` was parsed from,
  /// without problems; the first base keeps it, so that later ranks may be added by add_text.
  void add(std::int32_t rank, const model::Graph& graph, const PayloadText* text = nullptr);

  /// Adds `rank`'s graph from its payload text compared with the first base's
  /// (diff/graphs/rank_text.hpp): only the statements that differ are parsed. The same member
  /// add() gives for the parsed graph. false (nothing added) when the text must be parsed whole
  /// and given to add(). Thread-safe.
  bool add_text(std::int32_t rank, const PayloadText& text);

  struct Base {
    model::Graph graph;
    std::optional<std::int32_t> local;  // the local device it was normalized with
    std::string header_bytes;           // fingerprint bytes: header, then node by node
    std::string node_bytes;
    std::vector<std::size_t> node_offsets;  // node i: node_bytes[offsets[i], offsets[i+1])
    bool refs_backward = true;              // every node refers only to earlier nodes
    bool distinct_names = true;
    std::unique_ptr<RankPayloadTemplate> text;  // the payload it was read from (the first base)
  };
  struct Member {
    std::int32_t rank = 0;
    std::optional<std::int32_t> local;
    std::uint64_t fingerprint = 0;
    const Base* base = nullptr;
    bool is_base = false;                // the graph is base->graph itself
    std::vector<model::NodeId> patched;  // positions whose node differs from the base's, ascending
    model::Graph patches;                // those nodes, in that order; references by position
    bool from_text = false;              // added by add_text: only its differing statements parsed
  };

  /// Members sorted by rank (call after every add()).
  [[nodiscard]] std::vector<const Member*> members() const;
  /// The graph `m` was added as, rebuilt.
  [[nodiscard]] model::Graph materialize(const Member& m) const;
  [[nodiscard]] const GraphNormalization& normalization() const noexcept { return norm_; }
  [[nodiscard]] std::int32_t ranks_per_node() const noexcept { return ranks_per_node_; }
  [[nodiscard]] std::size_t base_count() const;
  [[nodiscard]] std::size_t patched_nodes() const;  // over all members

 private:
  [[nodiscard]] std::optional<std::int32_t> local_of(std::int32_t rank) const noexcept;
  std::unique_ptr<Base> make_base(model::Graph graph, std::optional<std::int32_t> local) const;
  /// The member's fingerprint from its base's bytes and its patched nodes' bytes.
  [[nodiscard]] std::uint64_t patched_fingerprint(const Member& m) const;
  void push(Member m);

  GraphNormalization norm_;
  std::int32_t ranks_per_node_ = 0;
  mutable std::mutex mutex_;
  std::deque<std::unique_ptr<Base>> bases_;
  std::deque<Member> members_;
};

/// Copies node `n` of `from` into `to` (strings interned there), device index `from_local`
/// written `to_local` (device literals, annotations, 'cuda:k' strings spelled as the fingerprint
/// spells them), node references mapped through `ref`.
model::Node copy_node(const model::Graph& from, const model::Node& n, model::Graph& to,
                      std::optional<std::int32_t> from_local, std::optional<std::int32_t> to_local,
                      const std::function<model::NodeId(model::NodeId)>& ref);

}  // namespace gparity::diff
