#pragma once
// PyTorch Flight Recorder JSON dumps (torch._C._distributed_c10d._dump_nccl_trace_json): version,
// pg_config, pg_status, and the ring of entries (record_id, pg_id, process_group,
// collective_seq_id, p2p_seq_id, profiling_name, input/output sizes and dtypes, state, the times
// the watchdog saw it start and complete, frames), read into a per-rank collective sequence.
// Malformed dumps are InputErrors naming the file and the entry. A dump holds no rank field
// (format 2.10): the rank is the file name's (PyTorch writes TORCH_FR_DUMP_TEMP_FILE + rank).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gparity::model {

struct FlightRecorderFrame {
  std::string name;
  std::string filename;
  std::int64_t line = 0;
};

struct FlightRecorderEntry {
  std::int64_t record_id = -1;
  std::int64_t pg_id = -1;
  std::string pg_name;  // process_group[0]
  std::string pg_desc;  // process_group[1]
  std::int64_t collective_seq_id = 0;
  std::int64_t p2p_seq_id = 0;
  std::int64_t op_id = -1;
  bool is_p2p = false;
  std::string profiling_name;  // "nccl:all_reduce"
  std::vector<std::vector<std::int64_t>> input_sizes, output_sizes;
  std::vector<std::string> input_dtypes, output_dtypes;
  std::string state;  // "scheduled", "started", "completed"
  bool retired = false;
  std::int64_t time_created_ns = 0;
  /// When the watchdog saw the kernel start / complete; 0 when it did not (the JSON dump writes
  /// 0, the pickle None). Starts are seen only with TORCH_NCCL_ENABLE_TIMING.
  std::int64_t time_discovered_started_ns = 0, time_discovered_completed_ns = 0;
  std::int64_t timeout_ms = 0;
  std::vector<FlightRecorderFrame> frames;

  /// The collective without the backend prefix: "all_reduce", "_reduce_scatter_base".
  [[nodiscard]] std::string_view op() const noexcept;
};

struct ProcessGroupConfig {
  std::string id;  // the pg_config key
  std::string name;
  std::string desc;
  std::vector<std::int64_t> ranks;
};

/// pg_status: per process group (by pg_id), the last collective_seq_id the rank enqueued,
/// started and completed (-1 when none). The watchdog updates it lazily, so it can lag the
/// entries' states; the entries are the better evidence where they reach.
struct ProcessGroupStatus {
  std::int64_t pg_id = -1;
  std::int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
};

struct FlightRecorderDump {
  std::string source;
  std::int32_t rank = -1;  // from the file name (rank_in_file_name) when it gives one
  std::string version;
  std::string comm_lib_version;
  std::vector<ProcessGroupConfig> groups;
  std::vector<ProcessGroupStatus> status;
  std::vector<FlightRecorderEntry> entries;  // in record order

  /// Entries of one process group (by name) in issue order (collective_seq_id, then p2p_seq_id).
  [[nodiscard]] std::vector<const FlightRecorderEntry*> sequence(std::string_view pg_name) const;
};

/// The rank a dump's file name gives: "rank<r>" anywhere in it (also rank_<r>, rank-<r>:
/// rank3_flight_recorder.json, fr_rank3.pkl, nccl_trace_rank_3), else the digits that end it, as
/// PyTorch names its dumps (TORCH_FR_DUMP_TEMP_FILE + rank: fr_0, /tmp/dumps/trace_12; an
/// extension .json, .pkl or .pickle is looked through); -1 when neither.
std::int32_t rank_in_file_name(const std::string& path);

/// The one rank every process group of the dump's pg_config holds (a rank records only the groups
/// it is a member of); -1 when the groups leave more than one (or none) possible.
std::int32_t rank_from_groups(const FlightRecorderDump& d);

FlightRecorderDump read_flight_recorder(const std::string& path);
FlightRecorderDump parse_flight_recorder(std::string_view text, const std::string& source);

}  // namespace gparity::model
