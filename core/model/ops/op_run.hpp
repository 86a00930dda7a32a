#pragma once
// An op-log run: the DebugMode logs of one training run, one file per rank and step
// (`rank<r>_step<s>.debug.txt`) or one per rank (`rank<r>.debug.txt`, steps inferred from the
// text), in one folder; or a single log file (rank and step from its name when it has them,
// else rank 0 and inferred steps); or a trace directory of gparity's own op records
// (manifest.json + rank-<r>.jsonl with "type":"op" lines, op_records.hpp). Other files in the folder
// (rank<r>_meta.json, ...) are not part of it. Files are listed first and read on demand, one rank at a time.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/ops/op_log.hpp"

namespace gparity::model::ops {

struct OpRunFile {
  int rank = 0;
  std::int64_t step = 0;  // 0: the file holds every step of its rank
  std::string path;
};

struct OpRun {
  std::string path;
  std::vector<OpRunFile> files;  // by rank, then step
  /// The ranks present, ascending.
  [[nodiscard]] std::vector<int> ranks() const;
  /// The files of one rank, by step.
  [[nodiscard]] std::vector<const OpRunFile*> files_of(int rank) const;
};

/// Whether `path` names an op-log run: a `*.debug.txt` file, another file whose start looks
/// like a DebugMode log, a folder with at least one `*.debug.txt` file in it, or a trace
/// directory of op records.
bool is_op_log_path(const std::string& path);

/// Lists the run at `path`. Throws InputError naming the path or file when it has no log, when
/// two files claim one (rank, step), when a rank has both per-step files and a whole-run file,
/// or when a folder's file name carries no rank.
OpRun open_op_run(const std::string& path);

/// Reads one file of the run (read_debugmode_log with its rank and step).
OpLog read_op_run_file(const OpRunFile& file);

/// Parses "rank<r>", "rank_<r>", "step<s>", "step_<s>" out of a file name ("rank1_step2.debug.txt").
/// Returns false when there is no rank in it; `step` is 0 when there is no step.
bool parse_op_log_name(const std::string& file_name, int& rank, std::int64_t& step);

}  // namespace gparity::model::ops
