#pragma once
// Internal to gui/verdict.cpp: the grid of a JobVerdict (gui/verdict.hpp) for each kind of
// evidence, built from the findings the CLI's report holds, and the small helpers both files use
// to name and find grid rows and columns. Not for the page or the views: they read JobVerdict.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gui/verdict.hpp"

namespace gparity::diff {
struct CollectiveRun;
}
namespace gparity::gui::views {
struct ReplayNodeRow;
}

namespace gparity::gui::verdict_grids {

/// "0x" and 16 hex digits.
std::string hex(std::uint64_t v);
/// The index of `s` in `v`, v.size() when absent.
std::size_t index_in(const std::vector<std::string>& v, const std::string& s);
bool is_divergence(const diff::Finding& f);
/// "rank 3", "step 12": the grid's row and column names.
std::string rank_label(std::int64_t r);
std::string step_label(std::int64_t s);
/// The number after `prefix` in `text` ("rank 3" -> 3), -1 when `text` does not start with it.
std::int64_t number_after(std::string_view text, std::string_view prefix);
/// Rank `rank`'s row of node `node` (side a's name), null when absent.
const views::ReplayNodeRow* replay_row(const views::ReplayRecords& r, int rank, const std::string& node);

/// Each fills v.grid from v's findings (and v.runs, v.replay): rank x step for runs and op logs,
/// parameter x (step, side) for checkpoints, rank x stream for collectives, rank x node for
/// replay runs.
void build_run_grid(JobVerdict& v);
void build_checkpoint_grid(JobVerdict& v);
void build_collective_grid(JobVerdict& v, const diff::CollectiveRun& run, const diff::CollectiveRun* base);
void build_op_grid(JobVerdict& v);
void build_replay_grid(JobVerdict& v);

}  // namespace gparity::gui::verdict_grids
