#pragma once
// The verdict gparity-view opens on (issue 27): whatever one or two paths hold, the report the CLI
// prints for them, computed by the same diff/ calls the CLI makes (`gparity compare` for run pairs,
// checkpoints and DebugMode op logs, `gparity collectives [--baseline]` for Flight Recorder dumps
// and pickles, `gparity replay --against / --coor` for a replay run directory), kept whole (header, findings,
// checks, verdict), plus a grid of the whole job at a glance: rank x step for runs and op logs, parameter x
// layout for checkpoints, rank x stream for collectives, rank x node for replay runs. Every cell and every
// finding maps to a CauseRef (gui/cause_ref.hpp), which the views select. No Qt widgets here: compute_verdict
// runs on a worker thread and its result is handed to the GUI thread as an immutable value. Throws
// model::InputError for input it cannot use (the same message the CLI gives, exit 2).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "diff/report/finding.hpp"
#include "gui/cause_ref.hpp"
#include "gui/run_models.hpp"

namespace gparity::gui {
namespace views {
struct ReplayRecords;  // gui/views/replay_view.hpp
}

/// What a grid cell shows, in the order the legend lists them.
enum class CellState : std::uint8_t {
  Equal,            // compared, bitwise equal
  FirstDivergence,  // where the row (rank / parameter) first left parity
  Diverged,         // differs after the first divergence (no causal class known)
  Origin,           // the divergence starts here (cross-rank causality)
  Propagated,       // carries an earlier divergence of the same rank
  Received,         // reached this rank through a collective
  Missing,          // evidence is missing (incomplete: a rank, step or stream on one side only)
  NotCompared,      // nothing to compare here (not recorded in both)
};
inline constexpr int kCellStateCount = 8;
/// "equal", "first divergence", ... as the legend and tooltips name them.
const char* cell_state_name(CellState s) noexcept;

struct VerdictGrid {
  std::string row_title;     // "rank", "parameter"
  std::string column_title;  // "step", "stream", "layout"
  std::vector<std::string> rows, columns;
  std::vector<CellState> cells;  // row-major, rows.size() x columns.size()
  /// Row-major: the index in JobVerdict::findings of the finding that decided the cell, or -1.
  std::vector<std::int32_t> finding_of_cell;
  [[nodiscard]] CellState at(std::size_t row, std::size_t column) const {
    return cells[row * columns.size() + column];
  }
  [[nodiscard]] std::size_t count(CellState s) const;
};

struct JobVerdict {
  enum class Kind : std::uint8_t { Runs, Checkpoints, Collectives, Ops, Replay };
  Kind kind = Kind::Runs;
  std::vector<std::string> paths;  // as opened (baseline first)
  std::string command;             // the CLI command that prints the same report
  diff::ReportHeader header;
  std::vector<diff::Finding> findings;
  std::vector<diff::Check> checks;
  diff::Verdict verdict;
  VerdictGrid grid;
  /// Index into findings of what the headline leads with: an origin (the earliest step's), else
  /// the first divergence, else the first incomplete-evidence finding: what the page names first
  /// and selects when opened.
  std::optional<std::size_t> first_cause;
  /// Runs only: both runs aligned rank by rank (the run views' data).
  std::shared_ptr<RunPair> runs;
  /// Replay runs only: every rank's nodes as judged (the replay view's data).
  std::shared_ptr<const views::ReplayRecords> replay;

  /// The cause a finding names; the cell it falls in, when it falls in one.
  [[nodiscard]] CauseRef cause_of(const diff::Finding& f) const;
  [[nodiscard]] std::optional<std::pair<std::size_t, std::size_t>> cell_of(const CauseRef& c) const;
  /// The cause of a grid cell.
  [[nodiscard]] CauseRef cause_at(std::size_t row, std::size_t column) const;
  /// The finding's place as Location::text() gives it, its input file relative to what was
  /// opened (the page shows no absolute path).
  [[nodiscard]] std::string where_text(const diff::Finding& f) const;
  /// "step 3 · rank 1 · tok.weight: differs (baseline 0x… vs candidate 0x…)".
  [[nodiscard]] std::string tooltip(std::size_t row, std::size_t column) const;
};
const char* kind_name(JobVerdict::Kind k) noexcept;

/// The verdict of one or two paths, as the CLI gives it; what they hold is decided by
/// diff::resolve_inputs (ResolveFor::View), the resolver `gparity compare` and the gate use:
///  - two op-log paths: `gparity compare` (op by op); a mix of op logs and other input: the
///    CLI's error;
///  - two checkpoint paths: `gparity compare` (per parameter, across layouts);
///  - two runs: `gparity compare` (step by step, rank by rank);
///  - one `gparity replay --against / --coor` run directory: every rank's verdict as
///    `gparity replay` printed it (diff::judge_replay_run), origin ranks first;
///  - one path holding Flight Recorder dumps or pickles: `gparity collectives PATH`; two such:
///    `gparity collectives B --baseline A`.
/// Throws model::InputError when none applies or the input is unusable.
JobVerdict compute_verdict(std::span<const std::string> paths);

/// The run-pair verdict of runs already loaded (load_run_pair keeps compare_runs' report); the
/// bench builds large pairs this way.
JobVerdict run_verdict(std::shared_ptr<RunPair> runs);

/// The verdict of a replay run already judged (load_replay_records): a finding per rank (its
/// verdict, at its first divergent node), origin ranks first, and a rank x node grid.
JobVerdict replay_verdict(std::shared_ptr<const views::ReplayRecords> records);

/// `path` relative to the nearest of `bases` (or their common parent) when it lies under one,
/// else as it is: what the page shows (the full path goes in the tooltip).
std::string shown_path(const std::string& path, std::span<const std::string> bases);

}  // namespace gparity::gui
