#include "diff/runs/run_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <tuple>

#include "core/model/base/input_error.hpp"
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
                      std::vector<std::int64_t> global, hash::ShardSpec spec = hash::ShardSpec::V1) {
  const hash::BlockView block{reinterpret_cast<const std::byte*>(data), 4, local, {}};
  hash::ShardHashOptions o;
  o.spec = spec;
  return hash::shard_hash(block, {offsets, global}, o);
}

/// Writes a run of `world` ranks, w split evenly on dim 0, b replicated (rank 0 counts it).
/// `with_xxh3` false: only the param.shard array.
void write_run(const std::filesystem::path& dir, int world, int steps,
               std::optional<std::pair<int, int>> poke = {}, hash::ShardSpec spec = hash::ShardSpec::V1,
               bool with_xxh3 = true) {
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
      rec.shard_spec = static_cast<std::uint8_t>(spec);
      rec.hashes.push_back(
          {"param.shard",
           {partial(wl, {rows, 6}, {rows * r, 0}, {8, 6}, spec), partial(t.b.data(), {6}, {0}, {6}, spec)}});
      if (with_xxh3) {
        rec.hashes.push_back({"param.xxh3",
                              {hash::xxh3_64(std::span(reinterpret_cast<const std::byte*>(wl),
                                                       static_cast<std::size_t>(rows * 24))),
                               hash::xxh3_64(std::as_bytes(std::span(t.b)))}});
      }
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

// Issue 24: hashes of two specs are two functions. A v1 run against a v2 run of the same tensors
// is parity (XXH3 compared, the change of spec said), a changed element is still found through
// XXH3, and two v2 runs of different layouts agree on full tensors.
bool has_kind(const diff::CollectingConsumer& out, const std::string& kind) {
  return std::any_of(out.findings.begin(), out.findings.end(), [&](const auto& f) { return f.kind == kind; });
}

TEST(RunCompare, ShardSpecV1AgainstV2IsNotADivergenceAndXxh3StillCompares) {
  gparity::testing::TempDir tmp;
  write_run(tmp.path() / "v1", 2, 3);
  write_run(tmp.path() / "v2", 2, 3, std::nullopt, hash::ShardSpec::V2);
  write_run(tmp.path() / "v2poked", 2, 3, std::pair{2, 5}, hash::ShardSpec::V2);
  diff::CollectingConsumer same;
  EXPECT_EQ(compare(tmp.path() / "v1", tmp.path() / "v2", same), 0);
  EXPECT_TRUE(has_kind(same, "shard_spec_differs"));
  EXPECT_FALSE(has_kind(same, "param_hash_mismatch"));
  EXPECT_FALSE(has_kind(same, "full_tensor_mismatch"));
  for (const auto& c : same.checks) {
    if (c.name == "weights (full tensors)") {
      EXPECT_EQ(c.outcome, diff::Check::Outcome::Skipped) << c.message;
      EXPECT_NE(c.message.find("spec v1 in baseline and v2 in candidate"), std::string::npos) << c.message;
    }
  }
  diff::CollectingConsumer poked;
  EXPECT_EQ(compare(tmp.path() / "v1", tmp.path() / "v2poked", poked), 1);
  bool by_xxh3 = false;
  for (const auto& f : poked.findings) {
    if (f.kind == "param_hash_mismatch") by_xxh3 = f.message.find("param.xxh3") != std::string::npos;
  }
  EXPECT_TRUE(by_xxh3);
}

// A hash array one side records and the other does not: a warning per rank, on the first step
// that has it, naming the side; the array is not compared and the rest is.
TEST(RunCompare, AHashArrayOnOneSideOnlyIsAWarningNamingThatSide) {
  gparity::testing::TempDir tmp;
  write_run(tmp.path() / "both", 2, 3);
  write_run(tmp.path() / "shard", 2, 3, std::nullopt, hash::ShardSpec::V1, /*with_xxh3=*/false);
  for (const bool baseline_has_it : {true, false}) {
    SCOPED_TRACE(baseline_has_it);
    diff::CollectingConsumer out;
    const auto a = baseline_has_it ? tmp.path() / "both" : tmp.path() / "shard";
    const auto b = baseline_has_it ? tmp.path() / "shard" : tmp.path() / "both";
    EXPECT_EQ(compare(a, b, out), 0);
    const std::string side = baseline_has_it ? "baseline" : "candidate";
    std::vector<int> ranks;
    for (const auto& f : out.findings) {
      if (f.kind.starts_with("hash_array_only_in_")) {
        EXPECT_EQ(f.kind, "hash_array_only_in_" + side);
        EXPECT_EQ(f.severity, diff::Severity::Warning);
        EXPECT_EQ(f.values["array"], "param.xxh3");
        EXPECT_EQ(f.message, "hash array param.xxh3 is recorded only in " + side + ": not compared");
        EXPECT_EQ(f.where.step, 1);
        ranks.push_back(f.where.rank.value_or(-1));
      }
    }
    std::sort(ranks.begin(), ranks.end());
    EXPECT_EQ(ranks, (std::vector<int>{0, 1}));
  }
}

TEST(RunCompare, ShardSpecV2RunsOfDifferentLayoutsAgreeOnFullTensors) {
  gparity::testing::TempDir tmp;
  write_run(tmp.path() / "one", 1, 3, std::nullopt, hash::ShardSpec::V2);
  write_run(tmp.path() / "four", 4, 3, std::nullopt, hash::ShardSpec::V2);
  write_run(tmp.path() / "four_poked", 4, 3, std::pair{3, 41}, hash::ShardSpec::V2);
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "one", tmp.path() / "four", out), 0);
  EXPECT_EQ(out.verdict.data["full_tensors"]["compared"], 3);
  diff::CollectingConsumer poked;
  EXPECT_EQ(compare(tmp.path() / "one", tmp.path() / "four_poked", poked), 1);
  EXPECT_EQ(poked.verdict.data["full_tensors"]["first_divergent_step"], 3);
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

