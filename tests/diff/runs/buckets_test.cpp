// Bucket plans: eager FSDP2's plan from the samples' meta files (ranks agree; the per-rank
// payload sizes equal the Flight Recorder's reduce-scatter outputs), derivation from
// registration order with dim-0 padding, and planted moved members (registration vs execution
// order) with their byte offsets in both plans.

#include "diff/runs/buckets.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/model/base/input_error.hpp"
#include "core/model/run/trace_writer.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::diff;
using gparity::model::DType;
using gparity::testing::TempDir;

const std::string kEager = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph/eager/";

const PlanMember* member(const BucketPlan& p, const std::string& bucket, const std::string& fqn) {
  for (const auto& b : p.buckets)
    if (b.name == bucket)
      for (const auto& m : b.members)
        if (m.fqn == fqn) return &m;
  return nullptr;
}

std::vector<const Finding*> of_kind(const CollectingConsumer& c, std::string_view kind) {
  std::vector<const Finding*> v;
  for (const auto& f : c.findings)
    if (f.kind == kind) v.push_back(&f);
  return v;
}

TEST(BucketsSample, EagerFsdp2PlansOfBothRanksAgree) {
  const auto a = load_bucket_plans(kEager + "rank0_meta.json");
  const auto b = load_bucket_plans(kEager + "rank1_meta.json");
  ASSERT_EQ(a.plans.size(), 1u);
  CollectingConsumer c;
  EXPECT_EQ(report_buckets(a, b, c), 0);
  for (const auto& f : c.findings) EXPECT_NE(f.severity, Severity::Divergence) << f.message;
}

TEST(BucketsSample, PerRankPayloadsMatchTheFlightRecorderReduceScatterSizes) {
  const auto plans = load_bucket_plans(kEager);  // both ranks of the folder
  ASSERT_EQ(plans.plans.size(), 2u);
  const auto& p = plans.plans[0];
  ASSERT_EQ(p.buckets.size(), 4u);
  EXPECT_EQ(p.buckets[0].name, "root");
  const auto payload = [](const PlanBucket& b) {
    return b.members.back().offset_bytes + b.members.back().size_bytes;
  };
  // _reduce_scatter_base outputs in the Flight Recorder: 49,200 floats (root), 55,392 (blocks).
  EXPECT_EQ(payload(p.buckets[0]), 49200 * 4);
  for (std::size_t b = 1; b < 4; ++b) EXPECT_EQ(payload(p.buckets[b]), 55392 * 4);
  // layers.0 packs norm1 [96] (48 floats a rank), wqkv [288, 96] (144 x 96), then wo.
  const auto* wo = member(p, "layers.0", "layers.0.wo.weight");
  ASSERT_NE(wo, nullptr);
  EXPECT_EQ(wo->offset_bytes, (48 + 144 * 96) * 4);
  EXPECT_EQ(wo->size_bytes, 48 * 96 * 4);
  CollectingConsumer c;
  EXPECT_EQ(report_buckets(plans, plans, c), 0);
}

TEST(BucketsSample, DerivedFromRegistrationOrderEqualsTheLoggedPackingOrder) {
  BucketLoadOptions derive;
  derive.derive = true;
  const auto logged = load_bucket_plans(kEager + "rank0_meta.json");
  const auto derived = load_bucket_plans(kEager + "rank0_meta.json", derive);
  EXPECT_NE(derived.plans[0].origin.find("derived"), std::string::npos);
  CollectingConsumer c;
  EXPECT_EQ(report_buckets(logged, derived, c), 0);
  // The root takes what no block owns, in registration order: tok, norm, out.
  const auto& root = derived.plans[0].buckets[0];
  ASSERT_EQ(root.members.size(), 3u);
  EXPECT_EQ(root.members[1].fqn, "norm.weight");
}

