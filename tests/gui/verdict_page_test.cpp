// The verdict page (gui/verdict_page.hpp) on the shared samples of real PyTorch runs
// (../shared/samples; skipped when absent): for the 2x2 mesh runs eager vs compile, the DCP
// fsdp4 vs fsdp2 checkpoints, the Flight Recorder pickles and the DebugMode logs, the window
// opens on the verdict the CLI gives for the same input (the same diff/ call cli/cmd_compare.cpp
// or cli/cmd_collectives.cpp makes, run here independently), names the same first divergence,
// and following its first finding selects the cell, parameter, stream or op it names (in the
// grid, in the run heatmap, and in a view registered later through the cause registry). Every
// new model passes QAbstractItemModelTester. With GPARITY_GUI_SCREENSHOTS=DIR set, each page is
// saved there (docs/img).
#include "gui/verdict_page.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QSettings>
#include <QTabWidget>
#include <QTableView>
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/model/ops/op_run.hpp"
#include "core/model/run/run_source.hpp"
#include "diff/checkpoints/checkpoint_compare.hpp"
#include "diff/collectives/collectives.hpp"
#include "diff/ops/op_compare.hpp"
#include "diff/replay/replay_verdict.hpp"
#include "diff/runs/run_compare.hpp"
#include "gui/graph_canvas.hpp"
#include "gui/main_window.hpp"
#include "gui/run_views.hpp"
#include "gui/verdict.hpp"
#include "gui/views/replay_view.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/shared_data.hpp"

namespace gparity::gui {
namespace {

using gparity::testing::app;
using gparity::testing::sample_folder;
using gparity::testing::screenshot;

// The first divergence the CLI names (its first divergence finding, else the first
// incomplete-evidence one), with the verdict it prints.
struct CliAnswer {
  diff::Verdict verdict;
  std::optional<diff::Finding> first;
};

CliAnswer answer(const diff::CollectingConsumer& c) {
  CliAnswer a{c.verdict, std::nullopt};
  for (const auto sev : {diff::Severity::Divergence, diff::Severity::Incomplete})
    for (const auto& f : c.findings)
      if (!a.first && f.severity == sev) a.first = f;
  return a;
}

class VerdictPageTest : public ::testing::Test {
 protected:
  void SetUp() override { app(); }

  // Opens `paths` as gparity-view does and waits for the verdict; records every cause offered
  // to a view registered after the built-in ones (a view added later).
  void open(const std::vector<std::filesystem::path>& paths, QSize size = {1400, 900}) {
    window_ = std::make_unique<MainWindow>();
    window_->resize(size);
    window_->show();
    window_->register_cause_view([this](const CauseRef& c) {
      followed_.push_back(c);
      return false;
    });
    QStringList args;
    for (const auto& p : paths) args << QString::fromStdString(p.string());
    window_->open_inputs(args);
    ASSERT_TRUE(window_->wait_idle());
    ASSERT_NE(window_->verdict_page()->verdict(), nullptr) << window_->messages().toStdString();
    page_ = window_->verdict_page();
    // The page's two models over the same verdict, checked by the tester through a reset.
    grid_model_ = std::make_unique<VerdictGridModel>();
    findings_model_ = std::make_unique<VerdictFindingsModel>();
    grid_tester_ = std::make_unique<QAbstractItemModelTester>(
        grid_model_.get(), QAbstractItemModelTester::FailureReportingMode::Fatal);
    findings_tester_ = std::make_unique<QAbstractItemModelTester>(
        findings_model_.get(), QAbstractItemModelTester::FailureReportingMode::Fatal);
    grid_model_->set_verdict(page_->verdict());
    findings_model_->set_verdict(page_->verdict());
    EXPECT_EQ(grid_model_->rowCount(), page_->grid_model()->rowCount());
    EXPECT_EQ(findings_model_->rowCount(), page_->findings()->rowCount());
  }

