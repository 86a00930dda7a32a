#pragma once
// Node-record comparison (`gparity compare RUN_A RUN_B` on replay runs): `gparity replay` writes
// one "node" record per tensor a graph node produces (graph, node, op, source, output index,
// dtype, shape, XXH3-64 and shard-invariant hash) and a "graph" record naming the graph it ran
// (docs/replay.md, "Node comparison"). Per rank and graph, the two runs' nodes are aligned
// through diff/graph_align (names, then structure: a renamed node still pairs) when both graphs
// can be loaded, by name otherwise, and walked in topological order. Reported:
//  - the first divergent node, with op, source line, the differing output and its hashes, and
//    its cause: `origin` (every input it reads compared equal: the divergence starts here),
//    `propagated` (an input already differed; for a graph input: an earlier graph of the rank
//    diverged, e.g. forward before backward), `input` (a placeholder, no earlier divergence: the
//    graph was fed different values), `unknown` (no graph to tell inputs from). Inputs without
//    records (placeholders the interpreter does not hash, symbolic sizes) count as equal and are
//    listed;
//  - every other origin (independent divergences), up to a limit;
//  - counts of compared, divergent and unmatched nodes.
// What both records of an output carry is compared: XXH3-64 only when both have it (a run
// recorded with `--node-hash shard` against one with `both` compares the shard hash, and says
// so), the shard hash when both have it, dtype and shape always. A view (issue 24: a record with
// no hash that names its base, the hashed tensor it lies in) follows its base: it differs when
// an input (its base) differs, and otherwise only when both sides place it differently in bases
// of the same layout (offset or strides: a slice at another offset reads other elements of an
// equal base, so it is the origin there).
// Findings go to the FindingConsumer interface (finding.hpp), so every reporter shows them.
// The records are the trace reader's (model::NodeRecord in RankTrace::nodes); a damaged node
// record is one of the reader's issues (a corrupt line, reported by compare_runs) and costs only
// itself.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "core/model/run/trace_reader.hpp"
#include "diff/causality/causality.hpp"
#include "diff/report/evidence.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff {

/// One rank's node records, grouped per graph label in order of first appearance, records in
/// file order (the order the interpreter ran them).
struct NodeRecordGraph {
  std::string label;
  std::vector<model::NodeRecord> records;
};
struct RankNodeRecords {
  std::vector<NodeRecordGraph> graphs;
  [[nodiscard]] bool empty() const noexcept { return graphs.empty(); }
  [[nodiscard]] const NodeRecordGraph* find(std::string_view label) const noexcept;
};
RankNodeRecords node_records_of(const model::RankTrace& t);

/// The graph a label names: the rank file's "graph" record whose `name` (extra field) equals the
/// label, else whose "kind compile_id" or kind equals it; loaded from `run_dir`/path through
/// model::load_graphs (selected by kind, compile id, and rank: the record's `rank` field, else
/// the trace's rank when the source has ranks), its path in `path`. nullopt with `problem` set
/// when there is no such record or the graph cannot be loaded.
std::optional<model::Graph> load_record_graph(const std::string& run_dir, const model::RankTrace& t,
                                              const std::string& label, std::string& path,
                                              std::string& problem);

/// Received: a collective whose inputs were equal on this rank but not on some member's (set by
/// classify_node_ranks, the cross-rank classification; compare_node_graph alone sees one rank).
enum class DivergenceCause : std::uint8_t { Origin, Propagated, Input, Unknown, Received };
std::string_view divergence_cause_name(DivergenceCause c) noexcept;  // "origin", "propagated", ...
DivergenceCause divergence_cause_of(causality::Cause c) noexcept;

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
};

struct NodeCompareOptions {
  std::size_t max_origins = 10;  // per graph, origins beyond `first` that get findings
};

/// One side of one graph: its records and, when it could be loaded, its graph.
struct NodeSide {
  std::span<const model::NodeRecord> records;
  const model::Graph* graph = nullptr;
};

NodeGraphResult compare_node_graph(const std::string& label, const NodeSide& a, const NodeSide& b,
                                   const NodeCompareOptions& o = {});

/// What compare_node_graph compared, for the evidence rule (diff/report/evidence.hpp): each side's
/// records (node records and output records, as the caller counts them) and the nodes with
/// records on both sides plus `outputs_compared`. Neither side holding a record is never parity.
Evidence node_evidence(const NodeGraphResult& r, const std::string& a_label, std::size_t a_records,
                       const std::string& b_label, std::size_t b_records, std::size_t outputs_compared = 0);

struct NodeRankResult {
  int rank = 0;
  std::vector<NodeGraphResult> graphs;
  std::vector<Finding> problems;  // graphs on one side only, graphs not loadable
  [[nodiscard]] bool empty() const noexcept { return graphs.empty() && problems.empty(); }
};

/// Compares the node records of one rank of two runs (no records on either side: empty result).
NodeRankResult compare_node_records(const model::RankTrace& a, const std::string& run_a,
                                    const model::RankTrace& b, const std::string& run_b, int rank,
                                    const NodeCompareOptions& o = {});

/// Cross-rank causality over the node results of every rank (diff/causality): each rank's
/// graphs in record order, collectives matched by group and per-group sequence number, with
/// the two sides' group tables. Sets every divergence's `cross_rank` and cause (a divergence
/// whose inputs were equal here but not on a member of its collective is received), and
/// recomputes `origins` and `other_origins`. Returns the problems found ("causality_*" findings:
/// collectives seen on only some members, group tables that differ).
std::vector<Finding> classify_node_ranks(std::span<NodeRankResult> ranks,
                                         const causality::GroupTable& baseline,
                                         const causality::GroupTable& candidate,
                                         const NodeCompareOptions& o = {});

/// Findings (kinds "node_divergence" for each first divergent node, "node_origin" for further
/// origins; values hold the node, op, source, cause, both records and "graph_path" for viewers),
/// "node_unmatched" info, "node_graph_missing" / "node_graph_unavailable" problems) and one check per graph
/// ("nodes <graph>"), appended in a deterministic order.
void node_findings(const NodeRankResult& r, std::vector<Finding>& findings, std::vector<Check>& checks);

/// The cause of a divergence as one clause: "origin: its inputs were equal", "propagated: input mm
/// already differed", "received at all_reduce (group tp '3') from rank 1, origin slice_1 at
/// train.py:20"; `rank` is the divergence's (an origin elsewhere is named with its rank).
std::string divergence_cause_text(const NodeDivergence& d, int rank);

/// Per-rank summary for the verdict: {"graphs": n, "compared": n, "divergent": n, "first": {...}}.
nlohmann::json node_summary(const NodeRankResult& r);
/// "rank 1: first divergent node slice_1 (aten.slice.Tensor, train.py:42) in aot_forward_graph 0/0,
/// origin"; a received one: "rank 0: received at all_reduce (group tp '3') from rank 1, origin
/// slice_1 at train.py:42 (first divergent node of aot_forward_graph 0/0)"; "" when no node diverges.
std::string node_summary_line(const NodeRankResult& r);

}  // namespace gparity::diff
