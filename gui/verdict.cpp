#include "gui/verdict.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "diff/collectives/collectives.hpp"
#include "diff/resolve/inputs.hpp"
#include "gui/verdict_grids.hpp"
#include "gui/views/replay_view.hpp"

namespace gparity::gui {
namespace {

namespace fs = std::filesystem;

/// The finding the page names first, as the headline leads: an origin (the earliest step's,
/// findings in file order put a rank that received before the rank it received from), else the
/// first divergence, else the first incomplete evidence.
std::optional<std::size_t> first_cause_of(const std::vector<diff::Finding>& findings) {
  std::optional<std::size_t> origin;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    if (f.severity != diff::Severity::Divergence || !f.values.is_object() ||
        f.values.value("cause", std::string()) != "origin")
      continue;
    if (!origin || f.where.step.value_or(0) < findings[*origin].where.step.value_or(0)) origin = i;
  }
  if (origin) return origin;
  for (const auto severity : {diff::Severity::Divergence, diff::Severity::Incomplete})
    for (std::size_t i = 0; i < findings.size(); ++i)
      if (findings[i].severity == severity) return i;
  return std::nullopt;
}

void keep(JobVerdict& v, const diff::CollectingConsumer& c) {
  v.header = c.header;
  v.findings = c.findings;
  v.checks = c.checks;
  v.verdict = c.verdict;
  v.first_cause = first_cause_of(v.findings);
}

}  // namespace

using verdict_grids::build_checkpoint_grid;
using verdict_grids::build_collective_grid;
using verdict_grids::build_op_grid;
using verdict_grids::build_replay_grid;
using verdict_grids::build_run_grid;
using verdict_grids::hex;
using verdict_grids::index_in;
using verdict_grids::is_divergence;
using verdict_grids::number_after;
using verdict_grids::rank_label;
using verdict_grids::replay_row;
using verdict_grids::step_label;

JobVerdict replay_verdict(std::shared_ptr<const views::ReplayRecords> records) {
  JobVerdict v;
  v.kind = JobVerdict::Kind::Replay;
  const auto& rec = *records;
  v.paths = {rec.run_dir};
  v.command = "gparity replay --" + rec.mode;
  v.header.title = v.command;
  v.header.baseline = rec.label_a;
  v.header.candidate = rec.label_b;
  v.header.mode = "bitwise";
  v.verdict.headline = rec.overall;
  v.verdict.exit_code = rec.exit_code;
  // One finding per rank, its verdict at its first divergent node: origin ranks first, as the
  // overall verdict names them.
  std::vector<const views::ReplayRankNodes*> order;
  for (const auto& r : rec.ranks) order.push_back(&r);
  const auto is_origin = [&](const views::ReplayRankNodes* r) {
    const auto* row = replay_row(rec, r->rank, r->first_node);
    return row != nullptr && row->status == "origin";
  };
  std::stable_partition(order.begin(), order.end(), is_origin);
  for (const auto* r : order) {
    diff::Finding f;
    f.kind = "replay_rank_verdict";
    f.severity = r->first_node.empty() ? diff::Severity::Info : diff::Severity::Divergence;
    f.where.rank = r->rank;
    f.where.graph = rec.label_a;
    f.where.node = r->first_node;
    f.message = r->verdict;
    if (const auto* row = replay_row(rec, r->rank, r->first_node)) {
      f.values = {{"cause", row->status}, {rec.label_a, row->xxh3_a}, {rec.label_b, row->xxh3_b}};
      if (!row->cause.empty()) f.values["classification"] = row->cause;
    }
    v.verdict.summary.push_back(r->verdict);
    v.findings.push_back(std::move(f));
  }
  for (std::size_t i = 0; i < v.findings.size() && !v.first_cause; ++i)
    if (is_divergence(v.findings[i])) v.first_cause = i;
  v.replay = std::move(records);
  build_replay_grid(v);
  return v;
}