  // The page names what the CLI names: headline, exit code, first divergence.
  void expect_same_as_cli(const CliAnswer& cli) {
    const auto& v = *page_->verdict();
    EXPECT_EQ(v.verdict.headline, cli.verdict.headline);
    EXPECT_EQ(v.verdict.exit_code, cli.verdict.exit_code);
    EXPECT_EQ(v.verdict.summary, cli.verdict.summary);
    ASSERT_EQ(v.first_cause.has_value(), cli.first.has_value());
    if (!cli.first) {
      EXPECT_TRUE(page_->first_divergence().isEmpty());
      return;
    }
    const auto& mine = v.findings[*v.first_cause];
    EXPECT_EQ(mine.where.text(), cli.first->where.text());
    EXPECT_EQ(mine.message, cli.first->message);
    EXPECT_TRUE(page_->first_divergence().endsWith(QString::fromStdString(": " + cli.first->message)))
        << page_->first_divergence().toStdString();
    // Its place, with the input file relative to what was opened.
    EXPECT_TRUE(page_->first_divergence().startsWith(QString::fromStdString(v.where_text(*cli.first))));
    EXPECT_FALSE(page_->first_divergence().contains(QStringLiteral("/work/")));
  }

  // No absolute path on the page's text; the full path in the tooltip.
  void expect_relative_paths(const std::filesystem::path& any_input) {
    const QString shown = page_->paths_label()->text();
    EXPECT_FALSE(shown.contains(QStringLiteral("/work/"))) << shown.toStdString();
    EXPECT_FALSE(shown.contains(QString::fromStdString(std::filesystem::absolute(any_input).string())));
    EXPECT_TRUE(page_->paths_label()->toolTip().contains(
        QString::fromStdString(std::filesystem::absolute(any_input).lexically_normal().string())))
        << page_->paths_label()->toolTip().toStdString();
  }

  // Following a finding showed the evidence view of what was opened (a tab, loaded with the
  // verdict), which took the cause.
  void expect_evidence_view_took_the_cause(const char* screenshot_name) {
    ASSERT_NE(window_->evidence_view(), nullptr) << window_->messages().toStdString();
    EXPECT_NE(window_->tabs()->indexOf(window_->evidence_view()), -1);
    EXPECT_EQ(window_->tabs()->currentWidget(), window_->evidence_view())
        << "the evidence view did not select the followed cause";
    screenshot(*window_, screenshot_name);
  }

