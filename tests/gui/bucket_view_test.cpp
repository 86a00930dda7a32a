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
#include <nlohmann/json.hpp>

#include "core/model/run/trace_writer.hpp"
#include "diff/runs/buckets.hpp"
#include "gui/run_views.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::gui {
namespace {

using gparity::testing::TempDir;

using gparity::testing::app;
using gparity::testing::screenshot;

struct Param {
  std::string fqn;
  std::int64_t slot_floats;  // the padded per-rank dim-0 shard
};

// The runtime's tiny model (dim 32, hidden 64) on 2 ranks, one block, in registration order.
const std::vector<Param> kRegistration{
    {"layers.0.attention.wq.weight", 512},     {"layers.0.attention.wk.weight", 512},
    {"layers.0.attention.wv.weight", 512},     {"layers.0.attention.wo.weight", 512},
    {"layers.0.feed_forward.w1.weight", 1024}, {"layers.0.feed_forward.w2.weight", 1024},
    {"layers.0.feed_forward.w3.weight", 1024}, {"layers.0.attention_norm.weight", 16},
    {"layers.0.ffn_norm.weight", 16}};
const std::vector<std::size_t> kExecution{7, 0, 1, 2, 3, 8, 4, 6, 5};

std::string write_run(const TempDir& dir, const std::string& name, const std::vector<std::size_t>& order) {
  const auto run = dir.path() / name;
  for (int rank = 0; rank < 2; ++rank) {
    model::TraceWriter w(run, rank);
    model::Bucket b{"reduce_scatter", model::DType::F32, {}};
    std::int64_t offset = 0;
    for (auto i : order) {
      b.members.push_back({kRegistration[i].fqn, offset, kRegistration[i].slot_floats * 4});
      offset += kRegistration[i].slot_floats * 4;
    }
    model::BucketsRecord rec;
    rec.groups.push_back({"dp", {b}});
    rec.extra["bucket_names"] = nlohmann::json::array({"layers.0"});
    w.write_buckets(rec);
  }
  return run.string();
}

std::vector<std::size_t> registration_order() {
  std::vector<std::size_t> reg(kRegistration.size());
  for (std::size_t i = 0; i < reg.size(); ++i) reg[i] = i;
  return reg;
}

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
  const auto base = diff::load_bucket_plans(write_run(dir_, "reg", registration_order()));
  const auto cand = diff::load_bucket_plans(write_run(dir_, "exe", kExecution));
  BucketModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_plans(&base, &cand);
  model.set_rank(1);
  ASSERT_NE(model.baseline_plan(), nullptr);
  EXPECT_EQ(model.baseline_plan()->rank, 1);
  ASSERT_EQ(model.rowCount(), static_cast<int>(kRegistration.size()));
  // Every member, with its offset on each side computed here from the packing orders.
  for (std::size_t k = 0; k < kExecution.size(); ++k) {
    std::int64_t base_offset = 0, cand_offset = 0;
    for (std::size_t j = 0; j < kExecution[k]; ++j) base_offset += kRegistration[j].slot_floats * 4;
    for (std::size_t j = 0; j < k; ++j) cand_offset += kRegistration[kExecution[j]].slot_floats * 4;
    const int r = row_of(model, kRegistration[kExecution[k]].fqn);
    ASSERT_GE(r, 0) << kRegistration[kExecution[k]].fqn;
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
  EXPECT_LT(model.moved_count(), static_cast<int>(kRegistration.size()) / 2);
}

TEST_F(BucketViewTest, SamePlansFlagNothing) {
  const auto base = diff::load_bucket_plans(write_run(dir_, "a", registration_order()));
  const auto cand = diff::load_bucket_plans(write_run(dir_, "b", registration_order()));
  BucketModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_plans(&base, &cand);
  EXPECT_EQ(model.rowCount(), static_cast<int>(kRegistration.size()));
  EXPECT_EQ(model.moved_count(), 0);
  model.set_plans(nullptr, nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

TEST_F(BucketViewTest, RunViewsGetABucketsTabThatPaints) {
  RunPair runs;
  runs.baseline_path = write_run(dir_, "reg", registration_order());
  runs.candidate_path = write_run(dir_, "exe", kExecution);
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
