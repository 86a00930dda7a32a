#pragma once
// Cross-rank causality (issue 22): one causal order over the per-rank records being compared
// (node records of `gparity replay` and of `gparity compare` on replay runs; op records next),
// and the classification of every divergent record.
//
// The order: within a rank, records are in program order (graphs in run order, topological order
// inside a graph) and a record reads earlier records of its rank (`inputs`). Across ranks, a
// collective's outputs on every member come after every member's inputs to it: instances are
// matched by process group and per-group sequence number (the k-th collective a rank issues on
// group G meets the k-th of every other member of G, as `gparity collectives` matches them); a
// point-to-point receive meets the k-th send from its source to it in the group.
//
// A divergent record (its outputs differ between baseline and candidate) is
//  - origin: every input it reads compared equal, and for a collective every member's inputs
//    did: the divergence starts here;
//  - propagated: an input on this rank already differed (for a graph input: an earlier graph of
//    the rank diverged, e.g. the forward before the backward);
//  - received: a collective whose inputs are equal on this rank while some members' are not:
//    the members, the group, the collective and the origin whose damage reached them are named;
//  - input: a graph input with no earlier divergence on the rank (the graph was fed other values);
//  - unknown: the evidence cannot tell: no graph gives its inputs, the collective was not seen
//    on every member of its group, the ranks issue their collectives in different orders, or its
//    group has different rank sets in the two sides' tables. Such a record is never an origin,
//    and what made it unknown is also a finding (problems) naming the collective, group and ranks.
// Every divergence carries the origin whose damage it carries (for an origin, itself).
//
// Value types in, value types and findings out: nothing here reads files, graphs or LibTorch
// (graph_comm.hpp turns graphs and process-group tables into these records).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diff/report/finding.hpp"

namespace gparity::diff::causality {

enum class Cause : std::uint8_t { Origin, Propagated, Received, Input, Unknown };
/// "origin", "propagated", "received", "input", "unknown".
std::string_view cause_name(Cause c) noexcept;

/// How a record takes part in communication with other ranks.
struct Comm {
  enum class Kind : std::uint8_t { Collective, Send, Recv };
  Kind kind = Kind::Collective;
  /// The process group as the records name it ("3"); legacy rank-list collectives: "ranks:0,1".
  std::string group;
  std::int64_t peer = -1;  // Send: the destination rank, Recv: the source rank (global ranks)
};

/// One record of one rank (a graph node, an op): what it is, what it reads, whether it differs.
struct Record {
  std::string graph;  // label of the graph (or stream) it belongs to
  std::string node;   // name
  std::string op;
  std::string source;               // "file:line" of user code, or empty
  std::vector<std::size_t> inputs;  // earlier records of the same rank that it reads
  bool inputs_known = true;         // false: no graph says what it reads
  bool compared = true;             // false: no records on one side; a difference passes through
  bool differs = false;             // its outputs differ between the two sides
  bool graph_input = false;         // a placeholder of its graph
  std::optional<Comm> comm;
};

struct RankRecords {
  int rank = 0;
  std::vector<Record> records;  // program order
};

struct Group {
  std::vector<int> ranks;  // global ranks, ascending
  std::string desc;        // "mesh_tp", "default_pg", or empty
};
/// Process groups by name.
using GroupTable = std::map<std::string, Group>;

/// "tp '3'" from desc "mesh_tp", "'3'" without a description.
std::string group_text(const std::string& name, const std::string& desc);

/// The record where a divergence started (cause origin, input or unknown).
struct OriginRef {
  int rank = -1;
  std::size_t record = 0;
  std::string graph, node, op, source;
  Cause cause = Cause::Origin;
  /// "slice_1 at /workspace/coor.py:20" (op instead of the source when there is none).
  [[nodiscard]] std::string text() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

struct Classification {
  Cause cause = Cause::Unknown;
  std::vector<std::string> differing_inputs;  // propagated: inputs on this rank that already differed
  std::string after_graph;                    // propagated graph input: the earlier graph that diverged
  // A collective or point-to-point record: its instance.
  std::string group, group_desc;
  std::int64_t sequence = -1;   // per-group sequence number on this rank (p2p: k-th to/from peer)
  std::vector<int> from_ranks;  // received: the members whose inputs differed
  /// The origin whose damage this record carries (itself for an origin). A received record names
  /// the origin its sender's own finding names: that rank's first origin in the graph (stream)
  /// where the damage started.
  OriginRef origin;
  /// Received: the origin whose damage fed the collective, when the sender has several there and
  /// it is not the first (rank 1's first origin slice_6, its second slice_scatter_1 feeding the
  /// all-reduce); empty otherwise.
  std::optional<OriginRef> through;
  std::string why_unknown;  // unknown: what the evidence lacks
  /// One clause: "origin: its inputs were equal", "received at all_reduce_1 (group tp '3') from
  /// rank 1, origin slice_1 at /workspace/coor.py:20" (", reaching all_reduce_1 through slice_2
  /// at ..." when `through` is set), "propagated: input mm already differed".
  /// `node`: the record's name, `rank`: its rank (an origin on another rank is named with it).
  [[nodiscard]] std::string text(std::string_view node, int rank) const;
  /// {cause, origin: {rank, graph, node, op, source}, group, group_desc, sequence, from_ranks,
  /// through (received, when set), ...}.
  [[nodiscard]] nlohmann::json to_json() const;
};

struct RankResult {
  int rank = 0;
  std::map<std::size_t, Classification> divergent;  // by record index
};

struct Result {
  std::vector<RankResult> ranks;  // in the order of the input
  /// Every record whose cause is origin, in causal order (the order the walk resolved them).
  std::vector<OriginRef> origins;
  /// What the evidence lacks or contradicts, by name: "causality_collective_unmatched" and
  /// "causality_order_mismatch" (Incomplete), "causality_group_mismatch" (Error).
  std::vector<Finding> problems;
  [[nodiscard]] const Classification* find(int rank, std::size_t record) const;
  /// Ranks with at least one origin, ascending.
  [[nodiscard]] std::vector<int> origin_ranks() const;
};

/// Classifies every divergent record of `ranks` (each rank at most once). `baseline` and
/// `candidate` are the two sides' group tables: a group whose rank sets differ between them is a
/// problem, and its collectives' divergences are unknown. A group in neither table has as
/// members the ranks whose records name it (a legacy "ranks:..." group: those ranks).
Result classify(std::span<const RankRecords> ranks, const GroupTable& baseline, const GroupTable& candidate);
inline Result classify(std::span<const RankRecords> ranks, const GroupTable& groups) {
  return classify(ranks, groups, groups);
}

/// The records as JSON and back (ranks exchange them during `gparity replay`); from_json throws
/// std::invalid_argument on a document it cannot use.
nlohmann::json to_json(const RankRecords& r);
RankRecords rank_records_from_json(const nlohmann::json& j);
nlohmann::json to_json(const GroupTable& t);
GroupTable group_table_from_json(const nlohmann::json& j);

}  // namespace gparity::diff::causality
