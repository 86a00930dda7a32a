#pragma once
// The orchestration of `gparity replay` (docs/replay.md) on one rank: the graph source loaded, the
// graphs this rank runs selected and hoisted to it (own and coor for --coor, a and b for
// --against, one graph otherwise), the GPU placement, the process groups, the run directory
// (manifest with the group table, graph JSON and "graph" records, node records), the runs (plain,
// timed reruns, or uncaptured and captured for --cuda-graph), and the end: the verdict event and
// line, the barrier, the --json summary.
//
// The verdict itself is diff/replay_verdict's (the runtime does not depend on diff/): the front
// end hands it the jobs' records, and this session the two things it needs from the ranks:
// exchange() (text through the rendezvous store) and run_alone() (--coor: the coor graph run
// again with every collective taking the result the own graph's had: its partners' correct
// inputs; the own run keeps those results for it).
//
// Bad input (a graph, node, op or input that cannot run; an unknown group) throws ReplayError or
// model::InputError naming it; a rank that stops throws RankFailure.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model/graph/graph_load.hpp"
#include "core/model/graph/hoist.hpp"
#include "core/model/graph/process_groups.hpp"
#include "core/model/run/trace_schema.hpp"
#include "core/runtime/launcher.hpp"

namespace gparity::runtime {

struct ReplayOptions {
  std::string source;
  std::string against;  // --against B
  bool coor = false;    // --coor
  std::string kind, against_kind, compile_id;
  std::optional<std::size_t> index;
  std::optional<int> rank;  // --rank R: every rank runs R's graph
  std::string device = "cpu";
  std::string out;  // run directory
  std::string inputs;
  std::uint64_t seed = 0;
  std::string int_range;
  bool per_rank_inputs = false;
  std::vector<std::string> syms;         // NAME=INTEGER
  model::ProcessGroupTable groups;       // --group, Flight Recorder dumps
  std::vector<std::string> group_dumps;  // the dumps the table was read from (manifest)
  bool no_hash = false;
  std::string node_hash;    // --node-hash shard|both|lazy; empty: node_hash_mode's default (issue 33)
  bool hash_views = false;  // --hash-views
  std::string node_hash_spec = "v2";           // --node-hash-spec v1|v2: the node records' shard hash spec
  std::string node_hash_stream = "same";       // --node-hash-stream same|side: where CUDA hashes run
  double node_hash_side_share = 0.25;          // --node-hash-side-share: the side stream's share of the GPU
  int node_hash_side_batch_mib = 64;           // --node-hash-side-batch: MiB a side-stream batch
  int node_hash_batch_mib = 1024;              // --node-hash-batch: MiB a batch on the graph's stream
  std::string node_hash_xxh3_chains = "host";  // --node-hash-xxh3-chains host|device: where XXH3's chains run
  int repeat = 0;                              // timed runs after the recorded one
  bool cuda_graph = false;
  int cuda_graph_warmup = 2;
  bool cuda_graph_check = false;
  bool json = false;
  double timeout_s = 120;
  int gpus = 0;                           // 0: every visible GPU
  std::vector<std::string> command_line;  // for the manifest
};

/// One graph this rank runs, as it runs it (hoisted to this rank), and what the run recorded.
struct ReplayJob {
  std::string label;  // its records' graph label: "own", "coor", "a", "b", the kind, "cuda-graph"
  const model::GraphEntry* entry = nullptr;
  model::HoistResult hoisted;
  std::vector<model::NodeRecord> records;  // top-level node records (subgraphs' are written only)
  std::vector<model::NodeRecord> outputs;  // the graph outputs' records
  std::vector<model::NodeRecord> held;     // lazy: every record of the pass, not written yet
};

/// What --node-hash the replay runs with: the option, else (issue 33) lazy for --against, --coor
/// and --repeat without --cuda-graph, shard otherwise. Lazy hashes the graphs' outputs and the
/// collectives' inputs first (InterpretOptions::every_node), and every node only on a rank whose
/// first pass differed (ReplaySession::finish_lazy_pass).
std::string node_hash_mode(const ReplayOptions& o);

/// How a lazy replay's records came to be (ReplaySession::finish_lazy_pass).
struct LazyPass {
  bool every_node = false;  // the first pass differed: every job ran again with every node hashed
  /// Records of the first pass that the second did not write alike ("graph a, node mm output 0"):
  /// the replay is not deterministic (empty: it is, as far as the first pass hashed).
  std::vector<std::string> not_alike;
};

/// Options that exclude each other (--against with --coor; --cuda-graph with either, with
/// --no-hash or off CUDA; a comparison with --no-hash): std::invalid_argument saying which.
void check_replay_options(const ReplayOptions& o);

class ReplaySession {
 public:
  /// Loads and selects the graphs, places the rank, joins the process groups (more than one
  /// rank), writes the manifest (rank 0) and the graphs' records. `out` gets progress lines
  /// (none with --json), `err` warnings (hoisting left something as it was, GPU sharing).
  ReplaySession(ReplayOptions options, std::ostream& out, std::ostream& err);
  ~ReplaySession();
  ReplaySession(const ReplaySession&) = delete;
  ReplaySession& operator=(const ReplaySession&) = delete;

