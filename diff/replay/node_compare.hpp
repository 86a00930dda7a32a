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
//  - counts of compared, divergent and unmatched nodes;
//  - where a side's records stop short (they end its rank file before the graph ends: a rank
//    killed mid-replay, a cut file): what lies past them is not compared, never divergent, and
//    the graph is INCOMPLETE (NodeRecordsCut); a graph a side declares (its "graph" record) but
//    recorded no node of is INCOMPLETE too, not a divergence.
// What both records of an output carry is compared: XXH3-64 only when both have it (a run
// recorded with `--node-hash shard` against one with `both` compares the shard hash, and says
// so), the shard hash when both have it, dtype and shape always. A view (issue 24: a record with
// no hash that names its base, the hashed tensor it lies in) follows its base: it differs when
// an input (its base) differs, and otherwise only when both sides place it differently in bases
// of the same layout (offset or strides: a slice at another offset reads other elements of an
// equal base, so it is the origin there).
// Findings go to the FindingConsumer interface (finding.hpp), so every reporter shows them.
// The results are node_results.hpp's values; node_causality.hpp classifies them across ranks and
// node_findings.hpp turns them into findings. This header includes both for its callers.
// The records are the trace reader's (model::NodeRecord in RankTrace::nodes); a damaged node
// record is one of the reader's issues (a corrupt line, reported by compare_runs) and costs only
// itself.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "core/model/run/trace_reader.hpp"
#include "diff/replay/node_causality.hpp"
#include "diff/replay/node_findings.hpp"
#include "diff/replay/node_results.hpp"
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

/// One side of one graph: its records and, when it could be loaded, its graph. `ends_file`: they
/// are the last node records of its rank file, where a rank killed mid-replay leaves them short
/// (NodeRecordsCut).
struct NodeSide {
  std::span<const model::NodeRecord> records;
  const model::Graph* graph = nullptr;
  bool ends_file = false;
};

NodeGraphResult compare_node_graph(const std::string& label, const NodeSide& a, const NodeSide& b,
                                   const NodeCompareOptions& o = {});

/// What compare_node_graph compared, for the evidence rule (diff/report/evidence.hpp): each side's
/// records (node records and output records, as the caller counts them) and the nodes with
/// records on both sides plus `outputs_compared`. Neither side holding a record is never parity.
Evidence node_evidence(const NodeGraphResult& r, const std::string& a_label, std::size_t a_records,
                       const std::string& b_label, std::size_t b_records, std::size_t outputs_compared = 0);

/// Compares the node records of one rank of two runs (no records on either side: empty result).
NodeRankResult compare_node_records(const model::RankTrace& a, const std::string& run_a,
                                    const model::RankTrace& b, const std::string& run_b, int rank,
                                    const NodeCompareOptions& o = {});

}  // namespace gparity::diff
