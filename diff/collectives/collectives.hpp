#pragma once
// Collective sequences (`gparity collectives`, graph-diff issue): per rank, the collectives a run
// issued, read from Flight Recorder dumps (one stream per process group, in collective_seq_id
// order) and from TORCH_TRACE graphs (one stream per graph that has `_c10d_functional` nodes,
// wait_tensor included, in graph order). Two questions are answered:
//  - do all ranks of a stream issue the same sequence (kind, sizes, dtypes)? the first mismatch
//    is named;
//  - against a baseline run: which collectives were reordered (a permutation per block, never
//    deletes plus inserts), changed (same slot, other kind/sizes/dtypes), added or removed.
// Results go to a FindingConsumer (diff/report/finding.hpp); nothing here formats for a terminal.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/formats/flight_recorder.hpp"
#include "core/model/graph/graph.hpp"
#include "diff/report/finding.hpp"

namespace gparity::diff {

struct CollectiveOp {
  std::string kind;                       // "all_reduce", "_reduce_scatter_base", "wait_tensor"
  std::string params;                     // scalar arguments other than the group ("sum", "2")
  std::vector<std::string> input_shapes;  // "[49200]", "[4, 64, s0]", "?" when not annotated
  std::vector<std::string> input_dtypes;  // canonical names ("float32")
  std::vector<std::string> output_shapes;
  std::vector<std::string> output_dtypes;
  std::string group;  // process-group name
  std::string state;  // Flight Recorder: "scheduled", "started", "completed"; "" for graphs
  /// Point-to-point (Flight Recorder `is_p2p`): "send" / "recv" with the peers its profiling
  /// name gives ("nccl:send 0->1", "nccl:recv 1<-0"; -1 when not given). P2P ops are paired
  /// send-to-recv across ranks instead of compared position by position.
  bool p2p = false;
  std::int64_t src = -1, dst = -1;
  std::int64_t seq = 0;      // Flight Recorder collective_seq_id; 0 for graphs
  std::int64_t record = -1;  // Flight Recorder record_id: the rank's issue order across groups
  std::string where;         // "record 12" or the node name
  std::int64_t line = 0;     // the node's line in the log (graphs)
  /// Where the program issued it (Flight Recorder frames): the first frame outside torch and
  /// other installed packages, "fn (file:line)"; "" when the dump has no frames.
  std::string site;
  /// The call site's file and line, as the dump holds them ("" / 0 when it has no frames).
  std::string site_path;
  std::int64_t site_line = 0;
  /// A Flight Recorder entry issued by Inductor's output code: the graph node(s) the code names
  /// at its call site, from the run's TORCH_TRACE (diff/collectives/output_code_sites.hpp).
  std::string node;
  /// What ranks must agree on: kind, params, shapes and dtypes (not the group name, not where).
  [[nodiscard]] std::string signature() const;
};

struct CollectiveStream {
  std::string name;                 // "pg 0 (default_pg)" or "0/0 aot_joint_graph"
  std::vector<std::int64_t> ranks;  // the process group's ranks; empty: every rank of the run
  std::vector<CollectiveOp> ops;
  /// Flight Recorder streams: the process group's name and the dump's pg_status for it (the
  /// last sequence numbers enqueued / started / completed; -1 when the dump has none).
  std::string group;
  model::ProcessGroupStatus status;
  [[nodiscard]] bool flight_recorder() const noexcept { return name.starts_with("pg "); }
  /// `group`, or for a stream built without it, its ops' group.
  [[nodiscard]] const std::string& process_group() const noexcept {
    return !group.empty() || ops.empty() ? group : ops.front().group;
  }
};

struct RankCollectives {
  std::int32_t rank = 0;
  std::vector<std::string> sources;
  std::vector<CollectiveStream> streams;
  /// Inputs a reader claimed but found none of its kind in ("x.pkl is a pickle but holds no
  /// Flight Recorder entries (a list)"): the rank's evidence is missing, not empty and agreeing.
  std::vector<std::string> nothing;
  bool flight_recorder = false;  // a Flight Recorder dump of this rank was read (even an empty one)
  [[nodiscard]] const CollectiveStream* find(std::string_view name) const noexcept;
};

struct CollectiveRun {
  std::string path;
  std::vector<RankCollectives> ranks;  // ascending rank
  std::vector<std::string> problems;   // damage reported by the readers (the rest is used)
  [[nodiscard]] const RankCollectives* rank(std::int32_t r) const noexcept;
};

/// The functional collectives of a graph and its subgraphs (nullopt-free: an empty stream when
/// there are none).
CollectiveStream collectives_from_graph(const model::Graph& g, std::string name);
/// One stream per process group of the dump, entries in issue order.
std::vector<CollectiveStream> collectives_from_flight_recorder(const model::FlightRecorderDump& d);

/// Reads every PATH (run folders with rank<r>_flight_recorder.json and/or TORCH_TRACE logs, in
/// the folder or its trace/ subfolder; single dumps; single logs) into one run. Flight Recorder
/// entries issued from Inductor's output code are named with their graph node when a folder's
/// TORCH_TRACE holds that code (name_output_code_nodes). Files are told
/// by content (core/model/formats/format_detect.hpp), never by name: a file that is none of
/// the formats tried (kCollectiveFormats) throws InputError naming it and them; a pickle or a
/// dump that holds no Flight Recorder entries, or a log with no collectives, yields a rank with
/// no collectives and says why (RankCollectives::nothing). Throws InputError when a path holds
/// neither.
CollectiveRun load_collectives(std::span<const std::string> paths);

/// The formats `gparity collectives` reads, for messages.
inline constexpr std::string_view kCollectiveFormats[] = {"Flight Recorder JSON dump",
                                                          "Flight Recorder pickle", "TORCH_TRACE log"};

/// Baseline-to-candidate alignment of one stream. Ops with equal signatures pair in occurrence
/// order; pairs off the longest increasing run of candidate positions are reordered, reported as
/// blocks (minimal runs of the baseline order that the candidate permutes among themselves);
/// unpaired ops between the same anchors pair as changes, the rest are added or removed.
struct SequenceDiff {
  struct Pair {
    std::size_t a = 0, b = 0;
  };
  struct Reordering {
    std::vector<std::size_t> a;  // baseline positions of the block, ascending
    std::vector<std::size_t> b;  // their candidate positions, in the same order
    /// Permutation over the block: the candidate's order as 1-based baseline indices ("2 3 1").
    [[nodiscard]] std::string permutation() const;
  };
  std::vector<Pair> same;
  std::vector<Pair> changed;
  std::vector<std::size_t> removed;  // baseline positions
  std::vector<std::size_t> added;    // candidate positions
  std::vector<Reordering> reorderings;
  [[nodiscard]] bool identical() const noexcept {
    return changed.empty() && removed.empty() && added.empty() && reorderings.empty();
  }
};
/// Rooted collectives (scatter, gather): the root records the list side (one tensor per group
/// member) and the others a placeholder (`[0]`, unknown dtype), so root and non-root records
/// differ by design. True when `a` and `b` are the same rooted collective seen from a root and a
/// non-root (or two non-roots): equal kind and parameters, equal tensor side, and each list side
/// either the root's list of tensors shaped like the tensor side or a placeholder.
bool rooted_records_match(const CollectiveOp& a, const CollectiveOp& b);

SequenceDiff diff_sequences(std::span<const CollectiveOp> a, std::span<const CollectiveOp> b);

struct CollectiveOptions {
  /// The analyses across process groups (diff/collectives/schedule.hpp): order inversions, moves
  /// against the baseline, hangs and missing dumps. Off only to measure what they cost.
  bool schedules = true;
};

/// Checks every stream across the run's ranks and, with a baseline, each rank's streams against
/// the baseline's same rank; then the orders across process groups and, from dumps with
/// collectives not completed, the hang. Emits begin/finding/check/end to `out`; returns the exit
/// code (0 same, 1 differences or missing dumps).
int report_collectives(const CollectiveRun& run, const CollectiveRun* baseline, FindingConsumer& out,
                       const CollectiveOptions& options = {});

}  // namespace gparity::diff
