#include "core/model/run/run_source.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/import_samples.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::model {
namespace {

namespace fs = std::filesystem;
using gparity::testing::TempDir;

// One reference-format line (the samples' rank<r>.jsonl) for rank `rank` at step `step`.
std::string sample_line(int rank, int step, const std::string& loss = "1.5") {
  return R"({"step": )" + std::to_string(step) + R"(, "rank": )" + std::to_string(rank) + R"(, "loss": )" +
         loss +
         R"(, "loss_bits": "3fc00000", "params": {"w": {"shard_xxh3": "0123456789abcdef", )"
         R"("dtype": "torch.float32", "shape": [4]}}})" +
         "\n";
}

std::string source_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(RunSource, TwoFilesOfOneRankAreRefusedNamingBoth) {
  TempDir dir;
  dir.write("rank0.jsonl", sample_line(0, 1));
  dir.write("rank00.jsonl", sample_line(0, 1));
  const auto what = source_error_of([&] { open_run(dir.path().string()); });
  EXPECT_NE(what.find("rank 0 is in two places"), std::string::npos) << what;
  EXPECT_NE(what.find("rank0.jsonl"), std::string::npos) << what;
  EXPECT_NE(what.find("rank00.jsonl"), std::string::npos) << what;
}

TEST(RunSource, TraceRankFilesAreNotReferenceRankZero) {
  TempDir dir;
  dir.write("rank-0.jsonl", "{}\n");
  // "rank-0.jsonl" once read as the reference file of rank 0 ("-0" parses as 0).
  const auto what = source_error_of([&] { open_run(dir.path().string()); });
  EXPECT_NE(what.find("no manifest.json"), std::string::npos) << what;
}

TEST(RunSource, DuplicateTensorBoardRankFoldersAreRefused) {
  TempDir dir;
  dir.write("rank_0/events.out.tfevents.1.host", "");
  dir.write("rank-0/events.out.tfevents.2.host", "");
  const auto what = source_error_of([&] { open_run(dir.path().string()); });
  EXPECT_NE(what.find("rank 0 is in two places"), std::string::npos) << what;
}

TEST(RunSource, SymbolicLinkLoopsAreNamedNotMissing) {
  TempDir dir;
  fs::create_symlink(dir.path() / "b", dir.path() / "a");
  fs::create_symlink(dir.path() / "a", dir.path() / "b");
  const auto top = source_error_of([&] { open_run((dir.path() / "a").string()); });
  EXPECT_NE(top.find("symbolic link loop"), std::string::npos) << top;

  // A rank file that loops: listed by its name, and reading it names it (not a silently missing rank).
  fs::create_directories(dir.path() / "run");
  dir.write("run/rank0.jsonl", sample_line(0, 1));
  fs::create_symlink(dir.path() / "run" / "rank1.jsonl", dir.path() / "run" / "rank1.jsonl");
  const auto run = open_run((dir.path() / "run").string());
  ASSERT_EQ(run.ranks.size(), 2U);
  const auto what = source_error_of([&] { run.load(run.ranks[1]); });
  EXPECT_NE(what.find("rank1.jsonl"), std::string::npos) << what;
  EXPECT_NE(what.find("symbolic links"), std::string::npos) << what;
}

TEST(ImportSamples, LineOfAnotherRankIsACorruptLine) {
  TempDir dir;
  const auto path = dir.write("rank1.jsonl", sample_line(1, 1) + sample_line(0, 2) + sample_line(1, 3));
  const auto t = import_sample_rank(path, 1);
  ASSERT_EQ(t.steps.size(), 2U);
  EXPECT_EQ(t.steps[1].step, 3);
  ASSERT_EQ(t.issues.size(), 1U);
  EXPECT_EQ(t.issues[0].line, 2);
  EXPECT_NE(t.issues[0].problem.find("the line is rank 0's, in the file of rank 1"), std::string::npos)
      << t.issues[0].text();
}

TEST(ImportSamples, PythonNanLossIsReadFromItsBits) {
  TempDir dir;
  const auto path = dir.write("rank0.jsonl", sample_line(0, 1, "NaN") + sample_line(0, 2, "-Infinity"));
  const auto t = import_sample_rank(path, 0);
  EXPECT_TRUE(t.issues.empty()) << t.issues.front().text();
  ASSERT_EQ(t.steps.size(), 2U);
  EXPECT_EQ(t.steps[0].loss->bits, 0x3fc00000U);
}

}  // namespace
}  // namespace gparity::model
