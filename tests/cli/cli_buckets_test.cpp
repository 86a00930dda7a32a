// `gparity buckets` through the real binary: the two ranks of eager FSDP2 agree (exit 0); two tiny
// traces written by the trace writer, one in registration and one in execution order (what
// `gparity run --bucket-order execution` records), differ with moved members and their byte
// offsets in both; reporters and exit codes.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/bucket_runs.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::bucket_registration_order;
using gparity::testing::kBucketExecution;
using gparity::testing::run_command;
using gparity::testing::TempDir;
using gparity::testing::write_bucket_run;

const std::string kEager = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/eager/";

TEST(CliBuckets, EagerRanksAgree) {
  const auto r =
      run_command(GPARITY_EXE, {"buckets", kEager + "rank0_meta.json", kEager + "rank1_meta.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("bucket plans agree"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FSDP2 packing order (world 2, float32 assumed)"), std::string::npos) << r.out;
}

TEST(CliBuckets, ExecutionOrderTraceAgainstRegistrationOrderTrace) {
  TempDir dir;
  const auto a = write_bucket_run(dir, "reg", bucket_registration_order(), "registration");
  const auto b = write_bucket_run(dir, "exe", kBucketExecution, "execution");
  const auto junit = (dir.path() / "b.xml").string();
  const auto r = run_command(GPARITY_EXE, {"buckets", "--json", a, b, "--junit", junit});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> moved;
  int moved_findings = 0;
  for (const auto& f : j["findings"]) {
    EXPECT_NE(f["kind"], "bucket_partition");
    if (f["kind"] != "bucket_member_moved") continue;
    ++moved_findings;
    moved[f["values"]["member"]] = f["values"];
  }
  EXPECT_EQ(moved_findings, 2 * 3);  // on each rank: both norms and one of w2 / w3
  EXPECT_EQ(moved.size(), 3u);
  const auto& norm = moved.at("layers.0.attention_norm.weight");
  EXPECT_EQ(norm["a_offset_bytes"], (4 * 512 + 3 * 1024) * 4);
  EXPECT_EQ(norm["b_offset_bytes"], 0);
  const auto& ffn = moved.at("layers.0.ffn_norm.weight");
  EXPECT_EQ(ffn["a_offset_bytes"], (4 * 512 + 3 * 1024 + 16) * 4);
  EXPECT_EQ(ffn["b_offset_bytes"], (16 + 4 * 512) * 4);
  std::ifstream x(junit);
  std::stringstream s;
  s << x.rdbuf();
  EXPECT_NE(s.str().find("<failure"), std::string::npos);
  // The text form names the offsets too.
  const auto t = run_command(GPARITY_EXE, {"buckets", a, b});
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_NE(t.out.find("layers.0.attention_norm.weight moved in bucket layers.0: member 8 at byte 20480"),
            std::string::npos)
      << t.out;
}

TEST(CliBuckets, SameTraceTwiceAgrees) {
  TempDir dir;
  const auto b = write_bucket_run(dir, "exe", kBucketExecution, "execution");
  EXPECT_EQ(run_command(GPARITY_EXE, {"buckets", b, b}).exit_code, 0);
}

TEST(CliBuckets, BadInputExitsTwo) {
  TempDir dir;
  const auto bad = dir.write("rank0_meta.json", "{\"registration_order\": 3}");
  EXPECT_EQ(run_command(GPARITY_EXE, {"buckets", bad, bad}).exit_code, 2);
  TempDir empty;
  EXPECT_EQ(run_command(GPARITY_EXE, {"buckets", empty.path().string(), kEager}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"buckets", kEager}).exit_code, 2);
}

}  // namespace
