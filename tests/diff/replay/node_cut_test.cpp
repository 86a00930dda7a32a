// Issue 36: replay node records cut short, as a rank killed mid-replay leaves its rank file. On
// the real 2-rank replay tests/data/replay/fsdp2_coor_joint (graphs "own" then "coor" on each
// rank; FSDP2_RUNS.md), compared through compare_runs with a copy whose rank-1 file stops early:
// what lies past the last record is not recorded (INCOMPLETE, exit 1), never a divergence, an
// origin or parity; the other rank, and what both sides recorded, keep their verdicts.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/run/run_source.hpp"
#include "diff/runs/run_compare.hpp"
#include "tests/support/temp_dir.hpp"

namespace {
namespace records_cut {

using namespace gparity;
namespace fs = std::filesystem;

const fs::path kRun = fs::path(GPARITY_SOURCE_DIR) / "tests/data/replay/fsdp2_coor_joint";

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// A copy of the run whose rank-`rank` file keeps its first `keep` lines, plus `partial`
/// characters of the next one (a write cut mid-line).
fs::path cut_copy(const gparity::testing::TempDir& tmp, const std::string& name, int rank, std::size_t keep,
                  std::size_t partial = 0) {
  const fs::path dir = tmp.path() / name;
  fs::copy(kRun, dir, fs::copy_options::recursive);
  const fs::path file = dir / ("rank-" + std::to_string(rank) + ".jsonl");
  const auto lines = lines_of(file);
  std::string text;
  for (std::size_t i = 0; i < keep; ++i) text += lines[i] + "\n";
  if (partial > 0) text += lines[keep].substr(0, partial);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  return dir;
}

/// Line `n` (1-based) of the run's rank-`rank` file, as JSON.
nlohmann::json record_at(int rank, std::size_t n) {
  return nlohmann::json::parse(lines_of(kRun / ("rank-" + std::to_string(rank) + ".jsonl")).at(n - 1));
}

struct Compared {
  int code = -1;
  diff::CollectingConsumer out;
  [[nodiscard]] std::vector<const diff::Finding*> of_kind(std::string_view kind) const {
    std::vector<const diff::Finding*> fs;
    for (const auto& f : out.findings)
      if (f.kind == kind) fs.push_back(&f);
    return fs;
  }
};

Compared compare(const fs::path& a, const fs::path& b, bool allow_incomplete = false) {
  Compared c;
  diff::CompareOptions o;
  o.allow_incomplete = allow_incomplete;
  c.code = diff::compare_runs(model::open_run(a.string()), model::open_run(b.string()), o, c.out);
  return c;
}

/// Never a divergence where the records stop: no divergent node, no origin, no one-sided graph.
void expect_no_divergence(const Compared& c) {
  for (const auto& f : c.out.findings) {
    EXPECT_NE(f.kind, "node_divergence") << f.message;
    EXPECT_NE(f.kind, "node_origin") << f.message;
    EXPECT_NE(f.kind, "node_graph_missing") << f.message;
    EXPECT_NE(f.severity, diff::Severity::Divergence) << f.kind << ": " << f.message;
  }
}

TEST(NodeRecordsCut, TheRunAgainstItsUncutCopyIsParity) {
  gparity::testing::TempDir tmp;
  const auto whole = cut_copy(tmp, "whole", 1, lines_of(kRun / "rank-1.jsonl").size());
  const auto c = compare(kRun, whole);
  EXPECT_EQ(c.code, 0);
  EXPECT_TRUE(c.of_kind("node_records_cut").empty());
}

TEST(NodeRecordsCut, ARankCutInsideItsFirstGraphIsIncompleteThereAndTheNextGraphIsNotRecorded) {
  // Lines 1-2 are the graph records (written before any graph runs), 3-182 graph "own": cut
  // after line 64. Before issue 36: "graph coor has node records in baseline but not in
  // candidate", a divergence (exit 1 for the wrong reason), and own's missing tail silent.
  gparity::testing::TempDir tmp;
  const auto cut = cut_copy(tmp, "cut", 1, 64);
  const auto c = compare(kRun, cut);
  EXPECT_EQ(c.code, 1);
  expect_no_divergence(c);
  const auto cuts = c.of_kind("node_records_cut");
  ASSERT_EQ(cuts.size(), 1u);
  const auto& f = *cuts[0];
  EXPECT_EQ(f.severity, diff::Severity::Incomplete);
  EXPECT_EQ(f.where.rank, 1);
  EXPECT_EQ(f.where.graph, "own");
  EXPECT_EQ(fs::path(f.where.source), cut / "rank-1.jsonl");  // the file whose records stop
  EXPECT_EQ(f.values["side"], "candidate");
  EXPECT_EQ(f.values["last_node"], record_at(1, 64)["node"]);  // where the records stop
  EXPECT_EQ(f.values["first_after"], record_at(1, 65)["node"]);
  EXPECT_GT(f.values["nodes_after"].get<int>(), 100);
  EXPECT_NE(f.message.find("stop at node " + record_at(1, 64)["node"].get<std::string>()), std::string::npos)
      << f.message;
  const auto coor = c.of_kind("node_graph_not_recorded");
  ASSERT_EQ(coor.size(), 1u);
  EXPECT_EQ(coor[0]->severity, diff::Severity::Incomplete);
  EXPECT_EQ(coor[0]->where.rank, 1);
  EXPECT_EQ(coor[0]->where.graph, "coor");
  EXPECT_NE(c.out.verdict.headline.find("INCOMPLETE"), std::string::npos) << c.out.verdict.headline;
  // Rank 0 and what rank 1 recorded keep their verdicts: its "own" nodes before the cut compared.
  for (const auto& ch : c.out.checks) {
    if (ch.name.rfind("nodes ", 0) != 0) continue;
    if (ch.rank == 1 && ch.name == "nodes own") {
      EXPECT_EQ(ch.outcome, diff::Check::Outcome::Skipped) << ch.message;
    } else {
      EXPECT_EQ(ch.outcome, diff::Check::Outcome::Pass)
          << ch.name << ", rank " << *ch.rank << ": " << ch.message;
    }
  }
  // Reported, not failed, with --allow-incomplete: nothing compared differs.
  EXPECT_EQ(compare(kRun, cut, /*allow_incomplete=*/true).code, 0);
}

TEST(NodeRecordsCut, ARankCutBeforeItsFirstNodeRecordedNoGraph) {
  // Only the first "graph" record is left: neither graph is a divergence, both are not recorded.
  gparity::testing::TempDir tmp;
  const auto c = compare(kRun, cut_copy(tmp, "cut", 1, 1));
  EXPECT_EQ(c.code, 1);
  expect_no_divergence(c);
  const auto missing = c.of_kind("node_graph_not_recorded");
  ASSERT_EQ(missing.size(), 2u);
  for (const auto* f : missing) EXPECT_EQ(f->where.rank, 1);
}

TEST(NodeRecordsCut, ARankCutInsideItsLastGraphIsNeverParity) {
  // Cut after line 300, inside "coor" (lines 183-362): before issue 36, exit 0 ("PARITY:
  // bitwise identical") with 52 baseline nodes silently unmatched. A cut mid-line (the reader's
  // truncated tail) says the same.
  gparity::testing::TempDir tmp;
  for (const std::size_t partial : {std::size_t{0}, std::size_t{40}}) {
    const auto cut = cut_copy(tmp, "cut" + std::to_string(partial), 1, 300, partial);
    const auto c = compare(kRun, cut);
    EXPECT_EQ(c.code, 1);
    expect_no_divergence(c);
    const auto cuts = c.of_kind("node_records_cut");
    ASSERT_EQ(cuts.size(), 1u);
    EXPECT_EQ(cuts[0]->where.graph, "coor");
    EXPECT_EQ(cuts[0]->values["last_node"], record_at(1, 300)["node"]);
    EXPECT_EQ(cuts[0]->values["first_after"], record_at(1, 301)["node"]);
    EXPECT_GT(cuts[0]->values["nodes_after"].get<int>(), 0);
    EXPECT_TRUE(c.of_kind("node_graph_not_recorded").empty());
  }
}

TEST(NodeRecordsCut, ANodeCutBetweenItsOutputsIsNotMissingItsLaterOutputs) {
  // Graph "own"'s output node writes one record per output (lines 174-182); cut after line 177.
  // Before issue 36: "output 4: missing in the candidate; origin: its inputs were equal".
  ASSERT_EQ(record_at(1, 177)["node"], "output");
  ASSERT_EQ(record_at(1, 178)["node"], "output");
  std::size_t later = 0;
  const auto all = lines_of(kRun / "rank-1.jsonl");
  for (std::size_t n = 178; n <= all.size() && record_at(1, n).value("node", "") == "output" &&
                            record_at(1, n).value("graph", "") == "own";
       ++n)
    ++later;
  gparity::testing::TempDir tmp;
  const auto c = compare(kRun, cut_copy(tmp, "cut", 1, 177));
  EXPECT_EQ(c.code, 1);
  expect_no_divergence(c);
  const auto cuts = c.of_kind("node_records_cut");
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0]->values["last_node"], "output");
  EXPECT_EQ(cuts[0]->values["last_output"], record_at(1, 177)["output"]);
  EXPECT_EQ(cuts[0]->values["outputs_missing"].get<std::size_t>(), later);
  EXPECT_EQ(cuts[0]->values["nodes_after"], 0);
}

TEST(NodeRecordsCut, ACutBaselineIsIncompleteToo) {
  // The same cut on the baseline's side: the candidate's records past it are not compared.
  gparity::testing::TempDir tmp;
  const auto c = compare(cut_copy(tmp, "cut", 1, 300), kRun);
  EXPECT_EQ(c.code, 1);
  expect_no_divergence(c);
  const auto cuts = c.of_kind("node_records_cut");
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0]->values["side"], "baseline");
  EXPECT_EQ(cuts[0]->values["last_node"], record_at(1, 300)["node"]);
}

}  // namespace records_cut
}  // namespace
