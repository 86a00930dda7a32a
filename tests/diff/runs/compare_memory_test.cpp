// `gparity compare`'s device-memory figures: the peak reserved memory ratio of a CUDA-graph run
// against an eager one, from the ranks' "device_memory" events (docs/cuda-graphs.md). Parity
// verdicts do not depend on it.

#include <gtest/gtest.h>

#include <string>

#include "core/model/run/run_source.hpp"
#include "core/model/run/trace_writer.hpp"
#include "diff/runs/run_compare.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity {
namespace {

/// Two ranks, two steps with the same losses; rank r's device_memory event says `reserved[r]`.
void write_memory_run(const std::filesystem::path& dir, const std::string& mode,
                      std::vector<std::int64_t> reserved) {
  model::RunManifest m;
  m.world_size = 2;
  model::write_manifest(dir, m);
  for (int r = 0; r < 2; ++r) {
    model::TraceWriter w(dir, r);
    for (int s = 1; s <= 2; ++s) {
      model::StepRecord rec;
      rec.step = s;
      rec.loss = model::TraceScalar::from_f32(1.0F / static_cast<float>(s + r));
      w.write_step(rec);
    }
    const auto res = reserved[static_cast<std::size_t>(r)];
    if (res >= 0)
      w.write_event({"device_memory",
                     2,
                     "peak",
                     {{"mode", mode}, {"peak_allocated", res / 2}, {"peak_reserved", res}}});
  }
}

int compare_memory_runs(const std::filesystem::path& a, const std::filesystem::path& b,
                        diff::CollectingConsumer& out) {
  return diff::compare_runs(model::open_run(a.string()), model::open_run(b.string()), {}, out);
}

TEST(CompareMemory, RatioOfPeakReservedPerRankAndItsMaximum) {
  gparity::testing::TempDir tmp;
  write_memory_run(tmp.path() / "eager", "eager", {1000, 2000});
  write_memory_run(tmp.path() / "graph", "cuda_graph", {1050, 2400});
  diff::CollectingConsumer out;
  EXPECT_EQ(compare_memory_runs(tmp.path() / "eager", tmp.path() / "graph", out),
            0);  // memory never decides parity
  const auto& mem = out.verdict.data.at("device_memory");
  ASSERT_EQ(mem.at("ranks").size(), 2u);
  EXPECT_DOUBLE_EQ(mem.at("ranks")[0].at("reserved_ratio").get<double>(), 1.05);
  EXPECT_DOUBLE_EQ(mem.at("ranks")[1].at("reserved_ratio").get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(mem.at("max_reserved_ratio").get<double>(), 1.2);
  EXPECT_EQ(mem.at("ranks")[1].at("candidate_peak_allocated"), 1200);
  bool line = false;
  for (const auto& s : out.verdict.summary)
    line |= s.find("candidate (cuda_graph) / baseline (eager): 1.200x at most over 2 rank(s)") !=
            std::string::npos;
  EXPECT_TRUE(line);
}

TEST(CompareMemory, AbsentOrMalformedOnOneSideGivesNoRatio) {
  gparity::testing::TempDir tmp;
  write_memory_run(tmp.path() / "eager", "eager", {-1, -1});
  write_memory_run(tmp.path() / "graph", "cuda_graph", {1050, 2400});
  diff::CollectingConsumer out;
  EXPECT_EQ(compare_memory_runs(tmp.path() / "eager", tmp.path() / "graph", out), 0);
  EXPECT_TRUE(out.verdict.data.at("device_memory").is_null());
  for (const auto& s : out.verdict.summary) EXPECT_EQ(s.find("device memory"), std::string::npos) << s;

  // A newer writer's shape (peaks as strings) is skipped, not trusted.
  model::EventRecord odd{"device_memory", 2, "", {{"peak_allocated", "1"}, {"peak_reserved", "2"}}};
  EXPECT_FALSE(model::device_memory_peaks(std::span(&odd, 1)).has_value());
  model::EventRecord good{"device_memory", 2, "", {{"peak_allocated", 1}, {"peak_reserved", 2}, {"mode", 3}}};
  const auto p = model::device_memory_peaks(std::span(&good, 1));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->mode, "eager");  // a mode that is not a string reads as the default
  EXPECT_EQ(p->peak_reserved, 2);
}

}  // namespace
}  // namespace gparity
