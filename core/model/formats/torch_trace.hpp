#pragma once
// Reader for TORCH_TRACE structured logs (what tlparse reads): glog-prefixed envelope lines
// `V1121 04:50:33.123000 999 path:line] {json}` holding one event key plus rank / frame_id /
// frame_compile_id / attempt / compiled_autograd_id / has_payload, each optionally followed by
// payload lines that start with a TAB. `has_payload` is the MD5 of the payload lines joined by
// "\n": mismatches are counted and reported, and the payload is still used.
// Every graph payload (dynamo_output_graph, aot_*_graph, inductor_*_graph, compiled_autograd_graph,
// graph_dump, before_/after_<pass> artifacts, ...) is parsed into the graph IR; other payloads
// stay text, reachable through their record. A directory of
// dedicated_log_torch_trace_rank_<r>_*.log files is one multi-rank trace, read in parallel.
// Logs are recognised by content (looks_like_torch_trace), whatever their name. Damage (a payload
// line with no envelope, an envelope that is not JSON, a graph payload the FX reader finds damaged)
// is reported in `problems` with file and line, and the read goes on at the next envelope. A last
// line without a newline is complete when its payload's MD5 matches; otherwise the payload was cut
// short: reported, and used as far as it goes.

#include <compare>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/graph/graph.hpp"

namespace gparity::model {

/// Dynamo's compile id: "[frame/compile]" plus attempt; compiled autograd ids get a "!" prefix
/// as in tlparse ("!1/0/0"). frame_id -1 means the record belongs to no frame.
struct CompileId {
  std::int32_t frame_id = -1;
  std::int32_t frame_compile_id = -1;
  std::int32_t attempt = 0;
  std::int32_t compiled_autograd_id = -1;

  /// "0/0", "0/0_1" (attempt 1), "!2/0/0" (compiled autograd 2), "-" (no frame).
  [[nodiscard]] std::string text() const;
  /// Parses text(); nullopt when malformed.
  static std::optional<CompileId> parse(std::string_view text);
  auto operator<=>(const CompileId&) const = default;
};

/// One envelope line and its payload.
struct TraceRecord {
  std::string kind;      // the event key: "dynamo_output_graph", "artifact", "chromium_event", ...
  std::string name;      // the artifact name for "artifact", else the event key
  std::string encoding;  // the artifact's "encoding" when given ("string", "json")
  CompileId compile;
  std::int32_t rank = -1;
  std::int64_t line = 0;             // 1-based line of the envelope
  nlohmann::json event;              // the event key's value (null for chromium_event, kept lean)
  std::string md5;                   // has_payload as written ("" when the record has no payload)
  bool md5_ok = true;                // has_payload equals the MD5 of the payload read
  std::uint64_t payload_offset = 0;  // byte offset of the first payload line's TAB
  std::uint64_t payload_bytes = 0;   // bytes spanned by the payload lines, TABs and newlines included
  std::uint32_t payload_lines = 0;
  std::int32_t graph = -1;  // index into TorchTraceRank::graphs when the payload is a graph
};

/// A graph payload parsed into the IR.
struct TraceGraph {
  std::string kind;  // the record's name: "aot_joint_graph", "inductor_post_grad_graph", ...
  CompileId compile;
  std::size_t record = 0;  // index into TorchTraceRank::records
  Graph graph;
  std::uint32_t problems = 0;  // problems its payload had (in TorchTraceRank::problems); used anyway
};

struct TraceProblem {
  std::string source;
  std::int64_t line = 0;
  std::string problem;
  [[nodiscard]] std::string text() const;
};

/// The records of one rank's log file.
class TorchTraceRank {
 public:
  std::string path;
  std::int32_t rank = -1;
  std::vector<TraceRecord> records;
  std::vector<TraceGraph> graphs;
  std::vector<std::size_t> unparsed;   // records of graph payloads that held no module at all
  std::vector<std::string> filenames;  // interned filename records ({"str": [path, index]})
  std::size_t md5_mismatches = 0;
  std::vector<TraceProblem> problems;  // damage and unparsable graph payloads, in file order
  std::uint64_t bytes = 0;

  /// The payload text with the leading TABs removed, lines joined by "\n".
  [[nodiscard]] std::string payload(const TraceRecord& r) const;
  /// Graphs of that kind and compile id (or all kinds when kind is empty), in log order.
  [[nodiscard]] std::vector<const TraceGraph*> find_graphs(std::string_view kind,
                                                           std::optional<CompileId> compile = {}) const;
  /// Sorted distinct compile ids of the records that have one.
  [[nodiscard]] std::vector<CompileId> compile_ids() const;

  std::shared_ptr<const void> owner;  // keeps `text` alive (a MappedFile or a std::string)
  std::string_view text;
};

struct TraceOptions {
  bool parse_graphs = true;  // false: only index records (graphs stay payload text)
  bool verify_md5 = true;
};

/// Reads one log file. Never throws for damaged content (see problems); throws InputError only
/// when the file cannot be opened.
TorchTraceRank read_torch_trace(const std::string& path, const TraceOptions& options = {});
/// The same over text in memory (`source` names it in problems), e.g. for fuzzing.
TorchTraceRank parse_torch_trace(std::string text, const std::string& source,
                                 const TraceOptions& options = {});

/// A multi-rank trace: the dedicated_log_torch_trace_rank_<r>_*.log files of a directory (or a
/// single file), sorted by rank, parsed in parallel on up to `threads` threads (0: one per core).
struct MultiRankTrace {
  std::string path;
  std::vector<TorchTraceRank> ranks;
  [[nodiscard]] const TorchTraceRank* rank(std::int32_t r) const;
  [[nodiscard]] std::size_t problem_count() const;
};
MultiRankTrace read_torch_trace_dir(const std::string& path, const TraceOptions& options = {},
                                    unsigned threads = 0);

/// True when the first non-blank line of `text` is a glog-prefixed TORCH_TRACE envelope.
bool looks_like_torch_trace(std::string_view text) noexcept;

/// True for record names whose payload is an FX graph when it looks like one.
bool is_graph_record_name(std::string_view kind, std::string_view name) noexcept;

}  // namespace gparity::model
