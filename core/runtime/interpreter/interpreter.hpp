#pragma once
// The graph interpreter of `gparity replay` (docs/replay.md): executes a model::Graph from any
// importer through the c10 dispatcher. Each call_function node's target ("aten.mm.default") is
// looked up as a registered schema, its arguments (positional, keyword, defaults, literals,
// symbolic sizes) are bound to that schema once, and the node runs as a boxed call. Functional
// collectives run on c10d process groups (collectives.hpp), higher-order ops whose body is a
// plain call of a subgraph run that subgraph. Every tensor a node produces can be hashed where it
// lives and reported as a model::NodeRecord.
//
// Anything the graph asks that this LibTorch cannot do (an unregistered op, an argument that does
// not fit the schema, a missing input, an unknown process group) is a ReplayError whose message
// names the graph, the node, the op and the source line; nothing in a graph can crash the process.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/model/graph/graph.hpp"
#include "core/model/run/trace_schema.hpp"
#include "hash/shard_hash.hpp"

namespace at {
class Tensor;
}

namespace gparity::runtime {

/// Bad input found while preparing or running a graph (exit 2).
class ReplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GroupComm;          // collectives.hpp
class CollectiveResults;  // collectives.hpp
class InputSource;        // inputs.hpp

struct InterpretOptions {
  std::string label;           // the graph's name in records and messages ("a", "fw", ...)
  std::string source;          // file the graph came from (for "file:line" positions)
  std::string device = "cpu";  // "cpu" or "cuda:N": where inputs are placed
  bool hash = true;            // hash every node's tensors (on_node gets the records)
  /// XXH3-64 of every record's tensor besides the shard-invariant hash (--node-hash both). Off by
  /// default, for the graph's outputs too (issue 33): on a GPU XXH3's scramble chain is sequential
  /// per tensor (~16 ns a KiB), so one large tensor's chain can take longer than the whole graph.
  bool node_xxh3 = false;
  /// Hash every node's tensors (true), or only what a comparison needs first (--node-hash lazy,
  /// issue 33): the graph's outputs, the inputs of its collectives (wait_tensor aside: its input
  /// is a collective's result), the results of ops that write an argument in place (a graph's
  /// effects besides its outputs), and the nodes those records name (a view's aliased argument, a
  /// getitem's source), so that each record is exactly the one a run hashing every node writes.
  bool every_node = true;
  /// The shard hash's spec for node records (docs/hashing.md); each record names it in
  /// "shard_spec". `gparity replay` asks for v2 (--node-hash-spec, issue 24); v1 unless asked.
  hash::ShardSpec shard_spec = hash::ShardSpec::V1;
  /// Hash the results of view ops too (--hash-views). Off by default: a result that shares its
  /// aliased argument's storage (the schema says it aliases; `_unsafe_view`) is recorded with no
  /// hash, naming its base (the hashed tensor it lies in) and where it lies in it (model::NodeView).
  bool view_hashes = false;
  /// Hash CUDA tensors on a low-priority side stream while the graph goes on, the graph on a
  /// high-priority stream (--node-hash-stream side; DeferredHashOptions): batches of
  /// `side_batch_bytes`, the shard kernels capped at `side_share` of the GPU's resident hash
  /// CTAs; the graph's stream waits for the hashes only before an op that writes in place, a
  /// collective, and at the end of the run. Off: the hashes run on the graph's own stream.
  bool hash_side_stream = false;
  double side_share = 0.25;
  std::int64_t side_batch_bytes = std::int64_t{64} << 20;
  /// Bytes of tensors a batch of hashes on the graph's own stream (--node-hash-batch): a batch is
  /// enqueued once this much waits, so that its tensors may still be in the L2 cache.
  std::int64_t batch_bytes = std::int64_t{1} << 30;
  /// XXH3's scramble chains on the host (DeferredHashOptions::host_xxh3_chains); false: on the
  /// device, one warp a tensor (--node-hash-xxh3-chains device, kept to compare the two).
  bool xxh3_host_chains = true;
  /// Values of symbols the inputs' shapes do not bind ("s0" -> 8).
  std::map<std::string, std::int64_t> symbols;
  GroupComm* comm = nullptr;  // functional collectives; nullptr: only single-rank groups
  /// Keep a copy of every collective's result here, by group and per-group sequence number ...
  CollectiveResults* keep_collectives = nullptr;
  /// ... or take each collective's result from here instead of communicating (`replay --coor`
  /// runs a rank's coor graph alone with the results its own graph's collectives had).
  CollectiveResults* take_collectives = nullptr;
  /// Every run starts from this seed of the default CPU and CUDA generators, so random ops and
  /// the RNG state some ops return (the philox seed and offset of SDPA's efficient attention)
  /// are the same in every execution that is compared.
  std::uint64_t rng_seed = 0;
};

/// Where the hashing of the last run spent its time (host clocks): building the records (the
/// CPU hashes included), enqueuing the CUDA hash batches, and waiting for their results.
struct RunProfile {
  double record_ms = 0, enqueue_ms = 0, collect_ms = 0;
  std::size_t batches = 0;     // CUDA batches
  std::size_t tensors = 0;     // tensors hashed (on the device or the host)
  std::int64_t bytes = 0;      // their bytes
  std::size_t same_bytes = 0;  // results that took an argument's hashes: the very same bytes
};

/// One node's result, hashed: the records of its tensors.
using NodeSink = std::function<void(const model::NodeRecord&)>;

/// A graph prepared for execution: every op resolved and every argument bound once, so that
/// repeated runs pay only for the boxed calls.
class Interpreter {
 public:
  /// Resolves all ops and binds all arguments; throws ReplayError for the first node that
  /// cannot run, naming it.
  Interpreter(const model::Graph& graph, InterpretOptions options);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  /// Runs the graph once on inputs from `inputs`; every node's tensors go to `sink` (when
  /// hashing). Returns the hashes of the graph's outputs (flattened), in order.
  std::vector<model::NodeRecord> run(InputSource& inputs, const NodeSink& sink = {});
  /// Runs the graph on given placeholder values, in placeholder order (benchmarks, tests).
  std::vector<model::NodeRecord> run_tensors(std::span<const at::Tensor> inputs, const NodeSink& sink = {});

