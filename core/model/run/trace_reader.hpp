#pragma once
// Reads one rank's trace v1 JSONL file (docs/trace-format.md). Every complete line is used; a
// truncated last line or a corrupt line is recorded as a TraceIssue with its file and line (never
// silently dropped, never fatal: callers decide what damage means). Unknown fields stay in each
// record's `extra`, unknown record types are kept whole. Step lines take a fast path: the hash
// arrays (one base64 string each) are decoded straight from the mapped file, only the small
// fields go through the JSON parser.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/model/run/trace_schema.hpp"

namespace gparity::model {

/// Damage found while reading: the source, the 1-based line (0 for a whole file) and what.
struct TraceIssue {
  enum class Kind : std::uint8_t {
    TruncatedTail,  // the last line has no newline and does not parse: a crash mid-write
    CorruptLine,    // a line in the middle that is not a valid record
    MissingFile,    // a rank file the manifest promises is absent
    Note,           // not damage, but worth saying (e.g. values are rounded text)
  };
  Kind kind = Kind::CorruptLine;
  std::string source;
  std::int64_t line = 0;
  std::string problem;
  /// "source:line: problem".
  [[nodiscard]] std::string text() const;
};

/// A record whose "type" this reader does not know: kept whole for forward compatibility.
struct UnknownRecord {
  std::string type;
  nlohmann::json json;
};

using RunRecord = std::variant<ParamsRecord, StepRecord, BucketsRecord, DevicesRecord, GraphRef, EventRecord,
                               UnknownRecord, NodeRecord>;

inline constexpr std::size_t kNoParamsTable = std::numeric_limits<std::size_t>::max();

/// Everything one rank's file holds, in file order.
struct RankTrace {
  int rank = 0;
  std::string source;
  std::vector<ParamsRecord> params_tables;
  std::vector<StepRecord> steps;
  /// Per step, the index in params_tables of the table in effect (kNoParamsTable if none).
  std::vector<std::size_t> step_table;
  std::vector<BucketsRecord> buckets;
  std::vector<DevicesRecord> devices;
  std::vector<GraphRef> graphs;
  std::vector<EventRecord> events;
  std::vector<NodeRecord> nodes;  // `gparity replay` node records, in file order
  std::vector<UnknownRecord> unknown;
  std::vector<TraceIssue> issues;

  /// Params table of steps[i], or nullptr.
  [[nodiscard]] const ParamsRecord* table_of(std::size_t step_index) const noexcept;
};

/// Parses one JSONL line (without its newline) into a record. Throws InputError naming source
/// and line. `params_size`, when known, is checked against every hash array's length.
RunRecord parse_trace_line(std::string_view line, const std::string& source, std::int64_t line_no,
                           std::size_t params_size = kNoParamsTable);

/// Splits JSON Lines text and classifies damage the same way for every JSONL format we read:
/// `parse(line, line_no)` throws InputError for a bad line, which becomes a corrupt line when a
/// newline follows it and a truncated tail when it is the unterminated last line. Blank lines
/// are skipped; a trailing '\r' is dropped.
void scan_jsonl(std::string_view text, const std::string& source,
                const std::function<void(std::string_view line, std::int64_t line_no)>& parse,
                const std::function<void(TraceIssue&&)>& on_issue);

/// Calls `on_record` for every valid line of `text` and `on_issue` for every damaged one.
void scan_trace_text(std::string_view text, const std::string& source,
                     const std::function<void(RunRecord&&, std::int64_t line)>& on_record,
                     const std::function<void(TraceIssue&&)>& on_issue);

/// Reads a whole rank file. Throws InputError only when the file cannot be opened.
RankTrace read_rank_trace(const std::string& path, int rank);

}  // namespace gparity::model