TEST(DeriveFsdp2Plan, DeepestModuleWinsAndShardsArePaddedToTheWorld) {
  const std::vector<FsdpParam> reg{{"emb", {5, 3}}, {"blk.a", {7}}, {"blk.sub.b", {2, 2}}, {"blk.c", {3, 4}}};
  const std::vector<FsdpGroup> groups{{"", {}}, {"blk", {}}, {"blk.sub", {}}};
  const auto p = derive_fsdp2_plan(reg, groups, DType::BF16, 2, "t");
  ASSERT_EQ(p.buckets.size(), 3u);
  ASSERT_EQ(p.buckets[1].members.size(), 2u);
  EXPECT_EQ(p.buckets[1].members[0].fqn, "blk.a");
  EXPECT_EQ(p.buckets[1].members[0].size_bytes, 4 * 2);  // ceil(7/2) rows of bf16
  EXPECT_EQ(p.buckets[1].members[1].fqn, "blk.c");
  EXPECT_EQ(p.buckets[1].members[1].offset_bytes, 8);
  EXPECT_EQ(p.buckets[1].members[1].size_bytes, 2 * 4 * 2);
  EXPECT_EQ(p.buckets[2].members.at(0).fqn, "blk.sub.b");
  EXPECT_EQ(p.buckets[0].members.at(0).size_bytes, 3 * 3 * 2);  // ceil(5/2) x 3
  EXPECT_THROW(derive_fsdp2_plan(reg, std::vector<FsdpGroup>{{"x", {"nope"}}}, DType::F32, 2, "t"),
               gparity::model::InputError);
}

// The runtime's tiny model (dim 32, hidden 64, 2 ranks), one block: registration order
// wq wk wv wo w1 w2 w3 attention_norm ffn_norm; execution order attention_norm wq wk wv wo
// ffn_norm w1 w3 w2. Per-rank slots: 16x32 for attention and w2 (16x64), 32x32 for w1 / w3.
const std::vector<FsdpParam> kTiny{{"l.wq", {32, 32}}, {"l.wk", {32, 32}},         {"l.wv", {32, 32}},
                                   {"l.wo", {32, 32}}, {"l.w1", {64, 32}},         {"l.w2", {32, 64}},
                                   {"l.w3", {64, 32}}, {"l.attention_norm", {32}}, {"l.ffn_norm", {32}}};
const std::vector<std::string> kExecution{"l.attention_norm", "l.wq", "l.wk", "l.wv", "l.wo",
                                          "l.ffn_norm",       "l.w1", "l.w3", "l.w2"};