const char* cell_state_name(CellState s) noexcept {
  switch (s) {
    case CellState::Equal: return "equal";
    case CellState::FirstDivergence: return "first divergence";
    case CellState::Diverged: return "diverged";
    case CellState::Origin: return "origin";
    case CellState::Propagated: return "propagated";
    case CellState::Received: return "received";
    case CellState::Missing: return "missing evidence";
    case CellState::NotCompared: return "not compared";
  }
  return "?";
}

const char* kind_name(JobVerdict::Kind k) noexcept {
  switch (k) {
    case JobVerdict::Kind::Runs: return "runs";
    case JobVerdict::Kind::Checkpoints: return "checkpoints";
    case JobVerdict::Kind::Collectives: return "collectives";
    case JobVerdict::Kind::Ops: return "op logs";
    case JobVerdict::Kind::Replay: return "replay records";
  }
  return "?";
}

std::size_t VerdictGrid::count(CellState s) const {
  return static_cast<std::size_t>(std::count(cells.begin(), cells.end(), s));
}

std::string shown_path(const std::string& path, std::span<const std::string> bases) {
  const fs::path p = fs::path(path).lexically_normal();
  fs::path common;
  for (const auto& b : bases) {
    const fs::path parent = fs::path(b).lexically_normal().parent_path();
    if (common.empty()) {
      common = parent;
      continue;
    }
    fs::path shared;
    for (auto a = common.begin(), c = parent.begin(); a != common.end() && c != parent.end() && *a == *c;
         ++a, ++c)
      shared /= *a;
    common = shared;
  }
  if (common.empty()) return p.string();
  const fs::path rel = p.lexically_relative(common);
  if (rel.empty() || rel.begin()->string() == "..") return p.string();
  return rel.string();
}

std::string JobVerdict::where_text(const diff::Finding& f) const {
  diff::Location where = f.where;
  if (!where.source.empty()) where.source = shown_path(where.source, paths);
  return where.text();
}

CauseRef JobVerdict::cause_of(const diff::Finding& f) const {
  CauseRef c;
  c.rank = f.where.rank.value_or(-1);
  c.step = f.where.step.value_or(-1);
  switch (kind) {
    case Kind::Runs:
      c.kind = CauseRef::Kind::RunCell;
      c.param = f.where.parameter;
      break;
    case Kind::Checkpoints:
      c.kind = CauseRef::Kind::CheckpointParam;
      c.param = f.where.parameter;
      break;
    case Kind::Collectives:
      c.kind = CauseRef::Kind::CollectiveEntry;
      c.group = f.where.graph;
      c.node = f.where.node;
      // The record is named by node (its place: "record N" of a dump, a graph's node); seq is the
      // Flight Recorder collective_seq_id, which a finding does not carry, or the 1-based
      // position in the stream that a rank-mismatch finding gives.
      c.seq = f.values.is_object() ? f.values.value("position", std::int64_t{-1}) : -1;
      break;
    case Kind::Ops:
      c.kind = CauseRef::Kind::Op;
      c.node = f.where.node;
      c.side = "eager";
      if (const auto e = f.values.find("eager"); e != f.values.end() && e->is_object())
        c.op_index = e->value("index", std::int64_t{-1});
      break;
    case Kind::Replay:
      c.kind = CauseRef::Kind::ReplayNode;
      c.graph = f.where.graph;
      c.node = f.where.node;
      break;
  }
  return c;
}

std::optional<std::pair<std::size_t, std::size_t>> JobVerdict::cell_of(const CauseRef& c) const {
  const auto found = [](const std::vector<std::string>& v,
                        const std::string& s) -> std::optional<std::size_t> {
    const auto i = index_in(v, s);
    return i < v.size() ? std::optional(i) : std::nullopt;
  };
  std::optional<std::size_t> r, col;
  switch (kind) {
    case Kind::Runs:
    case Kind::Ops:
      r = found(grid.rows, rank_label(c.rank));
      col = found(grid.columns, step_label(c.step));
      break;
    case Kind::Collectives:
      r = found(grid.rows, rank_label(c.rank));
      col = found(grid.columns, c.group);
      break;
    case Kind::Replay:
      r = found(grid.rows, rank_label(c.rank));
      col = found(grid.columns, c.node);
      break;
    case Kind::Checkpoints:
      r = found(grid.rows, c.param);
      col = 0;
      for (std::size_t i = 0; i < grid.columns.size(); i += 2)
        if (c.step < 0 || grid.columns[i].starts_with(step_label(c.step) + " ")) {
          col = i + (c.side == "candidate" ? 1 : 0);
          break;
        }
      break;
  }
  if (!r || !col || *col >= grid.columns.size()) return std::nullopt;
  return std::pair{*r, *col};
}

