// Op alignment view (gui/views/op_alignment_view.*) offscreen on the checked-in DebugMode logs
// (tests/data/ops/debugmode: two ranks, two steps, eager vs aot_eager compile with one wrong gelu
// decomposition): the view opens on the first divergent op `gparity compare` reports
// (diff::ops::compare_op_runs: rank 0, step 1, aten::gelu, origin), with its decomposition's
// compiled ops beside it; eager vs the correct compile has no first divergence.

#include "gui/views/op_alignment_view.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>

#include "core/model/ops/op_run.hpp"
#include "diff/ops/op_compare.hpp"
#include "gui/legend.hpp"
#include "tests/support/qt_test_app.hpp"

namespace gparity::gui::views {
namespace {

const std::string kLogs = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode/";

TEST(OpAlignmentView, CompileGeluOpensOnTheCliFirstDivergenceWithItsDecomposition) {
  gparity::testing::app();
  diff::CollectingConsumer cli;
  const int code = diff::ops::compare_op_runs(model::ops::open_op_run(kLogs + "eager"),
                                              model::ops::open_op_run(kLogs + "compile_gelu"), {}, cli);
  EXPECT_EQ(code, 1);
  const diff::Finding* first = nullptr;
  for (const auto& f : cli.findings)
    if (first == nullptr && f.kind == "op_divergence") first = &f;
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->where.node, "aten::gelu");

  OpAlignmentView view(load_op_alignment(kLogs + "eager", kLogs + "compile_gelu"));
  view.resize(1400, 640);
  view.show();
  QApplication::processEvents();
  EXPECT_EQ(view.data().exit_code, code);
  EXPECT_EQ(view.data().headline, cli.verdict.headline);
  EXPECT_EQ(view.shown_rank(), *first->where.rank);
  EXPECT_EQ(view.shown_step(), *first->where.step);
  const auto* row = view.selected_row();
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->status, "first divergence");
  EXPECT_EQ(row->eager_op, first->where.node);
  EXPECT_EQ(row->eager_line, first->where.line);
  EXPECT_EQ(row->source, "/workspace/train_debugmode.py:37");
  EXPECT_FALSE(row->compiled_op.empty()) << "the decomposition's first op is beside it";
  // The rest of the decomposition on the rows beneath (aten::mul.Tensor x6, add x2, tanh).
  const auto& step = view.data().ranks[0].steps[static_cast<std::size_t>(view.data().ranks[0].first_step)];
  const auto at = static_cast<std::size_t>(step.first_row);
  std::size_t counterparts = 0;
  for (std::size_t k = at + 1; k < step.rows.size() && step.rows[k].status == "counterpart"; ++k)
    ++counterparts;
  EXPECT_EQ(counterparts + 1, 9U) << "gelu's counterparts: mul x6, add x2, tanh";
  EXPECT_EQ(row->paired_by, "decomposition");
  gparity::testing::screenshot(view, "view_op_alignment");

  // Rank 1's step 2: its first divergence follows step 1 (aten::embedding).
  CauseRef cause;
  cause.kind = CauseRef::Kind::Op;
  cause.rank = 1;
  cause.step = 2;
  ASSERT_TRUE(view.select_cause(cause));
  EXPECT_EQ(view.shown_rank(), 1);
  EXPECT_EQ(view.shown_step(), 2);
  ASSERT_NE(view.selected_row(), nullptr);
  EXPECT_EQ(view.selected_row()->eager_op, "aten::embedding");
  // An op by its record index.
  cause.op_index = row->eager_index + 1;
  cause.step = 1;
  ASSERT_TRUE(view.select_cause(cause));
  EXPECT_EQ(view.selected_row()->eager_index, cause.op_index);
  cause.op_index = 1'000'000;
  EXPECT_FALSE(view.select_cause(cause));
  cause.rank = 5;
  cause.op_index = -1;
  EXPECT_FALSE(view.select_cause(cause));
  EXPECT_TRUE(view.legend()->labels().contains(QStringLiteral("first divergence")));

  OpAlignmentModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_step(&step);
  model.set_step(nullptr);
}

// debugmode_nnmod: modules recorded, rank 1's gelu decomposed wrongly, rank 0 receives it
// through the gradient all-reduce. The view opens where the CLI's headline leads (the origin,
// rank 1), and rank 0's first divergence is the all-reduce, received.
TEST(OpAlignmentView, OpensOnTheOriginRankTheCliHeadlineNamesWithItsModule) {
  gparity::testing::app();
  const std::string logs = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode_nnmod/";
  diff::CollectingConsumer cli;
  (void)diff::ops::compare_op_runs(model::ops::open_op_run(logs + "eager"),
                                   model::ops::open_op_run(logs + "compile_gelu_rank1"), {}, cli);
  OpAlignmentView view(load_op_alignment(logs + "eager", logs + "compile_gelu_rank1"));
  view.resize(1400, 640);
  view.show();
  QApplication::processEvents();
  EXPECT_EQ(view.data().headline, cli.verdict.headline);
  EXPECT_NE(cli.verdict.headline.find("first at rank 1 step 1, aten::gelu"), std::string::npos)
      << cli.verdict.headline;
  EXPECT_EQ(view.shown_rank(), 1);
  EXPECT_EQ(view.shown_step(), 1);
  ASSERT_NE(view.selected_row(), nullptr);
  EXPECT_EQ(view.selected_row()->eager_op, "aten::gelu");
  EXPECT_EQ(view.selected_row()->module, "Net.layers.0");
  gparity::testing::screenshot(view, "view_op_alignment_module");
  // Rank 0's own first divergence, as the CLI reports it.
  const diff::Finding* rank0 = nullptr;
  for (const auto& f : cli.findings)
    if (rank0 == nullptr && f.kind == "op_divergence" && f.where.rank == 0) rank0 = &f;
  ASSERT_NE(rank0, nullptr);
  CauseRef cause;
  cause.kind = CauseRef::Kind::Op;
  cause.rank = 0;
  ASSERT_TRUE(view.select_cause(cause));
  EXPECT_EQ(view.shown_step(), *rank0->where.step);
  ASSERT_NE(view.selected_row(), nullptr);
  EXPECT_EQ(view.selected_row()->eager_line, rank0->where.line);
  EXPECT_EQ(view.selected_row()->eager_op, "c10d::allreduce_");
  const auto& r0 = view.data().ranks[0];
  EXPECT_EQ(r0.steps[static_cast<std::size_t>(r0.first_step)].first_cause, "received");
}

TEST(OpAlignmentView, InputTheCliRefusesIsRefusedNamingIt) {
  const std::string missing = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/no_such_logs";
  try {
    (void)load_op_alignment(missing, kLogs + "compile");
    ADD_FAILURE() << "no logs there";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_logs"), std::string::npos) << e.what();
  }
}

TEST(OpAlignmentView, EagerAgainstTheCorrectCompileHasNoFirstDivergence) {
  gparity::testing::app();
  const auto data = load_op_alignment(kLogs + "eager", kLogs + "compile");
  EXPECT_EQ(data.exit_code, 0);
  ASSERT_EQ(data.ranks.size(), 2U);
  for (const auto& r : data.ranks) {
    EXPECT_EQ(r.first_step, -1) << r.rank;
    for (const auto& s : r.steps) {
      EXPECT_EQ(s.first_row, -1);
      for (const auto& row : s.rows) EXPECT_NE(row.status, "divergent") << row.eager_op;
    }
  }
}

}  // namespace
}  // namespace gparity::gui::views
