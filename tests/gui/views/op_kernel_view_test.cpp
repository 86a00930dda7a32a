// The kernel table of the op alignment view (gui/views/op_kernel_rows.*, op_kernel_model.*;
// issue 32) offscreen on the checked-in DebugMode logs of Inductor-compiled training
// (tests/data/ops/debugmode_inductor, facts in its README.md): a rank-1-only post-grad pass is
// rank 1's origin at triton_poi_fused_gelu_view_2 with its nodes and source line and rank 0's
// all-reduce received from rank 1, as `gparity compare` reports them; the deterministic repeat
// has no divergent launch; eager against Inductor lists the compiled side's kernels, not
// compared; logs without kernel launches show no kernel table.

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <algorithm>

#include "core/model/ops/op_run.hpp"
#include "diff/ops/op_compare.hpp"
#include "gui/views/op_alignment_view.hpp"
#include "tests/support/qt_test_app.hpp"

namespace gparity::gui::views {
namespace {

const std::string kInductor = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode_inductor/";

/// `gparity compare A B` as the command runs it, its findings kept.
struct Cli {
  int code = -1;
  diff::CollectingConsumer report;
  [[nodiscard]] const diff::Finding* divergence(int rank, std::int64_t step) const {
    for (const auto& f : report.findings)
      if (f.kind == "kernel_divergence" && f.where.rank == rank && f.where.step == step) return &f;
    return nullptr;
  }
};

Cli compare(const std::string& a, const std::string& b) {
  Cli c;
  c.code = diff::ops::compare_op_runs(model::ops::open_op_run(a), model::ops::open_op_run(b), {}, c.report);
  return c;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::size_t kernel_rows(const OpKernelStep& s) {
  return static_cast<std::size_t>(
      std::count_if(s.rows.begin(), s.rows.end(), [](const OpKernelRow& r) { return r.kernel; }));
}

TEST(OpKernelView, ARankOnePassIsTheGeluKernelOnRankOneWithItsNodesAndSourceAndReceivedOnRankZero) {
  gparity::testing::app();
  const Cli cli = compare(kInductor + "inductor", kInductor + "inductor_pass1");
  ASSERT_EQ(cli.code, 1);
  OpAlignmentView view(load_op_alignment(kInductor + "inductor", kInductor + "inductor_pass1"));
  view.resize(1400, 900);
  view.show();
  QApplication::processEvents();
  const auto& k = view.data().kernels;
  EXPECT_EQ(view.data().headline, cli.report.verdict.headline);
  EXPECT_EQ(view.data().exit_code, cli.code);
  ASSERT_TRUE(k.compared);
  EXPECT_TRUE(view.shows_kernels());
  EXPECT_EQ(k.steps.size(), 4U) << "2 ranks x 2 steps";

  // Rank 1, step 1: the origin, with the finding the CLI prints.
  const auto* r1 = k.find(1, 1);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(kernel_rows(*r1), 33U);
  ASSERT_GE(r1->first_row, 0);
  const auto& gelu = r1->rows[static_cast<std::size_t>(r1->first_row)];
  EXPECT_EQ(gelu.name, "triton_poi_fused_gelu_view_2");
  EXPECT_EQ(gelu.status, "first divergence");
  EXPECT_EQ(gelu.cause, "origin, different code");
  EXPECT_TRUE(gelu.kernel);
  EXPECT_EQ(gelu.family, "triton_poi_fused_gelu_view");
  EXPECT_EQ(gelu.code_line, 856);
  EXPECT_TRUE(contains(gelu.post_nodes, "erf")) << comma_joined(gelu.post_nodes);
  EXPECT_TRUE(contains(gelu.post_nodes, "mul_6")) << comma_joined(gelu.post_nodes);
  EXPECT_TRUE(contains(gelu.pre_nodes, "gelu")) << comma_joined(gelu.pre_nodes);
  EXPECT_EQ(gelu.aten, (std::vector<std::string>{"aten.view", "aten.gelu"}));
  ASSERT_FALSE(gelu.sources.empty());
  EXPECT_TRUE(gelu.sources.back().starts_with("gen_inductor.py:36")) << gelu.sources.back();
  EXPECT_EQ(gelu.counterpart, gelu.name);
  const diff::Finding* f1 = cli.divergence(1, 1);
  ASSERT_NE(f1, nullptr);
  EXPECT_EQ(gelu.line, f1->where.line);
  EXPECT_EQ(gelu.finding, f1->message);
  // The two launches before it wrote equal values; its successors read what it wrote.
  for (int i = 0; i < r1->first_row; ++i)
    EXPECT_EQ(r1->rows[static_cast<std::size_t>(i)].status, "equal")
        << r1->rows[static_cast<std::size_t>(i)].name;

  // Rank 0, step 1: the gradient all-reduce, received from rank 1.
  const auto* r0 = k.find(0, 1);
  ASSERT_NE(r0, nullptr);
  ASSERT_GE(r0->first_row, 0);
  const auto& ar = r0->rows[static_cast<std::size_t>(r0->first_row)];
  EXPECT_EQ(ar.name, "c10d::allreduce_");
  EXPECT_FALSE(ar.kernel);
  EXPECT_EQ(ar.cause, "received from rank 1");
  EXPECT_EQ(ar.line, cli.divergence(0, 1)->where.line);

  // The view opens where the kernel verdict leads: rank 1, step 1, the gelu kernel selected and
  // detailed with its nodes and source line.
  EXPECT_EQ(k.lead_rank, 1);
  EXPECT_EQ(view.shown_rank(), 1);
  EXPECT_EQ(view.shown_step(), 1);
  ASSERT_NE(view.selected_kernel(), nullptr);
  EXPECT_EQ(view.selected_kernel()->name, "triton_poi_fused_gelu_view_2");
  const QString detail = view.kernel_detail();
  EXPECT_TRUE(detail.contains(QStringLiteral("post-grad nodes: "))) << detail.toStdString();
  EXPECT_TRUE(detail.contains(QStringLiteral("erf"))) << detail.toStdString();
  EXPECT_TRUE(detail.contains(QStringLiteral("gen_inductor.py:36"))) << detail.toStdString();
  EXPECT_TRUE(detail.contains(QStringLiteral("output code line 856"))) << detail.toStdString();
  const auto& m = view.kernel_model();
  const QModelIndex cause = m.index(r1->first_row, OpKernelModel::Cause);
  EXPECT_EQ(m.data(cause, Qt::DisplayRole).toString(), QStringLiteral("origin, different code"));
  EXPECT_EQ(m.data(m.index(r1->first_row, OpKernelModel::CodeLine), Qt::DisplayRole).toLongLong(), 856);
  gparity::testing::screenshot(view, "view_op_alignment_kernels");

  // Rank 0's step 1 in the view: its kernel table selects the all-reduce.
  view.show_rank_step(0, 1);
  ASSERT_NE(view.selected_kernel(), nullptr);
  EXPECT_EQ(view.selected_kernel()->name, "c10d::allreduce_");
  EXPECT_TRUE(view.kernel_detail().contains(QStringLiteral("received from rank 1")));

  // Following a cause back to rank 1's step 1 selects its first divergent launch again.
  view.show_rank_step(1, 1);
  ASSERT_TRUE(view.select_kernel_row(0));
  EXPECT_NE(view.selected_kernel()->name, "triton_poi_fused_gelu_view_2");
  CauseRef c;
  c.kind = CauseRef::Kind::Op;
  c.rank = 1;
  c.step = 1;
  ASSERT_TRUE(view.select_cause(c));
  ASSERT_NE(view.selected_kernel(), nullptr);
  EXPECT_EQ(view.selected_kernel()->name, "triton_poi_fused_gelu_view_2");
  EXPECT_FALSE(view.select_kernel_row(10'000));
}

TEST(OpKernelView, TheDeterministicRepeatHasNoDivergentLaunch) {
  gparity::testing::app();
  const auto data = load_op_alignment(kInductor + "inductor", kInductor + "inductor_repeat");
  EXPECT_EQ(data.exit_code, 0) << data.headline;
  ASSERT_TRUE(data.kernels.compared);
  EXPECT_EQ(data.kernels.lead_rank, -1);
  ASSERT_EQ(data.kernels.steps.size(), 4U);
  for (const auto& s : data.kernels.steps) {
    EXPECT_EQ(s.first_row, -1) << s.rank << " " << s.step;
    EXPECT_EQ(kernel_rows(s), 33U);
    for (const auto& r : s.rows) {
      EXPECT_TRUE(r.status == "equal" || r.status == "weakly equal" || r.status == "no evidence")
          << r.name << ": " << r.status;
      EXPECT_FALSE(r.counterpart.empty()) << r.name;
    }
  }
}

TEST(OpKernelView, EagerAgainstInductorListsTheCompiledKernelsNotCompared) {
  gparity::testing::app();
  OpAlignmentView view(load_op_alignment(kInductor + "eager", kInductor + "inductor"));
  const auto& k = view.data().kernels;
  EXPECT_FALSE(k.compared);
  EXPECT_EQ(k.side, "candidate");
  EXPECT_TRUE(view.shows_kernels());
  ASSERT_EQ(k.steps.size(), 4U);
  std::size_t mapped = 0;
  for (const auto& s : k.steps) {
    EXPECT_EQ(s.rows.size(), 33U) << "kernel launches only";
    for (const auto& r : s.rows) {
      EXPECT_EQ(r.status, "not compared");
      EXPECT_TRUE(r.kernel);
      mapped += r.code_line > 0 && !r.post_nodes.empty() ? 1 : 0;
    }
  }
  EXPECT_GT(mapped, 0U) << "the inductor run's trace/ gives provenance";
  ASSERT_NE(k.find(view.shown_rank(), view.shown_step()), nullptr);
  EXPECT_EQ(view.kernel_model().rowCount(), 33);
}

TEST(OpKernelView, LogsWithoutKernelLaunchesShowNoKernelTable) {
  gparity::testing::app();
  const std::string logs = std::string(GPARITY_SOURCE_DIR) + "/tests/data/ops/debugmode/";
  OpAlignmentView view(load_op_alignment(logs + "eager", logs + "compile_gelu"));
  EXPECT_TRUE(view.data().kernels.empty());
  EXPECT_TRUE(view.data().kernels.side.empty());
  EXPECT_FALSE(view.shows_kernels());
  EXPECT_EQ(view.kernel_model().rowCount(), 0);
  EXPECT_EQ(view.selected_kernel(), nullptr);
}

TEST(OpKernelModel, IsAValidModelAndShowsNamesEscaped) {
  gparity::testing::app();
  const auto data = load_op_alignment(kInductor + "inductor", kInductor + "inductor_pass1");
  OpKernelModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  for (const auto& s : data.kernels.steps) model.set_step(&s);
  // A name from an input with a control character and no NUL after it in its table.
  OpKernelStep step;
  OpKernelRow row;
  row.status = "differs";
  row.name = std::string("triton_\x1b[31m", 12);
  row.post_nodes = {"mul_6", "erf\x07"};
  row.sources = {"gen.py:1 `x\t= y`", "gen.py:2"};
  step.rows.push_back(row);
  model.set_step(&step);
  ASSERT_EQ(model.rowCount(), 1);
  const QString name = model.data(model.index(0, OpKernelModel::Launch), Qt::DisplayRole).toString();
  EXPECT_FALSE(name.contains(QChar(0x1b)));
  EXPECT_TRUE(name.contains(QStringLiteral("\\x1b"))) << name.toStdString();
  const QString nodes = model.data(model.index(0, OpKernelModel::PostNodes), Qt::DisplayRole).toString();
  EXPECT_FALSE(nodes.contains(QChar(0x07)));
  EXPECT_TRUE(nodes.startsWith(QStringLiteral("mul_6, erf"))) << nodes.toStdString();
  const QString src = model.data(model.index(0, OpKernelModel::Source), Qt::DisplayRole).toString();
  EXPECT_TRUE(src.endsWith(QStringLiteral("(+1)"))) << src.toStdString();
  const QString tip = model.data(model.index(0, OpKernelModel::Launch), Qt::ToolTipRole).toString();
  EXPECT_FALSE(tip.contains(QChar(0x1b)));
  EXPECT_TRUE(tip.contains(QStringLiteral("post-grad nodes: mul_6"))) << tip.toStdString();
  model.set_step(nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

}  // namespace
}  // namespace gparity::gui::views