CauseRef JobVerdict::cause_at(std::size_t row, std::size_t column) const {
  const std::size_t at = row * grid.columns.size() + column;
  CauseRef c;
  if (const auto i = grid.finding_of_cell[at]; i >= 0) c = cause_of(findings[static_cast<std::size_t>(i)]);
  switch (kind) {
    case Kind::Runs:
    case Kind::Ops:
      c.kind = kind == Kind::Runs ? CauseRef::Kind::RunCell : CauseRef::Kind::Op;
      c.rank = static_cast<std::int32_t>(number_after(grid.rows[row], "rank "));
      c.step = number_after(grid.columns[column], "step ");
      if (kind == Kind::Runs && c.param.empty() && runs) {
        // The cell's first differing parameter, as the heatmap outlines it.
        for (const auto& r : runs->ranks) {
          if (r.rank != c.rank) continue;
          const auto s = std::find(r.steps.begin(), r.steps.end(), c.step);
          if (s == r.steps.end()) break;
          const auto& d = r.differs[static_cast<std::size_t>(s - r.steps.begin())];
          if (const auto p = std::find(d.begin(), d.end(), true); p != d.end())
            c.param = runs->params[static_cast<std::size_t>(p - d.begin())];
        }
      }
      break;
    case Kind::Collectives:
      c.kind = CauseRef::Kind::CollectiveEntry;
      c.rank = static_cast<std::int32_t>(number_after(grid.rows[row], "rank "));
      c.group = grid.columns[column];
      break;
    case Kind::Checkpoints:
      c.kind = CauseRef::Kind::CheckpointParam;
      c.param = grid.rows[row];
      c.side = column % 2 ? "candidate" : "baseline";
      break;
    case Kind::Replay:
      c.kind = CauseRef::Kind::ReplayNode;
      c.rank = static_cast<std::int32_t>(number_after(grid.rows[row], "rank "));
      c.node = grid.columns[column];
      if (replay) c.graph = replay->label_a;
      break;
  }
  return c;
}

