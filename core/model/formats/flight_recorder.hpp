#pragma once
// PyTorch Flight Recorder JSON dumps (torch._C._distributed_c10d._dump_nccl_trace_json): version,
// pg_config, and the ring of entries (record_id, pg_id, process_group, collective_seq_id,
// p2p_seq_id, profiling_name, input/output sizes and dtypes, state, frames), read into a
// per-rank collective sequence. Malformed dumps are InputErrors naming the file and the entry.

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

struct FlightRecorderDump {
  std::string source;
  std::int32_t rank = -1;  // from the file name (rank<r>_...) when it has one
  std::string version;
  std::string comm_lib_version;
  std::vector<ProcessGroupConfig> groups;
  std::vector<FlightRecorderEntry> entries;  // in record order

  /// Entries of one process group (by name) in issue order (collective_seq_id, then p2p_seq_id).
  [[nodiscard]] std::vector<const FlightRecorderEntry*> sequence(std::string_view pg_name) const;
};

FlightRecorderDump read_flight_recorder(const std::string& path);
FlightRecorderDump parse_flight_recorder(std::string_view text, const std::string& source);

}  // namespace gparity::model
