#include "diff/run_compare.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "core/model/run/run_source.hpp"
#include "core/model/run/trace_writer.hpp"
#include "hash/shard_hash.hpp"
#include "hash/xxh3.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity;
using model::DType;

// A 2-parameter model: w [8, 6] f32 sharded on dim 0 and b [6] f32 replicated.
struct Tensors {
  std::vector<float> w = std::vector<float>(48);
  std::vector<float> b = std::vector<float>(6);
};

Tensors tensors_at(int step) {
  Tensors t;
  for (std::size_t i = 0; i < t.w.size(); ++i)
    t.w[i] = 0.25F * static_cast<float>(i) + static_cast<float>(step);
  for (std::size_t i = 0; i < t.b.size(); ++i) t.b[i] = -1.5F * static_cast<float>(i + step);
  return t;
}

std::uint64_t partial(const float* data, std::vector<std::int64_t> local, std::vector<std::int64_t> offsets,
                      std::vector<std::int64_t> global) {
  const hash::BlockView block{reinterpret_cast<const std::byte*>(data), 4, local, {}};
  return hash::shard_hash(block, {offsets, global});
}

/// Writes a run of `world` ranks, w split evenly on dim 0, b replicated (rank 0 counts it).
void write_run(const std::filesystem::path& dir, int world, int steps,
               std::optional<std::pair<int, int>> poke = {}) {
  model::RunManifest m;
  m.world_size = world;
  model::write_manifest(dir, m);
  const std::int64_t rows = 8 / world;
  for (int r = 0; r < world; ++r) {
    model::TraceWriter w(dir, r);
    model::ParamsRecord p;
    p.params.push_back(
        {"w", DType::F32, {8, 6}, {rows * r, 0}, {rows, 6}, {{model::Placement::Kind::Shard, 0}}, true});
    p.params.push_back({"b", DType::F32, {6}, {0}, {6}, {{model::Placement::Kind::Replicate, -1}}, r == 0});
    w.write_params(p);
    for (int s = 1; s <= steps; ++s) {
      auto t = tensors_at(s);
      if (poke && poke->first == s) t.w[static_cast<std::size_t>(poke->second)] += 1.0F;
      const float* wl = t.w.data() + rows * 6 * r;
      model::StepRecord rec;
      rec.step = s;
      rec.loss = model::TraceScalar::from_f32(1.0F / static_cast<float>(s));
      rec.hashes.push_back(
          {"param.shard",
           {partial(wl, {rows, 6}, {rows * r, 0}, {8, 6}), partial(t.b.data(), {6}, {0}, {6})}});
      rec.hashes.push_back({"param.xxh3",
                            {hash::xxh3_64(std::span(reinterpret_cast<const std::byte*>(wl),
                                                     static_cast<std::size_t>(rows * 24))),
                             hash::xxh3_64(std::as_bytes(std::span(t.b)))}});
      w.write_step(rec);
    }
  }
}

int compare(const std::filesystem::path& a, const std::filesystem::path& b, diff::CollectingConsumer& out,
            diff::CompareOptions o = {}) {
  return diff::compare_runs(model::open_run(a.string()), model::open_run(b.string()), o, out);
}

TEST(RunCompare, OneRankAndFourRankRunsOfTheSameTensorsAreEqualOnFullTensors) {
  gparity::testing::TempDir tmp;
  write_run(tmp.path() / "one", 1, 3);
  write_run(tmp.path() / "four", 4, 3);
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "one", tmp.path() / "four", out), 0);
  ASSERT_FALSE(out.verdict.data["full_tensors"].is_null());
  EXPECT_EQ(out.verdict.data["full_tensors"]["compared"], 3);
  bool full_check = false;
  for (const auto& c : out.checks) {
    if (c.name == "weights (full tensors)") {
      full_check = true;
      EXPECT_EQ(c.outcome, diff::Check::Outcome::Pass) << c.message;
    }
  }
  EXPECT_TRUE(full_check);
}

TEST(RunCompare, ChangingOneElementOnOneShardIsFoundOnTheFullTensor) {
  gparity::testing::TempDir tmp;
  write_run(tmp.path() / "one", 1, 3);
  write_run(tmp.path() / "four", 4, 3, std::pair{2, 37});  // step 2, an element of rank 3's block
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "one", tmp.path() / "four", out), 1);
  EXPECT_EQ(out.verdict.data["full_tensors"]["first_divergent_step"], 2);
  bool found = false;
  for (const auto& f : out.findings) {
    if (f.kind == "full_tensor_mismatch") {
      found = true;
      EXPECT_EQ(f.where.step, 2);
      EXPECT_EQ(f.where.parameter, "w");
      EXPECT_EQ(f.values["params"].size(), 1U);
    }
  }
  EXPECT_TRUE(found);
}

