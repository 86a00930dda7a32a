// `gparity buckets` through the real binary: the two ranks of eager FSDP2 agree (exit 0); two tiny
// traces written by the trace writer, one in registration and one in execution order (what
// `gparity run --bucket-order execution` records), differ with moved members and their byte
// offsets in both; reporters and exit codes.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/model/run/trace_writer.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;
namespace model = gparity::model;

const std::string kEager = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/eager/";

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

/// A trace directory whose ranks record the block's bucket packed in `order`.
std::string write_run(const TempDir& dir, const std::string& name, const std::vector<std::size_t>& order,
                      const std::string& order_name) {
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
    rec.extra["order"] = order_name;
    rec.extra["bucket_names"] = nlohmann::json::array({"layers.0"});
    w.write_buckets(rec);
  }
  return run.string();
}

TEST(CliBuckets, EagerRanksAgree) {
  const auto r =
      run_command(GPARITY_EXE, {"buckets", kEager + "rank0_meta.json", kEager + "rank1_meta.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("bucket plans agree"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FSDP2 packing order (world 2, float32 assumed)"), std::string::npos) << r.out;
}

TEST(CliBuckets, ExecutionOrderTraceAgainstRegistrationOrderTrace) {
  TempDir dir;
  std::vector<std::size_t> reg(kRegistration.size());
  for (std::size_t i = 0; i < reg.size(); ++i) reg[i] = i;
  const auto a = write_run(dir, "reg", reg, "registration");
  const auto b = write_run(dir, "exe", kExecution, "execution");
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
  const auto b = write_run(dir, "exe", kExecution, "execution");
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