std::string JobVerdict::tooltip(std::size_t row, std::size_t column) const {
  const std::size_t at = row * grid.columns.size() + column;
  const CellState state = grid.cells[at];
  std::string text = grid.rows[row] + " · " + grid.columns[column] + ": " + cell_state_name(state);
  if (kind == Kind::Runs && runs) {
    const auto rank = number_after(grid.rows[row], "rank ");
    const auto step = number_after(grid.columns[column], "step ");
    for (const auto& r : runs->ranks) {
      if (r.rank != rank) continue;
      const auto s = std::find(r.steps.begin(), r.steps.end(), step);
      if (s == r.steps.end()) break;
      const auto si = static_cast<std::size_t>(s - r.steps.begin());
      const auto& d = r.differs[si];
      const auto n = std::count(d.begin(), d.end(), true);
      // The first differing parameter, else the first compared one: its hashes on both sides.
      std::size_t p = static_cast<std::size_t>(std::find(d.begin(), d.end(), true) - d.begin());
      if (p == d.size())
        p = static_cast<std::size_t>(std::find(r.missing[si].begin(), r.missing[si].end(), false) -
                                     r.missing[si].begin());
      if (p < runs->params.size() && si < r.hashes.size() && p < r.hashes[si].size())
        text += "\n" + runs->params[p] + ": baseline " + hex(r.hashes[si][p].first) + " vs candidate " +
                hex(r.hashes[si][p].second);
      text += "\n" + std::to_string(n) + " of " + std::to_string(runs->params.size()) + " parameters differ";
    }
  }
  if (kind == Kind::Replay && replay) {
    const auto rank = static_cast<int>(number_after(grid.rows[row], "rank "));
    if (const auto* r = replay_row(*replay, rank, grid.columns[column])) {
      text += "\n" + r->op + (r->source.empty() ? "" : " at " + r->source);
      if (!r->node_b.empty() && r->node_b != r->node) text += "\n" + replay->label_b + " node: " + r->node_b;
      text += "\n" + replay->label_a + ": xxh3 " + r->xxh3_a + " · shard " + r->shard_a;
      text += "\n" + replay->label_b + ": xxh3 " + r->xxh3_b + " · shard " + r->shard_b;
      if (!r->cause.empty()) text += "\n" + r->cause;
    }
    return text;
  }
  if (kind == Kind::Checkpoints) {
    if (const auto i = grid.finding_of_cell[at]; i >= 0) {
      const auto& vals = findings[static_cast<std::size_t>(i)].values;
      for (const char* side : {"baseline", "candidate"})
        if (vals.contains(side))
          text += std::string("\n") + side + ": layout " + vals[side].value("layout", "") + " · xxh3 " +
                  vals[side].value("xxh3", "") + " · shard hash " + vals[side].value("shard_hash", "");
    }
  } else if (const auto i = grid.finding_of_cell[at]; i >= 0) {
    text += "\n" + where_text(findings[static_cast<std::size_t>(i)]) + ": " +
            findings[static_cast<std::size_t>(i)].message;
  }
  return text;
}

JobVerdict run_verdict(std::shared_ptr<RunPair> runs) {
  JobVerdict v;
  v.kind = JobVerdict::Kind::Runs;
  v.paths = {runs->baseline_path, runs->candidate_path};
  v.command = "gparity compare";
  if (runs->report) keep(v, *runs->report);
  v.runs = std::move(runs);
  build_run_grid(v);
  return v;
}

JobVerdict compute_verdict(std::span<const std::string> paths) {
  // What the paths hold: the resolver `gparity compare` and the gate use (diff/resolve).
  const auto in = diff::resolve_inputs(paths, diff::ResolveFor::View);
  JobVerdict v;
  v.paths = in.paths;
  v.command = "gparity compare";
  diff::CollectingConsumer report;
  switch (in.kind) {
    case diff::InputKind::OpLogs:
      v.kind = JobVerdict::Kind::Ops;
      diff::compare_inputs(in, {}, report);
      keep(v, report);
      build_op_grid(v);
      return v;
    case diff::InputKind::Checkpoints:
      v.kind = JobVerdict::Kind::Checkpoints;
      diff::compare_inputs(in, {}, report);
      keep(v, report);
      build_checkpoint_grid(v);
      return v;
    case diff::InputKind::Runs:
      return run_verdict(std::make_shared<RunPair>(load_run_pair(in.paths[0], in.paths[1])));
    case diff::InputKind::ReplayRun:
      return replay_verdict(
          std::make_shared<const views::ReplayRecords>(views::load_replay_records(in.paths[0])));
    case diff::InputKind::Collectives: break;
  }
  // Flight Recorder dumps and pickles, TORCH_TRACE collectives: `gparity collectives`.
  v.kind = JobVerdict::Kind::Collectives;
  std::optional<diff::CollectiveRun> base;
  if (paths.size() == 2) base = diff::load_collectives(paths.first(1));  // the baseline first
  const auto run = diff::load_collectives(paths.subspan(paths.size() - 1));
  v.command = paths.size() == 2 ? "gparity collectives --baseline" : "gparity collectives";
  diff::report_collectives(run, base ? &*base : nullptr, report);
  keep(v, report);
  build_collective_grid(v, run, base ? &*base : nullptr);
  return v;
}

}  // namespace gparity::gui