TEST(RunCompare, SameLayoutComparesPerRankAndGroupsRanks) {
  gparity::testing::TempDir tmp;
  write_run(tmp.path() / "a", 4, 3);
  write_run(tmp.path() / "b", 4, 3, std::pair{3, 13});  // rows 2-3: rank 1
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "b", out), 1);
  ASSERT_FALSE(out.verdict.summary.empty());
  EXPECT_EQ(out.verdict.summary[0], "ranks 0,2-3 identical; rank 1 diverges at step 3");
}

void write_losses(const std::filesystem::path& dir, std::vector<float> losses) {
  model::RunManifest m;
  model::write_manifest(dir, m);
  model::TraceWriter w(dir, 0);
  for (std::size_t i = 0; i < losses.size(); ++i) {
    model::StepRecord s;
    s.step = static_cast<std::int64_t>(i + 1);
    s.loss = model::TraceScalar::from_f32(losses[i]);
    w.write_step(s);
  }
}

TEST(RunCompare, LossesAreComparedByBitsIncludingNanAndSignedZero) {
  gparity::testing::TempDir tmp;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float other_nan = std::bit_cast<float>(0x7fc00001U);
  write_losses(tmp.path() / "a", {nan, -0.0F, 0.0F, 1.0F});
  write_losses(tmp.path() / "same", {nan, -0.0F, 0.0F, 1.0F});
  write_losses(tmp.path() / "b", {other_nan, 0.0F, -0.0F, 1.0F});
  diff::CollectingConsumer same;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "same", same), 0) << "NaN equals NaN with the same bits";
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "b", out), 1);
  std::vector<std::int64_t> steps;
  for (const auto& f : out.findings) {
    if (f.kind == "loss_mismatch") steps.push_back(*f.where.step);
  }
  EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 3}));

  // -0.0 vs +0.0 is one ULP apart: accepted only when a tolerance says so; NaN payloads never.
  diff::CompareOptions o;
  o.tolerance.ulp = 1;
  diff::CollectingConsumer tol;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "b", tol, o), 1);
  steps.clear();
  for (const auto& f : tol.findings) {
    if (f.kind == "loss_mismatch") steps.push_back(*f.where.step);
  }
  EXPECT_EQ(steps, (std::vector<std::int64_t>{1}));
}

TEST(RunCompare, UlpDistanceAcrossZeroAndDtypes) {
  EXPECT_EQ(diff::ulp_distance(0x80000000U, 0x00000000U, DType::F32), 1U);
  EXPECT_EQ(diff::ulp_distance(0x3f800000U, 0x3f800002U, DType::F32), 2U);
  EXPECT_EQ(diff::ulp_distance(0x00000001U, 0x80000001U, DType::F32), 3U);  // -d, -0, +0, +d
  EXPECT_EQ(diff::ulp_distance(0x3f80U, 0x3f81U, DType::BF16), 1U);
  EXPECT_FALSE(diff::ulp_distance(0x7fc00000U, 0x3f800000U, DType::F32));
}

}  // namespace

namespace {

void write_scalars(const std::filesystem::path& dir, int steps, std::optional<int> grad_norm_hole,
                   bool grad_norm_at_all = true) {
  model::RunManifest m;
  model::write_manifest(dir, m);
  model::TraceWriter w(dir, 0);
  for (int i = 1; i <= steps; ++i) {
    model::StepRecord s;
    s.step = i;
    s.loss = model::TraceScalar::from_f32(1.0F / static_cast<float>(i));
    if (grad_norm_at_all && grad_norm_hole != i) s.grad_norm = model::TraceScalar::from_f32(0.5F);
    w.write_step(s);
  }
}

TEST(RunCompare, AScalarMissingAtOneStepOfARunThatRecordsItIsADivergence) {
  gparity::testing::TempDir tmp;
  write_scalars(tmp.path() / "a", 4, std::nullopt);
  write_scalars(tmp.path() / "hole", 4, 3);
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "hole", out), 1);
  const auto it = std::find_if(out.findings.begin(), out.findings.end(),
                               [](const diff::Finding& f) { return f.kind == "grad_norm_missing_at_step"; });
  ASSERT_NE(it, out.findings.end());
  EXPECT_EQ(it->where.step, 3);

  // A run that never records grad_norm is a different recorder configuration: a warning only.
  write_scalars(tmp.path() / "none", 4, std::nullopt, false);
  diff::CollectingConsumer none;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "none", none), 0);
  EXPECT_TRUE(std::any_of(none.findings.begin(), none.findings.end(),
                          [](const diff::Finding& f) { return f.kind == "grad_norm_missing"; }));
}

}  // namespace