  // Repeated runs on the same inputs (timing, CUDA-graph capture and replay): bind_inputs makes
  // the placeholder values once; every rerun uses those tensors as they are (same addresses; an
  // in-place op of the graph leaves its mark on them for the next run). run() is bind_inputs
  // then rerun.
  struct RerunOptions {
    bool hash = false;         // hash every node's tensors (sink gets the records)
    bool keep_values = false;  // keep every node's value after the run, for hash_kept()
    bool reseed = true;        // reset the generators to rng_seed first (not inside a capture)
    /// Keep the collectives' results (InterpretOptions::keep_collectives) in this run; timed
    /// reruns do not, so that they time the graph and its hashing, not the copies.
    bool keep_collectives = true;
  };
  void bind_inputs(InputSource& inputs);
  std::vector<model::NodeRecord> rerun(InputSource& inputs, const RerunOptions& options,
                                       const NodeSink& sink = {});
  /// Hashes the values the last rerun with keep_values left (as they are now: after a captured
  /// graph's replay, the replay's), in the order and form run() records them; returns the
  /// outputs' records. Nodes inside higher-order ops' subgraphs are hashed only as the op's result.
  std::vector<model::NodeRecord> hash_kept(const NodeSink& sink = {});
  /// Resets the default CPU and CUDA generators to rng_seed (what every run does first).
  void reseed();
  /// Drops the values a run kept.
  void release_values();
  /// The bound placeholder tensors, by placeholder name.
  [[nodiscard]] std::vector<std::pair<std::string, at::Tensor>> input_tensors() const;
  /// Placeholders the graph writes in place (an op's schema marks the argument written).
  [[nodiscard]] std::vector<std::string> mutated_inputs() const;
  /// The symbols' values of the last bind.
  [[nodiscard]] std::map<std::string, std::int64_t> bound_symbols() const;

  [[nodiscard]] RunProfile last_run_profile() const;

  /// Number of nodes that execute (everything but placeholders and the output).
  [[nodiscard]] std::size_t op_nodes() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The LibTorch version this build runs ("1.13.0", "2.11.0").
std::string torch_version();

/// "aten.mm.default" -> ("aten::mm", ""); "aten.sum.dim_IntList" -> ("aten::sum", "dim_IntList");
/// nullopt when the target does not name a registered-op form (namespace.op.overload).
std::optional<std::pair<std::string, std::string>> split_op_target(std::string_view target);

}  // namespace gparity::runtime