// --- missing evidence: failures, killed ranks, declared steps not recorded --------------------

namespace {

/// A run of `world` ranks; rank r records steps 1..recorded[r] (loss and one hash array), then
/// the failure events in `failures` (rank, step, message). `declared`: the manifest's step count.
struct PartialRun {
  int world = 2;
  std::optional<std::int64_t> declared;
  std::vector<int> recorded;
  std::vector<std::tuple<int, std::int64_t, std::string>> failures;
  std::vector<std::int64_t> skipped = {};  // steps no rank writes (a hole in the record)
  float loss_scale = 2.0F;                 // loss at step s: loss_scale / s
  std::vector<int> nodes = {};             // the manifest's node of each rank (none: one node)
};

void write_partial(const std::filesystem::path& dir, const PartialRun& p) {
  model::RunManifest m;
  m.world_size = p.world;
  m.steps = p.declared;
  for (std::size_t r = 0; r < p.nodes.size(); ++r) {
    model::RankInfo info{static_cast<int>(r), 0, "", "cpu"};
    info.node = p.nodes[r];
    m.ranks.push_back(info);
  }
  model::write_manifest(dir, m);
  for (int r = 0; r < p.world; ++r) {
    model::TraceWriter w(dir, r);
    model::ParamsRecord params;
    params.params.push_back(
        {"w", DType::F32, {4}, {0}, {4}, {{model::Placement::Kind::Replicate, -1}}, r == 0});
    w.write_params(params);
    for (int s = 1; s <= p.recorded.at(static_cast<std::size_t>(r)); ++s) {
      if (std::find(p.skipped.begin(), p.skipped.end(), s) != p.skipped.end()) continue;
      model::StepRecord rec;
      rec.step = s;
      rec.loss = model::TraceScalar::from_f32(p.loss_scale / static_cast<float>(s));
      rec.hashes.push_back({"param.xxh3", {0x1234U + static_cast<std::uint64_t>(s)}});
      w.write_step(rec);
    }
    for (const auto& [rank, step, message] : p.failures) {
      if (rank == r) w.write_event({"failure", step, message, nlohmann::json::object()});
    }
  }
}

std::vector<const diff::Finding*> findings_of(const diff::CollectingConsumer& out, std::string_view kind) {
  std::vector<const diff::Finding*> v;
  for (const auto& f : out.findings) {
    if (f.kind == kind) v.push_back(&f);
  }
  return v;
}

TEST(RunEvidence, TwoRunsThatFailedAtStepOneCompareNothingAndExitTwo) {
  gparity::testing::TempDir tmp;
  const PartialRun failed{
      2, 10, {0, 0}, {{0, 1, "NCCL error: unhandled system error"}, {1, 1, "NCCL error"}}};
  write_partial(tmp.path() / "a", failed);
  write_partial(tmp.path() / "b", failed);
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "b", out), 2);
  EXPECT_EQ(out.verdict.headline.rfind("NOTHING COMPARED: neither run recorded a step", 0), 0U)
      << out.verdict.headline;
  EXPECT_TRUE(out.verdict.data["nothing_compared"].get<bool>());
  EXPECT_FALSE(out.verdict.data["bitwise_proof"].get<bool>());
  ASSERT_EQ(findings_of(out, "nothing_compared").size(), 1U);
  // Every rank's failure of both runs is named, with its step and message.
  const auto failures = findings_of(out, "rank_failure");
  ASSERT_EQ(failures.size(), 4U);
  EXPECT_EQ(failures[0]->message, "baseline rank 0 failed at step 1: NCCL error: unhandled system error");
  EXPECT_EQ(failures[0]->where.step, 1);
  EXPECT_EQ(findings_of(out, "steps_not_recorded").size(), 4U);  // the manifest declares 10 steps
  for (const auto& c : out.checks) {
    EXPECT_NE(c.outcome, diff::Check::Outcome::Pass) << c.name;
  }
}

