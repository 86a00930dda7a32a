#pragma once
// What node-record comparison (node_compare.hpp) finds, as values: per rank and graph, the
// first divergent node and further origins with their cause, the counts of compared, divergent
// and unmatched nodes, and the causal records the cross-rank classification (node_causality.hpp)
// reads. The reporters (node_findings.hpp), `gparity compare` and gparity-view show them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/run/trace_schema.hpp"
#include "diff/causality/causality.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff {

/// Received: a collective whose inputs were equal on this rank but not on some member's (set by
/// classify_node_ranks, the cross-rank classification; compare_node_graph alone sees one rank).
enum class DivergenceCause : std::uint8_t { Origin, Propagated, Input, Unknown, Received };
std::string_view divergence_cause_name(DivergenceCause c) noexcept;  // "origin", "propagated", ...

struct NodeDivergence {
  std::string node_a, node_b;             // names in A's and B's graph (differ when matched by structure)
  std::string op, source;                 // A's record
  std::size_t position = 0;               // in the topological order of A
  std::int64_t output = 0;                // the first differing output
  std::vector<std::string> fields;        // what differs there: "xxh3", "shard", "dtype", "shape",
                                          // "view" (where a view lies in its base), "missing"
  std::optional<model::NodeRecord> a, b;  // that output's records (absent when missing on a side)
  DivergenceCause cause = DivergenceCause::Unknown;
  std::vector<std::string> differing_inputs;   // A names of inputs that already differed
  std::vector<std::string> unrecorded_inputs;  // inputs with no records (taken as equal)
  std::string propagated_from;      // a graph input that differs after an earlier graph diverged: that graph
  std::string matched_by = "name";  // how the pair was aligned: "name", "structure", "sequence"
  /// Set by classify_node_ranks: the cause across ranks (for received: the members, group,
  /// collective and the origin that reached them; for every cause: the origin it carries).
  std::optional<causality::Classification> cross_rank;
};

/// Where one side's records of a graph stop short of the other's: they are the last node records
/// of its rank file and end before the graph does (a rank killed mid-replay, a cut rank file).
/// The outputs of its last node that it did not record, and the nodes after it, are not
/// compared: never divergent, and the graph's verdict is INCOMPLETE (`node_records_cut`).
struct NodeRecordsCut {
  bool candidate = true;            // the side whose records stop: candidate (B), else baseline (A)
  std::string last_node;            // its last recorded node (A's name) ...
  std::int64_t last_output = 0;     // ... and output
  std::size_t outputs_missing = 0;  // later outputs of that node recorded on the other side only
  std::size_t nodes_after = 0;      // nodes after it recorded on the other side only
  std::string first_after;          // the first of them (A's name)
  std::string file;                 // its rank file (set by compare_node_records)
};

struct NodeGraphResult {
  std::string graph;              // label
  std::string graph_path;         // the baseline's graph source, when a "graph" record names it
  bool aligned_by_graph = false;  // both graphs loaded: alignment by names and structure
  std::size_t compared = 0;       // nodes with records on both sides
  std::size_t divergent = 0;
  std::size_t origins = 0;
  std::size_t unmatched_a = 0, unmatched_b = 0;  // nodes with records on one side only
  /// Views (no hash on a side) whose verdict followed their base's: not counted in `compared`.
  std::size_t views = 0;
  /// Outputs compared whose XXH3-64 only one side carries: compared by the shard hash.
  std::size_t xxh3_one_side = 0;
  std::optional<NodeDivergence> first;
  std::vector<NodeDivergence> other_origins;  // origins after `first`, up to the limit
  /// Every node visited, in walk order (a divergence's `position`), as the cross-rank causal
  /// order reads it: what it reads, whether it was compared and differs, its collective.
  std::vector<causality::Record> causal;
  /// Every divergence whose inputs compared equal on this rank (`first` too when it is one), no
  /// limit: across ranks each is an origin, received, or unknown.
  std::vector<NodeDivergence> local_origins;
  std::vector<NodeRecordsCut> cuts;  // a side whose records stop short (at most one per side)
};

struct NodeCompareOptions {
  std::size_t max_origins = 10;  // per graph, origins beyond `first` that get findings
};

struct NodeRankResult {
  int rank = 0;
  std::vector<NodeGraphResult> graphs;
  std::vector<Finding> problems;  // graphs on one side only, graphs not loadable
  [[nodiscard]] bool empty() const noexcept { return graphs.empty() && problems.empty(); }
};

}  // namespace gparity::diff
