#pragma once
// Trace schema v1 (spec: docs/trace-format.md): the value types of a run directory, shared by
// the writer, the reader, the importers, `gparity compare` and the GUI. A run directory holds
// manifest.json plus one rank-<r>.jsonl per rank; each JSONL line is one record with a "type".
// Every record type keeps the fields it does not know in `extra`, so newer writers stay
// readable (forward compatible).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/base/dtype.hpp"

namespace gparity::model {

inline constexpr int kTraceSchemaVersion = 1;

/// A scalar exactly as the run produced it: the printed value for people, the IEEE bit pattern
/// (in the scalar's own dtype, zero-extended) for comparisons.
struct TraceScalar {
  double value = 0.0;
  std::uint64_t bits = 0;
  DType dtype = DType::F32;

  static TraceScalar from_f32(float v) noexcept;
  static TraceScalar from_f64(double v) noexcept;
  /// From a bit pattern in `dtype` (F16, BF16, F32, F64); value decoded from the bits.
  static TraceScalar from_bits(std::uint64_t bits, DType dtype) noexcept;
  friend bool operator==(const TraceScalar&, const TraceScalar&) = default;
};

struct RankInfo {
  int rank = 0;
  int local_rank = 0;
  std::string host;
  std::string device;  // "cuda:0", "cpu"
  friend bool operator==(const RankInfo&, const RankInfo&) = default;
};

/// Manifest "nccl": how NCCL picked its reduction orders, which change bf16 results on their own
/// (docs/ring-orders.md). Written by `gparity run` on GPUs and by the Python recorder.
struct NcclGraphInfo {
  std::string algo;        // NCCL_ALGO as the ranks saw it ("" unset)
  std::string graph_file;  // NCCL_GRAPH_FILE ("" unset: NCCL searched its own graph)
  /// Ring graph channels of graph_file, GPUs in ring order (empty: no file, or unreadable).
  std::vector<std::vector<std::int64_t>> rings;
  std::string ring_pattern;  // `gparity run --ring-orders` pattern ("" none)
  std::optional<std::uint64_t> ring_seed;
  std::string graph_error;  // why graph_file could not be read ("" read or unset)
  nlohmann::json extra = nlohmann::json::object();
  friend bool operator==(const NcclGraphInfo&, const NcclGraphInfo&) = default;
};

struct RunManifest {
  int schema_version = kTraceSchemaVersion;
  std::string run_id;
  int world_size = 1;
  std::vector<std::int64_t> mesh_shape;     // e.g. {2, 4}
  std::vector<std::string> mesh_dim_names;  // e.g. {"dp", "tp"}
  std::vector<RankInfo> ranks;
  std::vector<std::pair<std::string, std::string>> framework_versions;  // {"torch", "2.11.0"}
  std::vector<std::string> command_line;
  std::string config_fingerprint;
  std::string start_time;  // ISO 8601
  /// Steps the run declares it will record (1..steps on every rank): what a comparison must see
  /// to call the evidence complete. From "steps", else "train.steps" (older `gparity run`).
  std::optional<std::int64_t> steps;
  std::optional<NcclGraphInfo> nccl;
  nlohmann::json extra = nlohmann::json::object();
};

/// Placement of a parameter along one mesh dimension, as DTensor names them.
struct Placement {
  enum class Kind : std::uint8_t { Replicate, Shard, Partial };
  Kind kind = Kind::Replicate;
  int dim = -1;  // tensor dim for Shard
  friend bool operator==(const Placement&, const Placement&) = default;
};
/// "R", "S(0)", "P".
std::string placement_text(const Placement& p);
std::optional<Placement> parse_placement(std::string_view text) noexcept;

struct ParamInfo {
  std::string fqn;
  DType dtype = DType::F32;
  std::vector<std::int64_t> global_shape;
  std::vector<std::int64_t> local_offsets;  // this rank's block inside the global tensor
  std::vector<std::int64_t> local_shape;
  std::vector<Placement> placements;  // one per mesh dim
  /// Whether this rank's block is counted in shard-invariant sums: of the ranks holding the same
  /// replicated block, exactly one counts it.
  bool counts = true;
  friend bool operator==(const ParamInfo&, const ParamInfo&) = default;
};

/// "params" record: the parameter table in registration order. Step hash arrays are aligned
/// with the table in effect when the step was written.
struct ParamsRecord {
  std::vector<ParamInfo> params;
  nlohmann::json extra = nlohmann::json::object();
};

/// One array of per-parameter 64-bit hashes, aligned with the params table. Names:
/// "param.xxh3" (XXH3-64 of the local block), "param.shard" (shard-invariant partial hash),
/// "grad.xxh3", "grad.shard", "optim.<state>.xxh3", "optim.<state>.shard"; importers may add
/// others (e.g. "param.full_xxh3"). Arrays whose name ends in ".shard" are summed across ranks.
struct HashArray {
  std::string name;
  std::vector<std::uint64_t> values;
  friend bool operator==(const HashArray&, const HashArray&) = default;
};

/// True for arrays whose values are shard-invariant partial hashes (summed across ranks).
bool is_shard_invariant(std::string_view hash_array_name) noexcept;

struct NamedScalar {
  std::string name;
  TraceScalar value;
  friend bool operator==(const NamedScalar&, const NamedScalar&) = default;
};

/// "step" record.
struct StepRecord {
  std::int64_t step = 0;
  std::optional<TraceScalar> loss;
  std::optional<TraceScalar> grad_norm;
  std::vector<NamedScalar> scalars;  // lr, tokens/s, ...
  std::vector<HashArray> hashes;
  nlohmann::json extra = nlohmann::json::object();