TEST(RunEvidence, NothingCommonIsExitTwoEvenWithoutFailures) {
  gparity::testing::TempDir tmp;
  write_partial(tmp.path() / "a", {1, std::nullopt, {3}, {}});
  write_partial(tmp.path() / "b", {1, std::nullopt, {3}, {}});
  diff::CompareOptions only_grads;
  only_grads.loss = only_grads.grad_norm = only_grads.weights = only_grads.optimizer = false;
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "b", out, only_grads), 2);
  EXPECT_NE(out.verdict.headline.find("every check was skipped"), std::string::npos) << out.verdict.headline;

  diff::CompareOptions late;
  late.first_step = 7;
  diff::CollectingConsumer window;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "b", window, late), 2);
  EXPECT_NE(window.verdict.headline.find("neither run recorded a step inside the steps asked for"),
            std::string::npos)
      << window.verdict.headline;
}

TEST(RunEvidence, KilledRankAgainstItselfIsIncompleteAndNamesRankAndStep) {
  gparity::testing::TempDir tmp;
  // Rank 1 killed at the start of step 2: rank 0 records step 1, then fails in step 2's collective.
  write_partial(tmp.path() / "run",
                {2, 3, {1, 1}, {{0, 2, "rank 1 died (no heartbeat) while rank 0 waited in all_gather"}}});
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "run", tmp.path() / "run", out), 1);
  EXPECT_EQ(out.verdict.headline.rfind("INCOMPLETE: evidence is missing", 0), 0U) << out.verdict.headline;
  const auto missing = findings_of(out, "steps_not_recorded");
  ASSERT_EQ(missing.size(), 4U);  // both ranks of both runs stop after step 1 of 3
  const auto* rank1 = missing[1];
  EXPECT_EQ(rank1->severity, diff::Severity::Incomplete);
  EXPECT_EQ(rank1->where.rank, 1);
  EXPECT_EQ(rank1->where.step, 2);
  EXPECT_EQ(
      rank1->message,
      "baseline rank 1 stopped after step 1: steps 2-3 missing (the manifest declares 3 steps); no failure "
      "event of its own: killed or lost");
  const auto failures = findings_of(out, "rank_failure");
  ASSERT_EQ(failures.size(), 2U);
  EXPECT_EQ(failures[0]->where.rank, 0);
  EXPECT_EQ(failures[0]->where.step, 2);
  // JUnit gets a failing "evidence" case per incomplete rank; the summary names the evidence.
  int evidence_failed = 0;
  for (const auto& c : out.checks)
    evidence_failed += c.name == "evidence" && c.outcome == diff::Check::Outcome::Fail;
  EXPECT_EQ(evidence_failed, 2);
  EXPECT_TRUE(std::any_of(out.verdict.summary.begin(), out.verdict.summary.end(), [](const std::string& s) {
    return s.find("missing evidence: baseline rank 1 stopped after step 1") == 0;
  }));
  EXPECT_EQ(out.verdict.data["evidence"]["candidate"]["incomplete_ranks"], nlohmann::json::array({0, 1}));

  // --allow-incomplete: parity on what is there, and the report says so everywhere.
  diff::CompareOptions allow;
  allow.allow_incomplete = true;
  diff::CollectingConsumer allowed;
  EXPECT_EQ(compare(tmp.path() / "run", tmp.path() / "run", allowed, allow), 0);
  EXPECT_NE(allowed.verdict.headline.find("(--allow-incomplete)"), std::string::npos)
      << allowed.verdict.headline;
  EXPECT_TRUE(std::any_of(allowed.header.notes.begin(), allowed.header.notes.end(),
                          [](const std::string& n) { return n.starts_with("--allow-incomplete"); }));
  EXPECT_FALSE(allowed.verdict.data["bitwise_proof"].get<bool>());
  EXPECT_EQ(findings_of(allowed, "steps_not_recorded").size(), 4U) << "still named";
}