  [[nodiscard]] int rank() const noexcept;
  [[nodiscard]] int world_size() const noexcept;
  [[nodiscard]] const ReplayOptions& options() const noexcept;
  /// Two executions to compare (--against, --coor, --cuda-graph after run()).
  [[nodiscard]] bool comparing() const noexcept;
  [[nodiscard]] const std::vector<ReplayJob>& jobs() const noexcept;

  /// Runs every job (records written as they come; --repeat: timed reruns), or with --cuda-graph
  /// the graph uncaptured and captured (two jobs: the graph's label and "cuda-graph"). Lazy with
  /// two executions: the first pass, its records held back until finish_lazy_pass().
  void run();
  /// run() made a lazy first pass whose records wait for finish_lazy_pass().
  [[nodiscard]] bool lazy() const noexcept;
  /// Ends a lazy first pass. `first_pass_differs` (the caller compared the jobs' records): every
  /// job runs again with every node hashed, each collective taking the result its job's first
  /// pass had (no communication: the other ranks go on), and the jobs' records become the second
  /// pass's, so that the first divergent node is named as a run hashing every node names it; the
  /// outputs stay the first pass's. Every record of the first pass must come again alike (the
  /// replay is deterministic), else LazyPass::not_alike names them (a warning, the summary's
  /// "node_hash" and a "lazy_node_hash" event say so too). Then the records are written.
  LazyPass finish_lazy_pass(bool first_pass_differs);
  /// Every rank's text under `key`, by rank (this rank's alone without other ranks).
  std::vector<std::string> exchange(const std::string& key, const std::string& text);
  /// --coor: the coor job's graph again, labelled "coor-alone", every collective taking the
  /// result the own job's collective with the same group and per-group sequence number had; its
  /// top-level records (written too), or `problem` set when a collective has no such result.
  std::vector<model::NodeRecord> run_alone(std::string& problem);
  /// The end of the replay: with a verdict (text non-empty), the "replay_verdict" event and the
  /// lines ("all ranks: ..." first on rank 0, then this rank's); the barrier; the --json summary
  /// with `verdict`. Returns `code`.
  int finish(const std::string& text, const std::string& overall, const nlohmann::json& verdict, int code);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

struct ReplayLaunch {
  int exit_code = 0;    // 0 every rank exited 0, 1 one found a divergence, 2 one failed
  std::string failure;  // which rank failed and how, when exit_code is 2
};
/// `--nproc N`: starts N local ranks of this very command (this executable, its arguments
/// without the launcher's options), this node's share of `node`'s layout; their lines go to `out` / `err`
/// tagged "[rank r]" (stdout lines as they are with --json).
ReplayLaunch launch_replay_ranks(int nproc, const NodeLayout& node, double timeout_s, bool json,
                                 std::ostream& out, std::ostream& err);

/// This process's command line, as /proc/self/cmdline has it.
std::vector<std::string> own_command_line();

}  // namespace gparity::runtime