  [[nodiscard]] const HashArray* find_hashes(std::string_view name) const noexcept;
};

/// One member of a bucket, in payload order.
struct BucketMember {
  std::string fqn;
  std::int64_t offset_bytes = 0;
  std::int64_t size_bytes = 0;
  friend bool operator==(const BucketMember&, const BucketMember&) = default;
};
struct Bucket {
  std::string collective;  // "reduce_scatter", "all_gather", "all_reduce"
  DType dtype = DType::F32;
  std::vector<BucketMember> members;
  friend bool operator==(const Bucket&, const Bucket&) = default;
};
/// "buckets" record: per collective group, buckets in issue order.
struct BucketGroup {
  std::string group;  // process group name, e.g. "dp"
  std::vector<Bucket> buckets;
  friend bool operator==(const BucketGroup&, const BucketGroup&) = default;
};
struct BucketsRecord {
  std::optional<std::int64_t> step;  // from which step the plan applies; nullopt: whole run
  std::vector<BucketGroup> groups;
  nlohmann::json extra = nlohmann::json::object();
};

/// "devices" record: where parameters, buffers and constants live.
struct DevicePlacement {
  std::string name;
  std::string kind;  // "param", "buffer", "constant"
  std::string device;
  friend bool operator==(const DevicePlacement&, const DevicePlacement&) = default;
};
struct DevicesRecord {
  std::vector<DevicePlacement> entries;
  nlohmann::json extra = nlohmann::json::object();
};

/// "graph" record: a reference to a graph artifact stored beside the trace.
struct GraphRef {
  std::string path;  // relative to the run directory
  std::string kind;  // "aot_forward_graph", "fx_readable", "torch_trace", ...
  std::string compile_id;
  std::string fingerprint;
  nlohmann::json extra = nlohmann::json::object();
};

/// "event" record: anything else (warnings, failures, timings).
struct EventRecord {
  std::string kind;  // "warning", "failure", "timing", ...
  std::optional<std::int64_t> step;
  std::string message;
  nlohmann::json data = nlohmann::json::object();
};

/// What an "event" record of kind "device_memory" says (docs/cuda-graphs.md): one rank's peak
/// device memory over a run, from the caching allocator, and whether the run replayed CUDA graphs.
struct DeviceMemoryPeaks {
  std::string mode;  // "eager" or "cuda_graph"
  std::int64_t peak_allocated = 0;
  std::int64_t peak_reserved = 0;
};
/// The last well-formed "device_memory" event among `events` (nullopt: none).
std::optional<DeviceMemoryPeaks> device_memory_peaks(std::span<const EventRecord> events);
/// "node" record: one tensor a replayed graph node produced (`gparity replay`, docs/replay.md).
/// A node with several tensor results writes one record per result (`output` 0, 1, ...).
/// A node record's tensor that aliases an earlier node's (a view: replay does not hash it, its
/// bytes are the base's): the base is the node whose hashed tensor holds its elements (a view of a
/// view names the first one's base), and where the view lies in it, in elements.
struct NodeView {
  std::string base;                       // node name; empty: unknown (a record before issue 24)
  std::int64_t base_output = 0;           // which tensor of the base's result
  std::int64_t offset = 0;                // view's storage offset minus the base's
  std::vector<std::int64_t> stride;       // the view's strides
  std::vector<std::int64_t> base_stride;  // the base's strides
  bool operator==(const NodeView&) const = default;
};

struct NodeRecord {
  std::string graph;        // the graph's label in this run ("a", "b", "own", "coor", ...)
  std::string node;         // node name in the graph
  std::int64_t index = 0;   // the node's position in the graph (a topological order)
  std::string op;           // target ("aten.mm.default", "placeholder" for inputs)
  std::string source;       // user code "file:line", else "graph text:line", else empty
  std::int64_t output = 0;  // which tensor of the node's result
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t xxh3 = 0;        // XXH3-64 of the tensor's bytes in row-major order
  std::uint64_t shard = 0;       // shard-invariant hash of the whole tensor
  bool has_xxh3 = true;          // false: hashed without XXH3 (replay --node-hash shard; no "xxh3" field)
  bool has_shard = true;         // false: a view, not hashed (no "shard" field; `view` says where it lies)
  std::optional<NodeView> view;  // set: the tensor aliases `view->base`'s ("view" field)
  nlohmann::json extra = nlohmann::json::object();
};

// JSON forms (the wire format of each record, "type" included). from_json throws InputError
// naming `source` and `line`.
nlohmann::json to_json(const RunManifest& m);
RunManifest manifest_from_json(const nlohmann::json& j, const std::string& source);
nlohmann::json to_json(const ParamsRecord& r);
ParamsRecord params_from_json(const nlohmann::json& j, const std::string& source, std::int64_t line);
nlohmann::json to_json(const TraceScalar& s);
TraceScalar scalar_from_json(const nlohmann::json& j, const std::string& source, std::int64_t line);
nlohmann::json to_json(const BucketsRecord& r);
BucketsRecord buckets_from_json(const nlohmann::json& j, const std::string& source, std::int64_t line);
nlohmann::json to_json(const DevicesRecord& r);
DevicesRecord devices_from_json(const nlohmann::json& j, const std::string& source, std::int64_t line);
nlohmann::json to_json(const GraphRef& r);
GraphRef graph_from_json(const nlohmann::json& j, const std::string& source, std::int64_t line);
nlohmann::json to_json(const EventRecord& r);
EventRecord event_from_json(const nlohmann::json& j, const std::string& source, std::int64_t line);
nlohmann::json to_json(const NodeRecord& r);
NodeRecord node_from_json(const nlohmann::json& j, const std::string& source, std::int64_t line);

/// Step records are written by hand (trace_writer.cpp) so that hash arrays go out as one
/// base64 string each; this is the same line as a string, without the trailing newline.
std::string step_to_line(const StepRecord& r);

// Hash array wire form: the values as little-endian u64 bytes, standard base64 with padding.
std::string encode_hash_array(std::span<const std::uint64_t> values);
/// nullopt when `text` is not valid base64 of a multiple of 8 bytes.
std::optional<std::vector<std::uint64_t>> decode_hash_array(std::string_view text);

}  // namespace gparity::model
