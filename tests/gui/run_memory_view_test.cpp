// gparity-view's run views show each run's peak device memory (the "device_memory" events of
// docs/cuda-graphs.md) for the selected rank, and nothing when a run lacks them.
#include <gtest/gtest.h>

#include "core/model/run/trace_writer.hpp"
#include "gui/run_models.hpp"
#include "gui/run_views.hpp"
#include "tests/support/qt_test_app.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::gui {
namespace {

void write_run(const std::filesystem::path& dir, const std::string& mode, std::int64_t reserved) {
  model::RunManifest m;
  m.world_size = 1;
  model::write_manifest(dir, m);
  model::TraceWriter w(dir, 0);
  model::StepRecord rec;
  rec.step = 1;
  rec.loss = model::TraceScalar::from_f32(0.5F);
  w.write_step(rec);
  if (reserved > 0)
    w.write_event({"device_memory",
                   1,
                   "",
                   {{"mode", mode}, {"peak_allocated", reserved}, {"peak_reserved", reserved}}});
}

TEST(RunMemoryView, SummaryShowsBothPeaksAndTheirRatio) {
  gparity::testing::app();
  gparity::testing::TempDir tmp;
  write_run(tmp.path() / "eager", "eager", 100 << 20);
  write_run(tmp.path() / "graph", "cuda_graph", 105 << 20);
  RunViewsWidget w(load_run_pair((tmp.path() / "eager").string(), (tmp.path() / "graph").string()));
  ASSERT_TRUE(w.runs().ranks.at(0).cand_memory.has_value());
  EXPECT_EQ(w.runs().ranks.at(0).cand_memory->mode, "cuda_graph");
  EXPECT_TRUE(w.summary().contains(
      QStringLiteral("rank 0 peak reserved memory: 100.0 MiB (eager) vs 105.0 MiB (cuda_graph), 1.050x")))
      << w.summary().toStdString();

  write_run(tmp.path() / "bare", "eager", 0);
  RunViewsWidget bare(load_run_pair((tmp.path() / "bare").string(), (tmp.path() / "graph").string()));
  EXPECT_FALSE(bare.summary().contains(QStringLiteral("memory"))) << bare.summary().toStdString();
}

}  // namespace
}  // namespace gparity::gui
