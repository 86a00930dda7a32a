// gparity-view's bucket-order view under QT_QPA_PLATFORM=offscreen, on two tiny traces written by
// the trace writer (as tests/cli/cli_buckets_test.cpp): the runtime's one-block model on 2 ranks,
// packed in registration order (baseline) and in execution order (candidate, what
// `gparity run --bucket-order execution` records). The model lists every member with its byte
// offset in both plans and flags the one report_buckets finds moved (attention_norm: byte 20480
// in the baseline, byte 0 in the candidate); QAbstractItemModelTester passes; RunViewsWidget
// gets a Buckets tab. With GPARITY_GUI_SCREENSHOTS=DIR set, the tab is saved as run_buckets.png.
#include "gui/bucket_view.hpp"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDir>
#include <QPixmap>
#include <QStandardPaths>
#include <memory>

#include "diff/runs/buckets.hpp"
#include "gui/run_views.hpp"
#include "tests/support/bucket_runs.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::gui {
namespace {

using gparity::testing::bucket_registration_order;
using gparity::testing::kBucketExecution;
using gparity::testing::kBucketRegistration;
using gparity::testing::TempDir;
using gparity::testing::write_bucket_run;

using gparity::testing::app;
using gparity::testing::screenshot;

int row_of(const BucketModel& m, const std::string& fqn) {
  for (int r = 0; r < m.rowCount(); ++r)
    if (m.data(m.index(r, BucketModel::Parameter), Qt::DisplayRole).toString().toStdString() == fqn) return r;
  return -1;
}

class BucketViewTest : public ::testing::Test {
 protected:
  void SetUp() override { app(); }
  TempDir dir_;
};

TEST_F(BucketViewTest, ListsOffsetsInBothPlansAndFlagsTheMovedMember) {
  const auto base = diff::load_bucket_plans(write_bucket_run(dir_, "reg", bucket_registration_order()));
  const auto cand = diff::load_bucket_plans(write_bucket_run(dir_, "exe", kBucketExecution));
  BucketModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_plans(&base, &cand);
  model.set_rank(1);
  ASSERT_NE(model.baseline_plan(), nullptr);
  EXPECT_EQ(model.baseline_plan()->rank, 1);
  ASSERT_EQ(model.rowCount(), static_cast<int>(kBucketRegistration.size()));
  // Every member, with its offset on each side computed here from the packing orders.
  for (std::size_t k = 0; k < kBucketExecution.size(); ++k) {
    std::int64_t base_offset = 0, cand_offset = 0;
    for (std::size_t j = 0; j < kBucketExecution[k]; ++j)
      base_offset += kBucketRegistration[j].slot_floats * 4;
    for (std::size_t j = 0; j < k; ++j)
      cand_offset += kBucketRegistration[kBucketExecution[j]].slot_floats * 4;
    const int r = row_of(model, kBucketRegistration[kBucketExecution[k]].fqn);
    ASSERT_GE(r, 0) << kBucketRegistration[kBucketExecution[k]].fqn;
    EXPECT_EQ(model.data(model.index(r, BucketModel::BaseOffset), Qt::EditRole).toLongLong(), base_offset);
    EXPECT_EQ(model.data(model.index(r, BucketModel::CandOffset), Qt::EditRole).toLongLong(), cand_offset);
  }
  const int norm = row_of(model, "layers.0.attention_norm.weight");
  EXPECT_EQ(model.data(model.index(norm, BucketModel::BaseOffset), Qt::DisplayRole).toString(),
            QStringLiteral("byte 20480"));
  EXPECT_EQ(model.data(model.index(norm, BucketModel::CandOffset), Qt::DisplayRole).toString(),
            QStringLiteral("byte 0"));
  EXPECT_TRUE(model.data(model.index(norm, BucketModel::Parameter), BucketModel::kMovedRole).toBool());
  EXPECT_FALSE(
      model.data(model.index(row_of(model, "layers.0.attention.wq.weight"), 0), BucketModel::kMovedRole)
          .toBool());
  // report_buckets explains the new order with the fewest moves: attention_norm, ffn_norm, w3.
  EXPECT_GE(model.moved_count(), 1);
  EXPECT_LT(model.moved_count(), static_cast<int>(kBucketRegistration.size()) / 2);
}

TEST_F(BucketViewTest, SamePlansFlagNothing) {
  const auto base = diff::load_bucket_plans(write_bucket_run(dir_, "a", bucket_registration_order()));
  const auto cand = diff::load_bucket_plans(write_bucket_run(dir_, "b", bucket_registration_order()));
  BucketModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_plans(&base, &cand);
  EXPECT_EQ(model.rowCount(), static_cast<int>(kBucketRegistration.size()));
  EXPECT_EQ(model.moved_count(), 0);
  model.set_plans(nullptr, nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

TEST_F(BucketViewTest, RunViewsGetABucketsTabThatPaints) {
  RunPair runs;
  runs.baseline_path = write_bucket_run(dir_, "reg", bucket_registration_order());
  runs.candidate_path = write_bucket_run(dir_, "exe", kBucketExecution);
  RunViewsWidget w(std::move(runs));
  ASSERT_NE(w.bucket_model(), nullptr);
  EXPECT_GE(w.bucket_model()->moved_count(), 1);
  w.resize(900, 420);
  w.show();
  ASSERT_TRUE(w.show_buckets());
  QApplication::processEvents();
  const QPixmap shot = w.grab();
  EXPECT_FALSE(shot.isNull());
  const QByteArray out = qgetenv("GPARITY_GUI_SCREENSHOTS");
  if (!out.isEmpty()) {
    QDir().mkpath(QString::fromLocal8Bit(out));
    shot.save(QString::fromLocal8Bit(out) + QStringLiteral("/run_buckets.png"));
  }
}

TEST_F(BucketViewTest, RunsWithoutBucketPlansHaveNoBucketsTab) {
  RunPair runs;
  runs.baseline_path = GPARITY_SOURCE_DIR "/samples/runs/compile";
  runs.candidate_path = GPARITY_SOURCE_DIR "/samples/runs/compile";
  RunViewsWidget w(std::move(runs));
  EXPECT_EQ(w.bucket_model(), nullptr);
  EXPECT_FALSE(w.show_buckets());
}

}  // namespace
}  // namespace gparity::gui