  std::unique_ptr<MainWindow> window_;
  VerdictPage* page_ = nullptr;
  std::vector<CauseRef> followed_;
  std::unique_ptr<VerdictGridModel> grid_model_;
  std::unique_ptr<VerdictFindingsModel> findings_model_;
  std::unique_ptr<QAbstractItemModelTester> grid_tester_, findings_tester_;
};

TEST_F(VerdictPageTest, VerdictPageMeshRunsEagerVsCompileMatchesCliAndSelectsTheHeatmapCell) {
  const auto dir = sample_folder("torch-2.11-2x2mesh-mp");
  if (dir.empty()) GTEST_SKIP() << "shared samples not present";
  diff::CollectingConsumer cli;
  diff::compare_runs(model::open_run((dir / "eager").string()), model::open_run((dir / "compile").string()),
                     {}, cli);
  const CliAnswer expected = answer(cli);
  ASSERT_TRUE(expected.first.has_value());
  ASSERT_EQ(expected.first->where.rank, 0);
  ASSERT_EQ(expected.first->where.step, 1);

  open({dir / "eager", dir / "compile"});
  expect_same_as_cli(expected);
  expect_relative_paths(dir / "compile");
  const auto& v = *page_->verdict();
  ASSERT_EQ(v.kind, JobVerdict::Kind::Runs);
  // The whole job: 4 ranks x 6 steps, every rank first diverging at step 1.
  ASSERT_EQ(page_->grid_model()->rowCount(), 4);
  ASSERT_EQ(page_->grid_model()->columnCount(), 6);
  for (int r = 0; r < 4; ++r) {
    const auto first = page_->grid_model()->index(r, 0);
    EXPECT_EQ(first.data(VerdictGridModel::kCellStateRole).toInt(),
              static_cast<int>(CellState::FirstDivergence));
    EXPECT_EQ(page_->grid_model()->index(r, 5).data(VerdictGridModel::kCellStateRole).toInt(),
              static_cast<int>(CellState::Diverged));
  }
  // The page opens with the first divergence selected, and its cell's tooltip names it.
  EXPECT_EQ(page_->grid()->selected_cell(), (std::pair<std::size_t, std::size_t>{0, 0}));
  const QString tip = page_->grid_model()->index(0, 0).data(Qt::ToolTipRole).toString();
  for (const char* part : {"rank 0", "step 1", "tok.weight", "baseline 0x", "candidate 0x"})
    EXPECT_TRUE(tip.contains(QString::fromLatin1(part))) << part << " in " << tip.toStdString();
  screenshot(*window_, "verdict_runs");

  // Following the first finding shows the run heatmap of rank 0, step 1, tok.weight (what the
  // CLI's param_hash_mismatch at rank 0 step 1 names first).
  ASSERT_TRUE(page_->follow_finding(0));
  const RunViewsWidget* runs = window_->run_views();
  ASSERT_NE(runs, nullptr);
  EXPECT_EQ(window_->tabs()->currentWidget(), runs);
  EXPECT_EQ(runs->heatmap_model()->current()->rank, 0);
  EXPECT_EQ(runs->heatmap()->selected_cell(), (std::pair<int, int>{0, 0}));
  EXPECT_EQ(runs->runs().params[0], "tok.weight");
  ASSERT_FALSE(followed_.empty());
  EXPECT_EQ(followed_.back().kind, CauseRef::Kind::RunCell);
  EXPECT_EQ(followed_.back().rank, 0);
  EXPECT_EQ(followed_.back().step, 1);
  // The heatmap shows every rank at once, as the page's grid does: 4 ranks x 6 steps of rows,
  // each rank's first divergence at its step 1 (tok.weight).
  ASSERT_TRUE(runs->heatmap_model()->all_ranks());
  ASSERT_EQ(runs->heatmap_model()->rowCount(), 4 * 6);
  for (int r = 0; r < 4; ++r) {
    const int row = runs->heatmap_model()->row_of(r, 0);
    ASSERT_GE(row, 0);
    EXPECT_EQ(runs->heatmap_model()->headerData(row, Qt::Vertical, Qt::DisplayRole).toString(),
              QStringLiteral("rank %1 · step 1").arg(r));
    EXPECT_TRUE(runs->heatmap_model()->index(row, 0).data(RunHeatmapModel::kFirstDivergenceRole).toBool());
  }
  // A cell of another rank and step: the heatmap follows, to that rank's row.
  ASSERT_TRUE(page_->follow_cell(2, 3));
  EXPECT_EQ(runs->heatmap_model()->current()->rank, 2);
  const int followed_row = runs->heatmap()->selected_cell().first;
  EXPECT_EQ(runs->heatmap_model()->rank_step(followed_row), (std::pair<int, int>{2, 3}));
  EXPECT_TRUE(runs->heatmap_model()
                  ->headerData(followed_row, Qt::Vertical, Qt::DisplayRole)
                  .toString()
                  .startsWith(QStringLiteral("rank 2 · ")));
  EXPECT_EQ(runs->heatmap_model()
                ->index(followed_row, runs->heatmap()->selected_cell().second)
                .data(RunHeatmapModel::kDiffersRole)
                .toBool(),
            true);
  // One rank at a time on request: the same cell, at that rank's own row.
  const_cast<RunViewsWidget*>(runs)->set_all_ranks(false);
  EXPECT_EQ(runs->heatmap_model()->rowCount(), 6);
  EXPECT_EQ(runs->heatmap_model()->headerData(3, Qt::Vertical, Qt::DisplayRole).toString(),
            QStringLiteral("step %1").arg(runs->runs().ranks[2].steps[3]));
  const_cast<RunViewsWidget*>(runs)->set_all_ranks(true);
  ASSERT_TRUE(page_->follow_cell(2, 3));
  window_->tabs()->setCurrentWidget(const_cast<RunViewsWidget*>(runs));
  screenshot(*window_, "verdict_runs_heatmap");
}

TEST_F(VerdictPageTest, VerdictPageDcpCheckpointsAcrossLayoutsMatchCliAndSelectTheParameter) {
  const auto dir = sample_folder("torch-2.11-dcp");
  if (dir.empty()) GTEST_SKIP() << "shared samples not present";
  {
    // fsdp4 vs fsdp2 run folders: every parameter of every common step identical.
    diff::CollectingConsumer cli;
    diff::compare_checkpoints((dir / "fsdp4").string(), (dir / "fsdp2").string(), {}, cli);
    open({dir / "fsdp4", dir / "fsdp2"});
    expect_same_as_cli(answer(cli));
    const auto& v = *page_->verdict();
    ASSERT_EQ(v.kind, JobVerdict::Kind::Checkpoints);
    EXPECT_EQ(v.verdict.exit_code, 0);
    EXPECT_GE(v.grid.rows.size(), 8U);
    EXPECT_EQ(v.grid.columns.size(), 4U);  // steps 0 and 3, baseline and candidate
    EXPECT_EQ(v.grid.count(CellState::Equal), v.grid.cells.size());
    const QString tip = page_->grid_model()->index(0, 0).data(Qt::ToolTipRole).toString();
    EXPECT_TRUE(tip.contains(QStringLiteral("4 chunks of"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("2 chunks of"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("shard hash"))) << tip.toStdString();
    expect_relative_paths(dir / "fsdp2");
    screenshot(*window_, "verdict_checkpoints");
  }
  // Step 0 of fsdp4 vs step 3 of fsdp2: training moved every parameter.
  diff::CollectingConsumer cli;
  diff::compare_checkpoints((dir / "fsdp4" / "step-0").string(), (dir / "fsdp2" / "step-3").string(), {},
                            cli);
  const CliAnswer expected = answer(cli);
  ASSERT_TRUE(expected.first.has_value());
  open({dir / "fsdp4" / "step-0", dir / "fsdp2" / "step-3"});
  expect_same_as_cli(expected);
  ASSERT_TRUE(page_->follow_finding(0) || !followed_.empty());
  ASSERT_FALSE(followed_.empty());
  EXPECT_EQ(followed_.back().kind, CauseRef::Kind::CheckpointParam);
  EXPECT_EQ(followed_.back().param, expected.first->where.parameter);
  const auto sel = page_->grid()->selected_cell();
  ASSERT_TRUE(sel.has_value());
  EXPECT_EQ(page_->verdict()->grid.rows[sel->first], expected.first->where.parameter);
  EXPECT_EQ(page_->verdict()->grid.at(sel->first, sel->second), CellState::FirstDivergence);
  expect_evidence_view_took_the_cause("wired_checkpoints");
}

TEST_F(VerdictPageTest, VerdictPageFlightRecorderPicklesMatchCliAndSelectTheStream) {
  const auto dir = sample_folder("torch-2.11-dcp");
  if (dir.empty()) GTEST_SKIP() << "shared samples not present";
  {
    // One run's pickled dumps: `gparity collectives fsdp4`.
    const std::vector<std::string> paths{(dir / "fsdp4").string()};
    diff::CollectingConsumer cli;
    diff::report_collectives(diff::load_collectives(paths), nullptr, cli);
    open({dir / "fsdp4"});
    expect_same_as_cli(answer(cli));
    const auto& v = *page_->verdict();
    ASSERT_EQ(v.kind, JobVerdict::Kind::Collectives);
    EXPECT_EQ(v.grid.rows.size(), 4U);
    EXPECT_EQ(v.grid.count(CellState::Equal), 4U);
    screenshot(*window_, "verdict_collectives");
  }
  // Rank 0's pickle of fsdp4 against fsdp2's as its baseline (the folders themselves are
  // checkpoints first, as for `gparity compare`):
  // `gparity collectives fsdp4/fr_rank0.pkl --baseline fsdp2/fr_rank0.pkl`.
  const std::vector<std::string> base{(dir / "fsdp2" / "fr_rank0.pkl").string()},
      cand{(dir / "fsdp4" / "fr_rank0.pkl").string()};
  diff::CollectingConsumer cli;
  const auto b = diff::load_collectives(base);
  diff::report_collectives(diff::load_collectives(cand), &b, cli);
  const CliAnswer expected = answer(cli);
  ASSERT_TRUE(expected.first.has_value());
  open({dir / "fsdp2" / "fr_rank0.pkl", dir / "fsdp4" / "fr_rank0.pkl"});
  expect_same_as_cli(expected);
  EXPECT_EQ(page_->verdict()->kind, JobVerdict::Kind::Collectives);
  ASSERT_GT(page_->findings()->rowCount(), 0);
  screenshot(*window_, "verdict_collectives_baseline");  // the page, before its finding is followed
  page_->follow_finding(0);
  ASSERT_FALSE(followed_.empty());
  const CauseRef& c = followed_.back();
  EXPECT_EQ(c.kind, CauseRef::Kind::CollectiveEntry);
  EXPECT_EQ(c.rank, expected.first->where.rank.value_or(-1));
  EXPECT_EQ(c.group, expected.first->where.graph);
  EXPECT_EQ(c.node, expected.first->where.node);
  const auto sel = page_->grid()->selected_cell();
  ASSERT_TRUE(sel.has_value());
  EXPECT_EQ(page_->verdict()->grid.columns[sel->second], expected.first->where.graph);
  EXPECT_EQ(page_->verdict()->grid.rows[sel->first], "rank " + std::to_string(c.rank));
  expect_evidence_view_took_the_cause("wired_collectives");
}

TEST_F(VerdictPageTest, VerdictPageDebugModeLogsMatchCliAndSelectTheOriginOp) {
  const auto dir = sample_folder("torch-2.11-debugmode");
  if (dir.empty()) GTEST_SKIP() << "shared samples not present";
  diff::CollectingConsumer cli;
  diff::ops::compare_op_runs(model::ops::open_op_run((dir / "eager").string()),
                             model::ops::open_op_run((dir / "compile_gelu").string()), {}, cli);
  const CliAnswer expected = answer(cli);
  ASSERT_TRUE(expected.first.has_value());
  open({dir / "eager", dir / "compile_gelu"});
  expect_same_as_cli(expected);
  const auto& v = *page_->verdict();
  ASSERT_EQ(v.kind, JobVerdict::Kind::Ops);
  ASSERT_EQ(v.grid.rows.size(), 2U);
  ASSERT_EQ(v.grid.columns.size(), 2U);
  // Step 1 is where each rank's divergence starts (aten::gelu, origin); step 2 follows from it.
  EXPECT_EQ(v.grid.at(0, 0), CellState::Origin);
  EXPECT_EQ(v.grid.at(1, 0), CellState::Origin);
  EXPECT_EQ(v.grid.at(0, 1), CellState::Propagated);
  screenshot(*window_, "verdict_ops");
  page_->follow_finding(0);
  ASSERT_FALSE(followed_.empty());
  const CauseRef& c = followed_.back();
  EXPECT_EQ(c.kind, CauseRef::Kind::Op);
  EXPECT_EQ(c.rank, *expected.first->where.rank);
  EXPECT_EQ(c.step, *expected.first->where.step);
  EXPECT_EQ(c.node, expected.first->where.node);
  EXPECT_EQ(c.op_index, expected.first->values["eager"]["index"].get<std::int64_t>());
  EXPECT_EQ(page_->grid()->selected_cell(), (std::pair<std::size_t, std::size_t>{0, 0}));
  expect_evidence_view_took_the_cause("wired_ops");
}

// tests/data/ops/debugmode_nnmod, eager against compile_gelu_rank1 (2 ranks, 2 steps): rank 1 is
// the origin, rank 0 received through the all-reduce, and the findings list rank 0 first (rank
// order). The "First:" line names what the headline names, the origin, not the first finding in
// file order; and the 2 x 2 grid uses the page of a 1,700 px window (it was 50 px wide).
TEST_F(VerdictPageTest, VerdictPageNamesTheHeadlinesOriginFirstAndASmallGridFillsThePage) {
  const std::string dir = GPARITY_SOURCE_DIR "/tests/data/ops/debugmode_nnmod/";
  diff::CollectingConsumer cli;
  diff::ops::compare_op_runs(model::ops::open_op_run(dir + "eager"),
                             model::ops::open_op_run(dir + "compile_gelu_rank1"), {}, cli);
  // The scenario: the first divergence in file order is rank 0's, received; the headline leads
  // with rank 1's origin.
  const auto first_in_file = answer(cli).first;
  ASSERT_TRUE(first_in_file.has_value());
  ASSERT_EQ(first_in_file->where.rank, 0);
  ASSERT_EQ(first_in_file->values.value("cause", std::string()), "received");
  ASSERT_NE(cli.verdict.headline.find("first at rank 1 step 1"), std::string::npos) << cli.verdict.headline;

  open({dir + "eager", dir + "compile_gelu_rank1"}, {1700, 1000});
  const auto& v = *page_->verdict();
  ASSERT_EQ(v.kind, JobVerdict::Kind::Ops);
  EXPECT_EQ(v.verdict.headline, cli.verdict.headline);
  ASSERT_TRUE(v.first_cause.has_value());
  const auto& first = v.findings[*v.first_cause];
  EXPECT_EQ(first.where.rank, 1);
  EXPECT_EQ(first.where.step, 1);
  EXPECT_EQ(first.values.value("cause", std::string()), "origin");
  EXPECT_NE(cli.verdict.headline.find(first.where.node), std::string::npos)
      << first.where.node << " is not what the headline names: " << cli.verdict.headline;
  EXPECT_TRUE(page_->first_divergence().startsWith(QString::fromStdString(v.where_text(first))))
      << page_->first_divergence().toStdString();
  // Opened on it: its cell (rank 1, step 1) selected.
  EXPECT_EQ(page_->grid()->selected_cell(), (std::pair<std::size_t, std::size_t>{1, 0}));

  // The grid: 2 ranks x 2 steps, its cells sharing the page.
  ASSERT_EQ(v.grid.rows.size(), 2U);
  ASSERT_EQ(v.grid.columns.size(), 2U);
  QApplication::processEvents();
  auto* grid = page_->grid();
  const QRect all = grid->cell_rect(0, 0).united(grid->cell_rect(1, 1));
  const QRect view = grid->viewport()->rect();
  EXPECT_GT(all.width(), view.width() / 2)
      << "grid " << all.width() << " px wide in a viewport of " << view.width() << " px";
  EXPECT_GT(all.height(), 40);
  EXPECT_TRUE(view.contains(all.adjusted(0, 0, -1, -1))) << "the grid fits: no scrolling to see a 2 x 2 grid";
  // A resized window fits the grid again.
  const int wide = grid->viewport()->width();
  window_->resize(1100, 800);
  QApplication::processEvents();
  ASSERT_LT(grid->viewport()->width(), wide);
  const QRect after = grid->cell_rect(0, 0).united(grid->cell_rect(1, 1));
  EXPECT_TRUE(grid->viewport()->rect().contains(after.adjusted(0, 0, -1, -1)));
  EXPECT_GT(after.width(), grid->viewport()->width() / 2);
  screenshot(*window_, "verdict_ops_received");
}

// Replay record runs (tests/data/replay, real `gparity replay` runs made by make_replay_runs.sh):
// the page gives every rank's verdict as `gparity replay` prints it (diff::judge_replay_run, the
// CLI's judge_replay on the recorded evidence), origin ranks first, and a rank x node grid; the
// first divergence is the CLI's (the origin's first divergent node), and following it selects that
// node in the replay records view, which joined the window as a tab.
void expect_replay_page_matches_cli(MainWindow& window, const std::string& run, const char* name) {
  const auto verdicts = diff::judge_replay_run(run);
  ASSERT_FALSE(verdicts.empty());
  // The CLI's first divergence: the first origin rank's first divergent node, else the first
  // divergent rank's.
  const diff::RankReplayVerdict* first = nullptr;
  int exit_code = 0;
  for (const auto& v : verdicts) {
    exit_code = std::max(exit_code, v.verdict.exit_code);
    if (v.verdict.equal) continue;
    const bool origin = v.verdict.json.value("cause", std::string()) == "origin";
    if (first == nullptr || (origin && first->verdict.json.value("cause", std::string()) != "origin"))
      first = &v;
  }
  ASSERT_NE(first, nullptr) << "both runs diverge";
  const std::string node = first->verdict.json["first_divergent"]["node"];

  auto* page = window.verdict_page();
  ASSERT_NE(page->verdict(), nullptr) << window.messages().toStdString();
  const auto& v = *page->verdict();
  ASSERT_EQ(v.kind, JobVerdict::Kind::Replay);
  EXPECT_EQ(v.verdict.headline, verdicts.front().verdict.overall);
  EXPECT_EQ(v.verdict.exit_code, exit_code);
  ASSERT_TRUE(v.first_cause.has_value());
  const auto& f = v.findings[*v.first_cause];
  EXPECT_EQ(f.where.rank.value_or(-1), first->rank);
  EXPECT_EQ(f.where.node, node);
  EXPECT_EQ(f.message, first->verdict.text);
  EXPECT_TRUE(page->first_divergence().contains(QString::fromStdString(node)))
      << page->first_divergence().toStdString();
  // The grid: every rank x every node, the first divergence in its cell with its cause.
  EXPECT_EQ(v.grid.rows.size(), verdicts.size());
  const auto cell = v.cell_of(v.cause_of(f));
  ASSERT_TRUE(cell.has_value());
  EXPECT_EQ(page->grid()->selected_cell(), cell);
  const auto state = v.grid.at(cell->first, cell->second);
  EXPECT_EQ(cell_state_name(state), first->verdict.json.value("cause", std::string()));
  EXPECT_GT(v.grid.count(CellState::Equal), 0U);
  EXPECT_NE(v.tooltip(cell->first, cell->second).find("xxh3"), std::string::npos);
  // No absolute path on the page, in the title or in the messages.
  EXPECT_FALSE(page->paths_label()->text().contains(QStringLiteral("/work/")));
  EXPECT_FALSE(window.windowTitle().contains(QString::fromStdString(std::filesystem::absolute(run).string())))
      << window.windowTitle().toStdString();
  EXPECT_FALSE(window.messages().contains(QString::fromStdString(std::filesystem::absolute(run).string())))
      << window.messages().toStdString();
  screenshot(window, (std::string("verdict_") + name).c_str());

  // The replay view is a tab; away from the node, then the first finding followed back to it.
  auto* view = window.replay_view();
  ASSERT_NE(view, nullptr) << window.messages().toStdString();
  int other_rank = first->rank;
  for (const auto& r : verdicts)
    if (r.rank != first->rank) other_rank = r.rank;
  view->set_rank(other_rank);
  ASSERT_TRUE(page->follow_finding(page->findings()->row_of(*v.first_cause)));
  EXPECT_EQ(window.tabs()->currentWidget(), static_cast<QWidget*>(view));
  EXPECT_EQ(view->shown_rank(), first->rank);
  EXPECT_EQ(view->selected_node(), node);
  EXPECT_TRUE(view->canvas()->wait_for_layout());  // the replayed graph drawn in the screenshot
  screenshot(window, (std::string("wired_") + name).c_str());
}

TEST_F(VerdictPageTest, VerdictPageReplayCoorRunNamesTheOriginAndSelectsItsNodeInTheReplayView) {
  const std::string run = GPARITY_SOURCE_DIR "/tests/data/replay/coor_run";
  open({run});
  expect_replay_page_matches_cli(*window_, run, "replay_coor");
}

TEST_F(VerdictPageTest, VerdictPageReplayAgainstRunNamesTheFirstDivergentNodeAndSelectsIt) {
  const std::string run = GPARITY_SOURCE_DIR "/tests/data/replay/against_run";
  open({run});
  expect_replay_page_matches_cli(*window_, run, "replay_against");
}

// The shared fsdp2 sample's graphs replayed on the GPU machine (tests/data/replay/FSDP2_RUNS.md):
// --coor of compile_rankbug's joint graph (rank 1's slice bound is rank-derived: origin on rank 1),
// and the forward before vs after Inductor's post-grad passes (a pass that keeps every bit).
TEST_F(VerdictPageTest, VerdictPageReplayFsdp2CoorRunNamesRank1sSliceAndSelectsIt) {
  const std::string run = GPARITY_SOURCE_DIR "/tests/data/replay/fsdp2_coor_joint";
  open({run});
  expect_replay_page_matches_cli(*window_, run, "replay_fsdp2_coor");
  const auto& f = page_->verdict()->findings[*page_->verdict()->first_cause];
  EXPECT_EQ(f.where.rank.value_or(-1), 1);
  EXPECT_EQ(f.where.node, "slice_1");
}

TEST_F(VerdictPageTest, VerdictPageReplayFsdp2BeforeAfterPostGradPassIsGreenOnEveryNode) {
  const std::string run = GPARITY_SOURCE_DIR "/tests/data/replay/fsdp2_against_postgrad";
  const auto verdicts = diff::judge_replay_run(run);
  ASSERT_EQ(verdicts.size(), 2U);
  open({run});
  ASSERT_NE(page_->verdict(), nullptr) << window_->messages().toStdString();
  const auto& v = *page_->verdict();
  ASSERT_EQ(v.kind, JobVerdict::Kind::Replay);
  EXPECT_EQ(v.verdict.headline, verdicts.front().verdict.overall);
  EXPECT_EQ(v.verdict.exit_code, 0);
  EXPECT_FALSE(v.first_cause.has_value());
  EXPECT_EQ(v.grid.rows.size(), 2U);
  // Every compared node of both ranks is equal; nothing is an origin, received or diverged.
  EXPECT_GT(v.grid.count(CellState::Equal), 0U);
  for (const auto s : {CellState::FirstDivergence, CellState::Origin, CellState::Propagated,
                       CellState::Received, CellState::Diverged, CellState::Missing})
    EXPECT_EQ(v.grid.count(s), 0U) << cell_state_name(s);
  screenshot(*window_, "verdict_replay_fsdp2_against");
}

// A run whose rank 1 was killed at step 2 (tests/data/runs/faults), against itself: the verdict
// is INCOMPLETE as the CLI's, rank 1's lost steps are missing evidence, never green, and the page
// names that evidence first.
TEST_F(VerdictPageTest, VerdictPageMissingEvidenceIsNeverGreen) {
  const std::string run = GPARITY_SOURCE_DIR "/tests/data/runs/faults/killed-rank1-step2";
  diff::CollectingConsumer cli;
  diff::compare_runs(model::open_run(run), model::open_run(run), {}, cli);
  const std::vector<std::string> paths{run, run};
  const JobVerdict v = compute_verdict(paths);
  EXPECT_EQ(v.verdict.headline, cli.verdict.headline);
  EXPECT_TRUE(v.verdict.headline.starts_with("INCOMPLETE")) << v.verdict.headline;
  ASSERT_TRUE(v.first_cause.has_value());
  EXPECT_EQ(v.findings[*v.first_cause].severity, diff::Severity::Incomplete);
  const auto row = static_cast<std::size_t>(std::find(v.grid.rows.begin(), v.grid.rows.end(), "rank 1") -
                                            v.grid.rows.begin());
  ASSERT_LT(row, v.grid.rows.size());
  ASSERT_GE(v.grid.columns.size(), 2U);
  EXPECT_EQ(v.grid.columns[0], "step 1");
  for (std::size_t c = 1; c < v.grid.columns.size(); ++c)
    EXPECT_EQ(v.grid.at(row, c), CellState::Missing) << v.grid.columns[c];
  EXPECT_GT(v.grid.count(CellState::Missing), 0U);
  EXPECT_NE(v.tooltip(row, 1).find("missing evidence"), std::string::npos) << v.tooltip(row, 1);
}

TEST_F(VerdictPageTest, VerdictPageInputWithoutVerdictOpensTheGraphAndTheFinishHolds) {
  // A graph has no verdict of its own: the graph views open as before. The window remembers its
  // geometry, the node table has one row-number column, the canvas has a legend and labels at
  // fit-all.
  const QString graph = QStringLiteral(GPARITY_SOURCE_DIR "/tests/data/graph/eager/tiny_export_graph.txt");
  ASSERT_TRUE(std::filesystem::exists(graph.toStdString()));
  {
    MainWindow w;
    w.open_inputs({graph});
    ASSERT_TRUE(w.wait_idle());
    EXPECT_EQ(w.verdict_page()->verdict(), nullptr);
    ASSERT_NE(w.document(), nullptr) << w.messages().toStdString();
    EXPECT_EQ(w.tabs()->currentWidget(), w.canvas());
    auto* table = w.findChild<QTableView*>(QStringLiteral("node_table"));
    ASSERT_NE(table, nullptr);
    EXPECT_TRUE(table->verticalHeader()->isHidden());
    w.resize(1400, 900);
    w.show();
    w.canvas()->fit();
    w.canvas()->viewport()->grab();
    // At fit-all the boxes are too small for the 9 pt text: names are drawn at screen size.
    ASSERT_LT(w.canvas()->scale() * 28, 10);
    EXPECT_GE(w.canvas()->lod_labels().size(), 5U);
    EXPECT_FALSE(w.canvas()->lod_labels().empty())
        << "scale " << w.canvas()->scale() << " boxes " << w.canvas()->current_layout()->view.items.size();
    // The rank findings tab in front of the messages (which name files by their full path).
    if (auto* dock = w.findChild<QDockWidget*>(QStringLiteral("findings_dock"))) dock->raise();
    EXPECT_FALSE(w.verdict_page()->headline().contains(QStringLiteral("/work/")))
        << w.verdict_page()->headline().toStdString();
    screenshot(w, "graph_fit_all_labels");
    w.setGeometry(20, 30, 700, 500);
    w.close();
  }
  MainWindow again;
  EXPECT_EQ(again.size(), QSize(700, 500));
}

}  // namespace
}  // namespace gparity::gui
