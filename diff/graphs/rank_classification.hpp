#pragma once
// What both graph-ranks classifiers share (internal to diff/graphs): classify_ranks over whole
// graphs and classify_rank_set over a RankGraphSet differ only in how they reach each group's
// representative (built whole, or as patches of a shared base); everything else is this one
// builder, so that they give the same groups, findings (in the same order) and verdict by
// construction. The builder groups ranks by fingerprint, keeps a slot per (node of the first
// representative, field path) whose values differ between groups, the nodes each group lacks,
// moves or adds, and turns them into findings: a slot's per-rank values are device-, rank- or
// process-group-parametric or divergent (rank_layout.hpp fits the functions); a node some group
// lacks or adds is "node" present/absent, one it moves is "order" moved/in order.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "diff/graphs/graph_normalize.hpp"
#include "diff/graphs/rank_findings.hpp"
#include "diff/graphs/rank_layout.hpp"

namespace gparity::diff {

/// A finding about node x of g (its name, target, source and graph line), field still to judge.
RankFinding node_finding(const model::Graph& g, model::NodeId x, std::string field);

/// A slot's value on one group's representative, kept by value: representatives other than the
/// first may be built, compared and dropped one at a time.
struct RankSlotValue {
  bool set = false;
  std::string text;
  bool has_value = false;  // false: a field with no value (meta, a missing argument): text only
  model::ValueKind kind = model::ValueKind::None;
  std::int64_t i = 0;
  std::optional<std::int32_t> device;  // device index when the value is a device
  bool local = false;                  // ... and it is the representative's local device
};

class RankClassificationBuilder {
 public:
  explicit RankClassificationBuilder(const RankLayout& layout) : layout_(layout) {}

  /// The next rank (in rank order) and its graph's fingerprint; a new fingerprint opens a group
  /// whose representative is this rank's graph (`index`: the caller's position of it).
  void add_rank(std::uint64_t fingerprint, std::int32_t rank, std::size_t index);
  [[nodiscard]] std::size_t groups() const noexcept { return out_.groups.size(); }
  /// The caller's index of group g's representative.
  [[nodiscard]] std::size_t representative(std::size_t g) const { return rep_[g]; }

  /// The first group's representative, which the others are compared against (after the
  /// grouping; kept by reference until finish()).
  void set_first(const NormalizedGraph& a);
  /// Group g's representative `b`, whole, against the first one (align_graphs); `b` may go after.
  void compare_whole(std::size_t g, const NormalizedGraph& b);

  // What compare_whole notes, for a comparison of its own (classify_rank_set's patched one).
  // Absent nodes of a group are noted in increasing order.
  void note_absent(std::size_t g, model::NodeId x) { absent_[g].push_back(x); }
  void note_moved(std::size_t g, model::NodeId x) { moved_[x].push_back(g); }
  void note_extra(std::size_t g, RankFinding f) { extra_[g].push_back(std::move(f)); }
  void note_diffs(std::size_t g, model::NodeId x, const NormalizedGraph& b, std::vector<FieldDiff> diffs);

  /// The classification: device literals equal to the local device, every slot's class, node
  /// findings in graph order, the verdict.
  GraphClassification finish();

 private:
  struct Slot {
    std::vector<RankSlotValue> per_group;
  };
  using SlotKey = std::pair<model::NodeId, std::string>;

  static RankSlotValue own(const NormalizedGraph& ng, const model::Value* v, std::string text);
  Slot& slot(model::NodeId x, const std::string& path);
  [[nodiscard]] bool matched_in(std::size_t group, model::NodeId x) const;
  void device_slots();
  void classify_slot(const SlotKey& key, const Slot& s);
  void presence(RankFinding f, const std::vector<bool>& present_in_group);
  void node_findings();

  const RankLayout& layout_;
  GraphClassification out_;
  std::unordered_map<std::uint64_t, std::size_t> groups_by_fingerprint_;
  std::vector<std::size_t> rep_;  // the caller's index per group
  const NormalizedGraph* a_ = nullptr;
  std::vector<std::vector<model::NodeId>> absent_;  // per group: first-representative nodes it lacks
  std::vector<std::vector<RankFinding>> extra_;     // per group: its nodes the first one lacks
  std::map<SlotKey, Slot> slots_;
  std::vector<SlotKey> slots_key_order_;
  std::map<model::NodeId, std::vector<std::size_t>> moved_;
};

}  // namespace gparity::diff
