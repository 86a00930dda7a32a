// Checkpoints view (gui/views/checkpoints_view.*) offscreen on the shared DCP sample
// (torch-2.11-dcp): fsdp4 vs fsdp2 is parity per parameter as `gparity compare` says
// (diff::compare_checkpoints), with each side's shards read from its .metadata (four chunks of 64
// rows vs two of 128 for tok.weight); two checkpoints whose weights differ open on the first
// parameter the comparison reports as differing.

#include "gui/views/checkpoints_view.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>

#include "diff/checkpoints/checkpoint_compare.hpp"
#include "gui/legend.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/shared_data.hpp"

namespace gparity::gui::views {
namespace {

diff::CollectingConsumer checkpoints_cli_report(const std::string& a, const std::string& b) {
  diff::CollectingConsumer out;
  (void)diff::compare_checkpoints(a, b, {}, out);
  return out;
}

TEST(CheckpointsView, Fsdp4AgainstFsdp2IsParityAndShowsWhichShardsCoverEachParameter) {
  const auto dcp = gparity::testing::sample_folder("torch-2.11-dcp");
  if (dcp.empty()) GTEST_SKIP() << "shared samples not found";
  gparity::testing::app();
  const std::string a = (dcp / "fsdp4").string(), b = (dcp / "fsdp2").string();
  const auto cli = checkpoints_cli_report(a, b);
  auto data = load_checkpoint_layouts(a, b);
  EXPECT_EQ(data.exit_code, 0);
  EXPECT_EQ(data.headline, cli.verdict.headline);
  ASSERT_EQ(data.steps.size(), 2U);
  EXPECT_EQ(data.steps[0].step, 0);
  EXPECT_EQ(data.steps[1].step, 3);
  for (const auto& s : data.steps) {
    ASSERT_EQ(s.params.size(), 8U);
    for (const auto& p : s.params) {
      EXPECT_EQ(p.status, "equal") << p.name;
      EXPECT_EQ(p.xxh3_a, p.xxh3_b) << p.name;
      EXPECT_FALSE(p.xxh3_a.empty()) << p.name;
    }
  }
  const auto& tok = data.steps[1].params[0];
  EXPECT_EQ(tok.name, "model.tok.weight");
  ASSERT_EQ(tok.shards_a.size(), 4U);
  ASSERT_EQ(tok.shards_b.size(), 2U);
  for (int r = 0; r < 4; ++r) {
    const auto& s = tok.shards_a[static_cast<std::size_t>(r)];
    EXPECT_EQ(s.rank, r) << s.file;
    EXPECT_EQ(s.offsets, (std::vector<std::int64_t>{64 * r, 0}));
    EXPECT_EQ(s.sizes, (std::vector<std::int64_t>{64, 128}));
  }
  EXPECT_EQ(tok.shards_b[1].offsets, (std::vector<std::int64_t>{128, 0}));
  EXPECT_EQ(tok.shards_b[1].rank, 1);

  CheckpointsView view(std::move(data));
  view.resize(1280, 560);
  view.show();
  QApplication::processEvents();
  // Everything equal: the last step (the trained weights), its first parameter and its shards.
  EXPECT_EQ(view.shown_step(), 3);
  EXPECT_EQ(view.selected_param(), "model.tok.weight");
  EXPECT_EQ(view.shards_model().rowCount(), 6);
  gparity::testing::screenshot(view, "view_checkpoints");

  CauseRef cause;
  cause.kind = CauseRef::Kind::CheckpointParam;
  cause.step = 0;
  cause.param = "layers.1.w2.weight";  // without the state dict's "model." wrapper
  ASSERT_TRUE(view.select_cause(cause));
  EXPECT_EQ(view.shown_step(), 0);
  EXPECT_EQ(view.selected_param(), "model.layers.1.w2.weight");
  cause.param = "layers.9.w2.weight";
  EXPECT_FALSE(view.select_cause(cause));
  cause.param = "model.out.weight";
  cause.step = 5;
  EXPECT_FALSE(view.select_cause(cause)) << "no step 5";
  EXPECT_EQ(view.selected_param(), "model.layers.1.w2.weight");
  EXPECT_EQ(view.legend()->labels(), (QStringList{"equal", "differs", "missing"}));

  CheckpointParamModel params;
  CheckpointShardModel shards;
  QAbstractItemModelTester t1(&params, QAbstractItemModelTester::FailureReportingMode::Fatal);
  QAbstractItemModelTester t2(&shards, QAbstractItemModelTester::FailureReportingMode::Fatal);
  params.set_step(&view.data().steps[1]);
  shards.set_param(&view.data().steps[1].params[0]);
  EXPECT_EQ(shards.rowCount(), 6);
  shards.set_param(nullptr);
  params.set_step(nullptr);
}

TEST(CheckpointsView, WeightsThatDifferOpenOnTheFirstParameterTheComparisonReports) {
  const auto dcp = gparity::testing::sample_folder("torch-2.11-dcp");
  if (dcp.empty()) GTEST_SKIP() << "shared samples not found";
  gparity::testing::app();
  // Before and after training: every parameter differs, in both layouts.
  const std::string a = (dcp / "fsdp4" / "step-0").string(), b = (dcp / "fsdp2" / "step-3").string();
  const auto cli = checkpoints_cli_report(a, b);
  const diff::Finding* first = nullptr;
  for (const auto& f : cli.findings)
    if (first == nullptr && f.kind == "checkpoint_param_mismatch") first = &f;
  ASSERT_NE(first, nullptr);
  CheckpointsView view(load_checkpoint_layouts(a, b));
  view.show();
  QApplication::processEvents();
  EXPECT_EQ(view.data().exit_code, 1);
  EXPECT_EQ(view.data().headline, cli.verdict.headline);
  EXPECT_EQ(view.shown_step(), -1);
  EXPECT_EQ(view.selected_param(), first->where.parameter);
  const auto& p = view.data().steps[0].params[0];
  EXPECT_EQ(p.status, "differs");
  EXPECT_NE(p.xxh3_a, p.xxh3_b);
}

TEST(CheckpointsView, APathThatHoldsNoCheckpointIsRefusedNamingIt) {
  const std::string runs = std::string(GPARITY_SOURCE_DIR) + "/samples/runs";
  try {
    (void)load_checkpoint_layouts(runs + "/eager", runs + "/compile");
    ADD_FAILURE() << "training runs are not checkpoints";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("samples/runs/eager"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gparity::gui::views
