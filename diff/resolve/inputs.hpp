#pragma once
// What one or two input paths hold, and so which comparison runs (issue 36): one decision for
// `gparity compare`, `gparity gate` and gparity-view, so a new kind of evidence is added here
// once. Tested in this order:
//  1. op logs (DebugMode logs or gparity op records, model::ops::is_op_log_path): both sides, or
//     an error naming the side that is not;
//  2. checkpoints (DCP folders, .safetensors, folders of step-<n> checkpoints): both sides;
//  3. the viewer only: one run directory of `gparity replay --against / --coor` (its verdict);
//  4. runs (model::open_run: trace folders, reference rank<r>.jsonl folders, TensorBoard,
//     torchtitan logs; replay runs among them): both open, else the error of the first that does
//     not (the viewer too, when the other one is a run);
//  5. the viewer only: Flight Recorder dumps, pickles or TORCH_TRACE logs, one or two (`gparity
//     collectives [--baseline]`): diff::load_collectives reads them (the baseline first) and
//     names a file it cannot.
// Unrecognized input is a model::InputError naming the file (exit 2).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ops/op_run.hpp"
#include "core/model/run/run_source.hpp"
#include "diff/report/finding.hpp"
#include "diff/runs/run_compare.hpp"

namespace gparity::diff {

enum class InputKind : std::uint8_t { OpLogs, Checkpoints, Runs, ReplayRun, Collectives };
/// "op logs", "checkpoints", "runs", "replay run", "collectives".
std::string_view input_kind_name(InputKind k) noexcept;

/// Who asks: `gparity compare` and the gate compare two inputs of one kind (op logs, checkpoints,
/// runs); the viewer also opens one replay run, and Flight Recorder dumps.
enum class ResolveFor : std::uint8_t { Compare, View };

struct ResolvedInputs {
  InputKind kind = InputKind::Runs;
  std::vector<std::string> paths;  // as given, baseline first
  /// Runs, op logs: both sides opened (baseline, candidate), so that an input that cannot be
  /// opened fails before any report is begun.
  std::vector<model::RunSource> runs;
  std::vector<model::ops::OpRun> op_runs;
};

/// What `paths` hold (the order above). Throws model::InputError naming the input that fits no
/// kind (`compare`: also when not given two paths).
ResolvedInputs resolve_inputs(std::span<const std::string> paths, ResolveFor who);

/// The comparison `gparity compare` runs for resolved op logs, checkpoints or runs, reported to
/// `out`: its exit code (0 parity, 1 divergence or incomplete, 2 nothing compared). `o.title`
/// titles every kind's report; the op logs and checkpoints take its threads and allow_incomplete.
int compare_inputs(const ResolvedInputs& in, const CompareOptions& o, FindingConsumer& out);

/// Whether `path` opens as a run (model::open_run).
bool is_run_input(const std::string& path);
/// Whether `path` is a run directory written by `gparity replay --against` or `--coor`.
bool is_replay_run(const std::string& path);

}  // namespace gparity::diff