TEST(BucketsPlanted, ExecutionOrderMovesMembersAndReportsTheirOffsetsInBoth) {
  const std::vector<FsdpGroup> reg_groups{{"l", {}}};
  const std::vector<FsdpGroup> exe_groups{{"l", kExecution}};
  BucketPlans a{"reg", {derive_fsdp2_plan(kTiny, reg_groups, DType::F32, 2, "reg")}, {}};
  BucketPlans b{"exe", {derive_fsdp2_plan(kTiny, exe_groups, DType::F32, 2, "exe")}, {}};
  CollectingConsumer c;
  EXPECT_EQ(report_buckets(a, b, c), 1);
  EXPECT_TRUE(of_kind(c, "bucket_partition").empty());
  ASSERT_EQ(of_kind(c, "bucket_member_order").size(), 1u);
  const auto moved = of_kind(c, "bucket_member_moved");
  // The longest common run is wq wk wv wo w1 + one of w2/w3: three members moved.
  ASSERT_EQ(moved.size(), 3u);
  const auto find = [&](const std::string& fqn) -> const Finding* {
    for (const auto* f : moved)
      if (f->values["member"] == fqn) return f;
    return nullptr;
  };
  const auto* norm = find("l.attention_norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->values["a_offset_bytes"], (4 * 512 + 1024 + 1024 + 1024) * 4);
  EXPECT_EQ(norm->values["b_offset_bytes"], 0);
  EXPECT_EQ(norm->values["a_position"], 8);
  EXPECT_EQ(norm->values["b_position"], 1);
  const auto* ffn = find("l.ffn_norm");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(ffn->values["b_offset_bytes"], (16 + 4 * 512) * 4);
  EXPECT_TRUE(find("l.w2") != nullptr || find("l.w3") != nullptr);
  // Members that kept their order still shifted by the 16 floats of attention_norm.
  const auto& shifted = of_kind(c, "bucket_member_order")[0]->values["shifted"];
  ASSERT_FALSE(shifted.empty());
  EXPECT_EQ(shifted[0]["member"], "l.wq");
  EXPECT_EQ(shifted[0]["a_offset_bytes"], 0);
  EXPECT_EQ(shifted[0]["b_offset_bytes"], 16 * 4);
}

TEST(BucketsPlanted, SplitBucketIsAPartitionDifference) {
  const std::vector<FsdpGroup> one{{"l", {}}};
  const std::vector<FsdpGroup> two{{"l", {"l.wq", "l.wk", "l.wv", "l.wo"}},
                                   {"m", {"l.w1", "l.w2", "l.w3", "l.attention_norm", "l.ffn_norm"}}};
  BucketPlans a{"one", {derive_fsdp2_plan(kTiny, one, DType::F32, 2, "one")}, {}};
  BucketPlans b{"two", {derive_fsdp2_plan(kTiny, two, DType::F32, 2, "two")}, {}};
  CollectingConsumer c;
  EXPECT_EQ(report_buckets(a, b, c), 1);
  const auto split = of_kind(c, "bucket_partition");
  ASSERT_EQ(split.size(), 1u);
  EXPECT_NE(split[0]->message.find("split over buckets l, m"), std::string::npos) << split[0]->message;
}

TEST(BucketsTrace, BucketsRecordsOfTwoRanksAreReadAndCompared) {
  TempDir dir;
  const auto plan = derive_fsdp2_plan(kTiny, std::vector<FsdpGroup>{{"l", {}}}, DType::F32, 2, "x");
  for (int rank = 0; rank < 2; ++rank) {
    gparity::model::TraceWriter w(dir.path(), rank);
    gparity::model::BucketsRecord rec;
    gparity::model::BucketGroup g{"dp", {}};
    gparity::model::Bucket bk{"reduce_scatter", DType::F32, {}};
    for (const auto& m : plan.buckets[0].members) bk.members.push_back({m.fqn, m.offset_bytes, m.size_bytes});
    if (rank == 1) std::swap(bk.members[0].fqn, bk.members[1].fqn);  // plant a rank difference
    g.buckets.push_back(bk);
    rec.groups.push_back(g);
    w.write_buckets(rec);
  }
  const auto plans = load_bucket_plans(dir.path().string());
  ASSERT_EQ(plans.plans.size(), 2u);
  EXPECT_EQ(plans.plans[1].rank, 1);
  CollectingConsumer c;
  EXPECT_EQ(report_buckets(plans, plans, c), 1);
  const auto order = of_kind(c, "bucket_member_order");
  ASSERT_FALSE(order.empty());
  EXPECT_EQ(order[0]->where.rank, 1);
}

TEST(BucketsInput, MetaWithoutGroupsIsAnInputError) {
  TempDir dir;
  const auto p = dir.write("rank0_meta.json", R"({"registration_order": ["a"], "world": 2})");
  EXPECT_THROW(load_bucket_plans(p), gparity::model::InputError);
  const auto q =
      dir.write("rank1_meta.json", R"({"registration_order": ["a"], "world": 2, "fsdp_buckets": [)");
  EXPECT_THROW(load_bucket_plans(q), gparity::model::InputError);
}

}  // namespace

namespace {

std::string load_error(const std::string& path) {
  try {
    load_bucket_plans(path);
  } catch (const gparity::model::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(BucketsInput, TwoMetaFilesOfOneRankAreRefusedNamingBoth) {
  TempDir dir;
  std::filesystem::copy_file(kEager + "rank0_meta.json", dir.path() / "rank0_meta.json");
  std::filesystem::copy_file(kEager + "rank0_meta.json", dir.path() / "rank00_meta.json");
  const auto what = load_error(dir.path().string());
  EXPECT_NE(what.find("rank 0 is in two places"), std::string::npos) << what;
  EXPECT_NE(what.find("rank00_meta.json"), std::string::npos) << what;
}

TEST(BucketsInput, SymbolicLinkLoopInTheFolderIsNamed) {
  TempDir dir;
  std::filesystem::copy_file(kEager + "rank0_meta.json", dir.path() / "rank0_meta.json");
  std::filesystem::create_symlink(dir.path() / "rank1_meta.json", dir.path() / "rank1_meta.json");
  const auto what = load_error(dir.path().string());
  EXPECT_NE(what.find("rank1_meta.json: symbolic link loop"), std::string::npos) << what;
}

}  // namespace