TEST(RunEvidence, StepsAKilledRankLacksAgainstACompleteRunAreMissingEvidenceNotADivergence) {
  gparity::testing::TempDir tmp;
  write_partial(tmp.path() / "full", {2, 4, {4, 4}, {}});
  // Rank 1 killed after step 2 (its own run declares 4 steps); rank 0 saw it and failed at step 3.
  write_partial(tmp.path() / "killed", {2, 4, {2, 2}, {{0, 3, "rank 1 is dead or not responding"}}});
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "full", tmp.path() / "killed", out), 1);
  EXPECT_EQ(out.verdict.headline.rfind("INCOMPLETE: evidence is missing", 0), 0U) << out.verdict.headline;
  EXPECT_TRUE(findings_of(out, "missing_steps").empty());
  const auto unrecorded = findings_of(out, "steps_not_compared");
  ASSERT_EQ(unrecorded.size(), 2U);
  EXPECT_EQ(unrecorded[1]->severity, diff::Severity::Incomplete);
  EXPECT_EQ(unrecorded[1]->where.rank, 1);
  EXPECT_EQ(unrecorded[1]->where.step, 3);
  EXPECT_EQ(
      unrecorded[1]->message,
      "steps 3-4 in baseline not compared: candidate rank 1 stopped after step 2 (missing evidence, not a "
      "divergence)");
  for (const auto& r : out.verdict.data["ranks"]) EXPECT_TRUE(r["first_divergent_step"].is_null()) << r;
  for (const auto& c : out.checks) {
    if (c.name == "steps") {
      EXPECT_EQ(c.outcome, diff::Check::Outcome::Skipped) << c.message;
    }
  }

  // The other way round: the baseline stopped, the candidate's later steps are not compared.
  diff::CollectingConsumer reverse;
  EXPECT_EQ(compare(tmp.path() / "killed", tmp.path() / "full", reverse), 1);
  EXPECT_EQ(reverse.verdict.headline.rfind("INCOMPLETE: evidence is missing", 0), 0U)
      << reverse.verdict.headline;
  EXPECT_TRUE(findings_of(reverse, "extra_steps").empty());
  ASSERT_EQ(findings_of(reverse, "steps_not_compared").size(), 2U);
  EXPECT_EQ(
      findings_of(reverse, "steps_not_compared")[0]->message,
      "steps 3-4 in candidate not compared: baseline rank 0 stopped after step 2 (missing evidence, not a "
      "divergence)");

  // A divergence in the steps both recorded is still a divergence.
  write_partial(tmp.path() / "other", {2, 4, {2, 2}, {{0, 3, "rank 1 is dead"}}, {}, 3.0F});
  diff::CollectingConsumer differs;
  EXPECT_EQ(compare(tmp.path() / "full", tmp.path() / "other", differs), 1);
  EXPECT_EQ(differs.verdict.headline, "DIVERGENCE: the runs are not identical (and evidence is missing)");
  EXPECT_EQ(differs.verdict.data["ranks"][0]["first_divergent_step"], 1);
}

