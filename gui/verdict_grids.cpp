// The grids of gui/verdict.hpp's JobVerdict, one builder per kind of evidence, and the helpers
// verdict.cpp shares with them (labels, lookups): split from verdict.cpp, which computes the
// verdicts and maps cells and findings to causes.
#include "gui/verdict_grids.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>

#include "diff/collectives/collectives.hpp"
#include "gui/views/replay_view.hpp"

namespace gparity::gui::verdict_grids {
namespace {

void size_grid(VerdictGrid& g, CellState fill) {
  g.cells.assign(g.rows.size() * g.columns.size(), fill);
  g.finding_of_cell.assign(g.cells.size(), -1);
}

// Per row, the first divergent cell (in column order) is the first divergence; later ones stay
// Diverged. Causal states (origin, ...) are kept as they are.
void mark_first_per_row(VerdictGrid& g) {
  for (std::size_t r = 0; r < g.rows.size(); ++r)
    for (std::size_t c = 0; c < g.columns.size(); ++c) {
      auto& s = g.cells[r * g.columns.size() + c];
      if (s == CellState::Diverged) {
        s = CellState::FirstDivergence;
        break;
      }
      if (s == CellState::Origin || s == CellState::Propagated || s == CellState::Received) break;
    }
}

}  // namespace

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::size_t index_in(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<std::size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

bool is_divergence(const diff::Finding& f) {
  return f.severity == diff::Severity::Divergence;
}

std::string rank_label(std::int64_t r) {
  return "rank " + std::to_string(r);
}
std::string step_label(std::int64_t s) {
  return "step " + std::to_string(s);
}

std::int64_t number_after(std::string_view text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return -1;
  std::int64_t v = -1;
  const auto rest = text.substr(prefix.size());
  std::from_chars(rest.data(), rest.data() + rest.size(), v);
  return v;
}

const views::ReplayNodeRow* replay_row(const views::ReplayRecords& r, int rank, const std::string& node) {
  if (const auto* nodes = r.rank(rank))
    for (const auto& row : nodes->rows)
      if (row.node == node) return &row;
  return nullptr;
}

// ---- runs: rank x step ----

void build_run_grid(JobVerdict& v) {
  const RunPair& runs = *v.runs;
  auto& g = v.grid;
  g.row_title = "rank";
  g.column_title = "step";
  std::set<std::int64_t> steps;
  std::set<int> ranks;
  for (const auto& r : runs.ranks) {
    ranks.insert(r.rank);
    steps.insert(r.steps.begin(), r.steps.end());
  }
  for (const auto& f : v.findings) {
    if (f.where.rank) ranks.insert(*f.where.rank);
    if (f.where.step && f.severity >= diff::Severity::Incomplete) steps.insert(*f.where.step);
  }
  std::map<std::int64_t, std::size_t> column;
  for (const auto s : steps) {
    column.emplace(s, g.columns.size());
    g.columns.push_back(step_label(s));
  }
  std::map<int, std::size_t> row;
  for (const auto r : ranks) {
    row.emplace(r, g.rows.size());
    g.rows.push_back(rank_label(r));
  }
  size_grid(g, CellState::Missing);
  const std::size_t width = g.columns.size();
  for (const auto& r : runs.ranks) {
    const std::size_t base = row.at(r.rank) * width;
    for (std::size_t s = 0; s < r.steps.size(); ++s) {
      const auto& d = r.differs[s];
      const auto& m = r.missing[s];
      const bool differs = std::find(d.begin(), d.end(), true) != d.end();
      const bool all_missing = !m.empty() && std::find(m.begin(), m.end(), false) == m.end();
      g.cells[base + column.at(r.steps[s])] = differs       ? CellState::Diverged
                                              : all_missing ? CellState::NotCompared
                                                            : CellState::Equal;
    }
  }
  // The engine's findings decide too: a loss that differs at a step whose hashes are equal, and
  // missing evidence, which no cell may hide.
  for (std::size_t i = 0; i < v.findings.size(); ++i) {
    const auto& f = v.findings[i];
    if (!f.where.rank || f.severity < diff::Severity::Incomplete) continue;
    const std::size_t r = row.at(*f.where.rank);
    const auto mark = [&](std::size_t c) {
      auto& cell = g.cells[r * width + c];
      if (is_divergence(f) && cell != CellState::Missing) cell = CellState::Diverged;
      if (f.severity == diff::Severity::Incomplete) cell = CellState::Missing;
      if (g.finding_of_cell[r * width + c] < 0)
        g.finding_of_cell[r * width + c] = static_cast<std::int32_t>(i);
    };
    if (f.where.step)
      mark(column.at(*f.where.step));
    else if (f.severity == diff::Severity::Incomplete)
      for (std::size_t c = 0; c < width; ++c)
        if (g.cells[r * width + c] == CellState::Missing) mark(c);
  }
  mark_first_per_row(g);
}

// ---- checkpoints: parameter x (step, side) ----

void build_checkpoint_grid(JobVerdict& v) {
  auto& g = v.grid;
  g.row_title = "parameter";
  g.column_title = "layout";
  std::vector<std::int64_t> steps;
  for (const auto& f : v.findings) {
    if (!f.kind.starts_with("checkpoint_param_")) continue;
    if (index_in(g.rows, f.where.parameter) == g.rows.size()) g.rows.push_back(f.where.parameter);
    const std::int64_t s = f.where.step.value_or(-1);
    if (std::find(steps.begin(), steps.end(), s) == steps.end()) steps.push_back(s);
  }
  const std::array<std::string, 2> sides = {"baseline", "candidate"};
  for (const auto s : steps)
    for (std::size_t k = 0; k < 2; ++k)
      g.columns.push_back((s >= 0 ? step_label(s) + " · " : std::string()) + sides[k] + ": " +
                          shown_path(v.paths[k], v.paths));
  size_grid(g, CellState::NotCompared);
  for (std::size_t i = 0; i < v.findings.size(); ++i) {
    const auto& f = v.findings[i];
    if (!f.kind.starts_with("checkpoint_param_")) continue;
    const std::size_t r = index_in(g.rows, f.where.parameter);
    const std::size_t c0 =
        2 * static_cast<std::size_t>(std::find(steps.begin(), steps.end(), f.where.step.value_or(-1)) -
                                     steps.begin());
    for (std::size_t k = 0; k < 2; ++k) {
      const std::size_t at = r * g.columns.size() + c0 + k;
      g.finding_of_cell[at] = static_cast<std::int32_t>(i);
      if (f.kind == "checkpoint_param_equal")
        g.cells[at] = CellState::Equal;
      else if (f.kind == "checkpoint_param_missing")
        g.cells[at] = f.values.contains(sides[k]) ? CellState::Diverged : CellState::Missing;
      else
        g.cells[at] = CellState::Diverged;
    }
  }
  // The first differing parameter of each step (registration order) is its first divergence.
  for (std::size_t c = 0; c < g.columns.size(); ++c)
    for (std::size_t r = 0; r < g.rows.size(); ++r)
      if (auto& s = g.cells[r * g.columns.size() + c]; s == CellState::Diverged) {
        s = CellState::FirstDivergence;
        break;
      }
}

// ---- collectives: rank x stream ----

void build_collective_grid(JobVerdict& v, const diff::CollectiveRun& run, const diff::CollectiveRun* base) {
  auto& g = v.grid;
  g.row_title = "rank";
  g.column_title = "stream";
  std::set<std::int32_t> ranks;
  for (const auto* r : {&run, base})
    if (r)
      for (const auto& rc : r->ranks) {
        ranks.insert(rc.rank);
        for (const auto& s : rc.streams)
          if (index_in(g.columns, s.name) == g.columns.size()) g.columns.push_back(s.name);
      }
  for (const auto r : ranks) g.rows.push_back(rank_label(r));
  size_grid(g, CellState::NotCompared);
  const std::vector<std::int32_t> rank_of(ranks.begin(), ranks.end());
  const auto row_of = [&](std::int64_t rank) {
    return static_cast<std::size_t>(std::find(rank_of.begin(), rank_of.end(), rank) - rank_of.begin());
  };
  // A stream a rank records is compared; a member of its group that lacks it is missing evidence.
  for (const auto& rc : run.ranks)
    for (const auto& s : rc.streams) {
      const std::size_t c = index_in(g.columns, s.name);
      g.cells[row_of(rc.rank) * g.columns.size() + c] = CellState::Equal;
    }
  for (const auto& rc : run.ranks)
    for (const auto& s : rc.streams)
      for (const auto member : s.ranks)
        if (const auto r = row_of(member); r < g.rows.size()) {
          auto& cell = g.cells[r * g.columns.size() + index_in(g.columns, s.name)];
          if (cell == CellState::NotCompared) cell = CellState::Missing;
        }
  for (std::size_t i = 0; i < v.findings.size(); ++i) {
    const auto& f = v.findings[i];
    if (!f.where.rank || f.severity < diff::Severity::Incomplete) continue;
    const std::size_t r = row_of(*f.where.rank);
    const std::size_t c = index_in(g.columns, f.where.graph);
    if (r >= g.rows.size() || c >= g.columns.size()) continue;
    const std::size_t at = r * g.columns.size() + c;
    g.cells[at] = is_divergence(f) ? CellState::Diverged : CellState::Missing;
    if (g.finding_of_cell[at] < 0) g.finding_of_cell[at] = static_cast<std::int32_t>(i);
  }
  mark_first_per_row(g);
}

// ---- op logs: rank x step, with the op comparison's causes ----

CellState op_state(const diff::Finding& f) {
  if (f.kind == "op_divergence_follows") return CellState::Propagated;
  const auto cause = f.values.value("cause", std::string());
  if (cause == "origin") return CellState::Origin;
  if (cause == "received") return CellState::Received;
  if (cause.empty()) return CellState::Diverged;
  return CellState::Propagated;  // propagated, follows step N, input
}

void build_op_grid(JobVerdict& v) {
  auto& g = v.grid;
  g.row_title = "rank";
  g.column_title = "step";
  std::set<int> ranks;
  std::set<std::int64_t> steps;
  for (const auto& f : v.findings) {
    if (f.where.rank) ranks.insert(*f.where.rank);
    if (f.where.step) steps.insert(*f.where.step);
  }
  for (const auto r : ranks) g.rows.push_back(rank_label(r));
  for (const auto s : steps) g.columns.push_back(step_label(s));
  size_grid(g, CellState::NotCompared);
  const auto at = [&](const diff::Finding& f) {
    const auto r = static_cast<std::size_t>(std::distance(ranks.begin(), ranks.find(*f.where.rank)));
    const auto c = static_cast<std::size_t>(std::distance(steps.begin(), steps.find(*f.where.step)));
    return r * g.columns.size() + c;
  };
  for (std::size_t i = 0; i < v.findings.size(); ++i) {
    const auto& f = v.findings[i];
    if (!f.where.rank || !f.where.step) continue;
    auto& cell = g.cells[at(f)];
    if (f.kind == "op_step_compared") {
      if (cell == CellState::NotCompared)
        cell = f.values.value("divergent_ops", 0) > 0 ? CellState::Diverged : CellState::Equal;
      continue;
    }
    if (f.severity == diff::Severity::Incomplete) {
      cell = CellState::Missing;
    } else if (is_divergence(f)) {
      if (g.finding_of_cell[at(f)] >= 0) continue;  // the step's first divergent op decides
      cell = op_state(f);
    } else {
      continue;
    }
    if (g.finding_of_cell[at(f)] < 0) g.finding_of_cell[at(f)] = static_cast<std::int32_t>(i);
  }
  mark_first_per_row(g);
}

// ---- replay runs: rank x node ----

CellState replay_state(const std::string& status) {
  if (status == "equal") return CellState::Equal;
  if (status == "origin") return CellState::Origin;
  if (status == "propagated") return CellState::Propagated;
  if (status == "received") return CellState::Received;
  if (status == "unmatched") return CellState::NotCompared;
  return CellState::Diverged;  // input, unknown
}

void build_replay_grid(JobVerdict& v) {
  const auto& rec = *v.replay;
  auto& g = v.grid;
  g.row_title = "rank";
  g.column_title = "node";
  // Nodes in walk order; a rank's own graph (--coor) may hold nodes the others lack.
  for (const auto& rank : rec.ranks) {
    g.rows.push_back(rank_label(rank.rank));
    for (const auto& row : rank.rows)
      if (index_in(g.columns, row.node) == g.columns.size()) g.columns.push_back(row.node);
  }
  size_grid(g, CellState::NotCompared);
  for (std::size_t r = 0; r < rec.ranks.size(); ++r)
    for (const auto& row : rec.ranks[r].rows)
      g.cells[r * g.columns.size() + index_in(g.columns, row.node)] = replay_state(row.status);
  for (std::size_t i = 0; i < v.findings.size(); ++i) {
    const auto& f = v.findings[i];
    if (!f.where.rank || f.where.node.empty()) continue;
    const auto r = index_in(g.rows, rank_label(*f.where.rank));
    const auto c = index_in(g.columns, f.where.node);
    if (r < g.rows.size() && c < g.columns.size())
      g.finding_of_cell[r * g.columns.size() + c] = static_cast<std::int32_t>(i);
  }
}

}  // namespace gparity::gui::verdict_grids
