// diff/checkpoint_compare through a CollectingConsumer: the grid-sharded DCP checkpoint against
// the safetensors of the same full tensors, a planted change, a missing parameter, run folders.

#include "diff/checkpoints/checkpoint_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/model/base/input_error.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gparity::diff;

const std::string kDcpData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/dcp";

std::size_t count(const CollectingConsumer& c, const std::string& kind) {
  return static_cast<std::size_t>(
      std::count_if(c.findings.begin(), c.findings.end(), [&](const Finding& f) { return f.kind == kind; }));
}

TEST(CheckpointCompare, GridCheckpointEqualsItsSafetensors) {
  CollectingConsumer c;
  EXPECT_EQ(compare_checkpoints(kDcpData + "/grid", kDcpData + "/grid.safetensors", {}, c), 0);
  EXPECT_EQ(count(c, "checkpoint_param_equal"), 4U);
  EXPECT_EQ(count(c, "checkpoint_param_mismatch"), 0U);
  ASSERT_EQ(c.checks.size(), 1U);
  EXPECT_EQ(c.checks[0].outcome, Check::Outcome::Pass);
  EXPECT_EQ(c.verdict.exit_code, 0);
  // Registration order of the DCP side, whichever side it is on.
  EXPECT_EQ(c.findings[0].where.parameter, "grid.weight");
  EXPECT_NE(c.findings[0].message.find("4 chunks of mixed sizes vs whole"), std::string::npos)
      << c.findings[0].message;
}

TEST(CheckpointCompare, PlantedChangeAndMissingTensorDiverge) {
  gparity::testing::TempDir tmp;
  // The safetensors file with one element of "vec" (last tensor, int64 0..6) changed, and a
  // copy with its last tensor renamed: a mismatch, then a missing parameter on each side.
  std::ifstream in(kDcpData + "/grid.safetensors", std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto changed = bytes;
  changed[changed.size() - 8] ^= 1;  // vec[6]: 6 -> 7
  const auto a = tmp.write("changed.safetensors", changed);
  CollectingConsumer c;
  EXPECT_EQ(compare_checkpoints(kDcpData + "/grid", a, {}, c), 1);
  ASSERT_EQ(count(c, "checkpoint_param_mismatch"), 1U);
  EXPECT_NE(c.verdict.headline.find("1 of 4 parameters differ; first: vec"), std::string::npos)
      << c.verdict.headline;
  auto renamed = bytes;
  renamed.replace(renamed.find("\"vec\""), 5, "\"vex\"");
  const auto b = tmp.write("renamed.safetensors", renamed);
  CollectingConsumer d;
  EXPECT_EQ(compare_checkpoints(kDcpData + "/grid", b, {}, d), 1);
  EXPECT_EQ(count(d, "checkpoint_param_missing"), 2U);
}

TEST(CheckpointCompare, RunFoldersByStepAndMismatchedSides) {
  gparity::testing::TempDir tmp;
  fs::create_directories(tmp.path() / "a");
  fs::create_directories(tmp.path() / "b");
  fs::copy(kDcpData + "/grid", tmp.path() / "a" / "step-2", fs::copy_options::recursive);
  fs::copy_file(kDcpData + "/grid.safetensors", tmp.path() / "b" / "step-2.safetensors");
  fs::copy_file(kDcpData + "/grid.safetensors", tmp.path() / "b" / "step-5.safetensors");
  EXPECT_TRUE(is_checkpoint_path((tmp.path() / "a").string()));
  CollectingConsumer c;
  EXPECT_EQ(compare_checkpoints((tmp.path() / "a").string(), (tmp.path() / "b").string(), {}, c), 0);
  EXPECT_EQ(count(c, "checkpoint_step_missing"), 1U);  // step 5 only in the candidate
  const auto missing = [](const CollectingConsumer& out) {
    for (const auto& f : out.findings)
      if (f.kind == "checkpoint_step_missing") return f.message;
    return std::string();
  };
  EXPECT_EQ(missing(c), "step 5 has a checkpoint only in the candidate");
  CollectingConsumer swapped;
  EXPECT_EQ(compare_checkpoints((tmp.path() / "b").string(), (tmp.path() / "a").string(), {}, swapped), 0);
  EXPECT_EQ(missing(swapped), "step 5 has a checkpoint only in the baseline");
  ASSERT_EQ(c.checks.size(), 1U);
  EXPECT_EQ(c.checks[0].name, "weights (checkpoint, step 2)");
  CollectingConsumer d;
  EXPECT_THROW(compare_checkpoints((tmp.path() / "a").string(), kDcpData + "/grid", {}, d),
               gparity::model::InputError);
  EXPECT_FALSE(is_checkpoint_path(tmp.path().string()));
}

}  // namespace