TEST(RunEvidence, AHoleInTheRecordOrAShorterCompleteRunStaysADivergence) {
  gparity::testing::TempDir tmp;
  write_partial(tmp.path() / "full", {2, 4, {4, 4}, {}});
  // Step 2 missing in the middle of every rank's record: a divergence at step 2, though the run
  // is also incomplete by its own manifest.
  write_partial(tmp.path() / "hole", {2, 4, {4, 4}, {}, {2}});
  diff::CollectingConsumer hole;
  EXPECT_EQ(compare(tmp.path() / "full", tmp.path() / "hole", hole), 1);
  EXPECT_EQ(hole.verdict.headline, "DIVERGENCE: the runs are not identical (and evidence is missing)");
  ASSERT_EQ(findings_of(hole, "missing_steps").size(), 2U);
  EXPECT_EQ(findings_of(hole, "missing_steps")[0]->message, "step 2 in baseline but missing in candidate");
  EXPECT_TRUE(findings_of(hole, "steps_not_compared").empty());
  EXPECT_EQ(hole.verdict.data["ranks"][0]["first_divergent_step"], 2);

  // A run that declares and records 2 steps, complete on its own: the 2 steps it lacks against a
  // 4-step run are a divergence, not missing evidence.
  write_partial(tmp.path() / "short", {2, 2, {2, 2}, {}});
  diff::CollectingConsumer shorter;
  EXPECT_EQ(compare(tmp.path() / "full", tmp.path() / "short", shorter), 1);
  EXPECT_EQ(shorter.verdict.headline, "DIVERGENCE: the runs are not identical");
  ASSERT_EQ(findings_of(shorter, "missing_steps").size(), 2U);
  EXPECT_EQ(findings_of(shorter, "missing_steps")[0]->message,
            "steps 3-4 in baseline but missing in candidate");
  EXPECT_EQ(shorter.verdict.data["ranks"][0]["first_divergent_step"], 3);
}

TEST(RunEvidence, ALostNodeIsNamedInTheHeadline) {
  gparity::testing::TempDir tmp;
  write_partial(tmp.path() / "full", {4, 4, {4, 4, 4, 4}, {}, {}, 2.0F, {0, 0, 1, 1}});
  // Node 1 (ranks 2-3) killed after step 2; node 0's ranks saw it and failed at step 3.
  write_partial(
      tmp.path() / "lost",
      {4, 4, {2, 2, 2, 2}, {{0, 3, "rank 2 is dead"}, {1, 3, "rank 3 is dead"}}, {}, 2.0F, {0, 0, 1, 1}});
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "full", tmp.path() / "lost", out), 1);
  EXPECT_EQ(
      out.verdict.headline,
      "INCOMPLETE: evidence is missing: candidate node 1 (ranks 2-3) was lost; no divergence in what was "
      "compared");
  EXPECT_TRUE(findings_of(out, "missing_steps").empty());
  EXPECT_EQ(findings_of(out, "steps_not_compared").size(), 4U);
  ASSERT_EQ(findings_of(out, "node_lost").size(), 1U);

  // A divergence in what both recorded: DIVERGENCE, the lost node still named.
  write_partial(
      tmp.path() / "lost_differs",
      {4, 4, {2, 2, 2, 2}, {{0, 3, "rank 2 is dead"}, {1, 3, "rank 3 is dead"}}, {}, 3.0F, {0, 0, 1, 1}});
  diff::CollectingConsumer differs;
  EXPECT_EQ(compare(tmp.path() / "full", tmp.path() / "lost_differs", differs), 1);
  EXPECT_EQ(
      differs.verdict.headline,
      "DIVERGENCE: the runs are not identical (and evidence is missing: candidate node 1 (ranks 2-3) was "
      "lost)");
}

