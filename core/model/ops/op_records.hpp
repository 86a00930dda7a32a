#pragma once
// Reader for gparity's own op records (trace v1 `"type": "op"` lines, written by the Python op
// recorder, python/gparity/op_recorder.py; docs/trace-format.md, docs/ops.md): every op of a
// step with its tensors (record id, dtype, shape, XXH3-64 and shard-invariant hash), module,
// source line and phase. They become the same OpLog the DebugMode reader makes, so the op
// alignment and verdicts (diff/ops) work on them unchanged: hash functions "xxh3" and "shard", or
// "shard_v2" for a log whose records say `"shard_spec": 2` (identities, not DebugMode's
// order-blind hash_tensor; one spec a log), an input without hashes holds its
// producer's output, a collective's outputs (`"async": true`) are seen by their next reader, a
// view argument (`"view": {"base": id}`) is read as its base (the base's id, and its hashes where
// dtype and size match), so a view op has no verdict of its own.
// A run is a trace directory (manifest.json + rank-<r>.jsonl) whose rank files hold op records.
// Tolerant like the other readers: a line that does not parse, or an op record that lacks a
// field, costs that record (an issue with its line); a cut last line marks the log truncated;
// other record types (params, step, event) are passed over.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/ops/op_log.hpp"

namespace gparity::model::ops {

/// Whether `path` is a trace directory whose rank files start with op records (or whose manifest
/// says "op_records": true).
bool is_op_record_run(const std::string& path);

/// Whether a JSONL file starting with `head` holds op records (a line with "type":"op").
bool looks_like_op_records(std::string_view head);

/// Reads one rank file of op records. Throws InputError only when the file cannot be read.
OpLog read_op_records(const std::string& path, int rank);

/// The same on text in memory; `source` names it in issues.
OpLog parse_op_records(std::string_view text, const std::string& source, int rank);

}  // namespace gparity::model::ops