TEST(RunEvidence, WithoutAManifestCountOtherRanksDeclareTheSteps) {
  gparity::testing::TempDir tmp;
  write_partial(tmp.path() / "a", {2, std::nullopt, {4, 4}, {}});
  write_partial(tmp.path() / "b", {2, std::nullopt, {4, 2}, {}});
  diff::CollectingConsumer self;
  EXPECT_EQ(compare(tmp.path() / "b", tmp.path() / "b", self), 1);
  const auto missing = findings_of(self, "steps_not_recorded");
  ASSERT_EQ(missing.size(), 2U);
  EXPECT_EQ(
      missing[0]->message,
      "baseline rank 1 stopped after step 2: steps 3-4 missing (other ranks of the run recorded them); no "
      "failure event of its own: killed or lost");
  // A complete run against itself: parity, nothing missing.
  diff::CollectingConsumer full;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "a", full), 0);
  EXPECT_TRUE(findings_of(full, "steps_not_recorded").empty());
  EXPECT_TRUE(full.verdict.data["evidence"]["baseline"]["complete"].get<bool>());
}

TEST(RunEvidence, MissingRankFileIsIncomplete) {
  gparity::testing::TempDir tmp;
  write_partial(tmp.path() / "a", {2, 2, {2, 2}, {}});
  write_partial(tmp.path() / "b", {2, 2, {2, 2}, {}});
  std::filesystem::remove(model::rank_trace_path(tmp.path() / "b", 1));
  diff::CollectingConsumer out;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "b", out), 1);
  EXPECT_EQ(out.verdict.headline.rfind("INCOMPLETE", 0), 0U) << out.verdict.headline;
  ASSERT_EQ(findings_of(out, "missing_rank").size(), 1U);
  EXPECT_EQ(findings_of(out, "missing_rank")[0]->message, "rank 1 is missing in candidate");
}

TEST(RunEvidence, GateMinimumsOfStepsRanksAndParameters) {
  gparity::testing::TempDir tmp;
  write_partial(tmp.path() / "a", {2, 3, {3, 3}, {}});
  diff::CompareOptions o;
  o.require.steps = 3;
  o.require.ranks = 2;
  o.require.parameters = 1;
  diff::CollectingConsumer met;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "a", met, o), 0);
  EXPECT_EQ(met.verdict.data["compared"]["steps"], 3);
  EXPECT_EQ(met.verdict.data["compared"]["ranks"], 2);
  EXPECT_EQ(met.verdict.data["compared"]["parameters"], 1);

  o.require.steps = 4;
  o.require.parameters = 2;
  o.allow_incomplete = true;  // waives missing evidence, never an explicit minimum
  diff::CollectingConsumer unmet;
  EXPECT_EQ(compare(tmp.path() / "a", tmp.path() / "a", unmet, o), 1);
  EXPECT_EQ(unmet.verdict.headline, "INCOMPLETE: less was compared than the gate requires");
  const auto req = findings_of(unmet, "requirement_not_met");
  ASSERT_EQ(req.size(), 1U);
  EXPECT_EQ(req[0]->message,
            "less was compared than required: steps 3 of at least 4, parameters 1 of at least 2");
}

TEST(RunEvidence, ManifestStepsMustBeACount) {
  gparity::testing::TempDir tmp;
  write_partial(tmp.path() / "a", {1, 2, {2}, {}});
  const auto manifest = model::manifest_path(tmp.path() / "a");
  auto j = nlohmann::json::parse(std::ifstream(manifest));
  EXPECT_EQ(model::open_run((tmp.path() / "a").string()).manifest.steps, 2);
  j["steps"] = "two";
  std::ofstream(manifest) << j.dump();
  EXPECT_THROW((void)model::open_run((tmp.path() / "a").string()), model::InputError);
  j.erase("steps");
  j["train"] = {{"steps", 5}};  // what `gparity run` wrote before "steps"
  std::ofstream(manifest) << j.dump();
  EXPECT_EQ(model::open_run((tmp.path() / "a").string()).manifest.steps, 5);
}

}  // namespace
