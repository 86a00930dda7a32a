// Drives the real `gparity run --nproc 2` (Gloo, CPU) on a tiny debug model: determinism,
// bucket plans, and what a dead or hung rank leaves behind.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model/run/trace_reader.hpp"
#include "core/model/run/trace_writer.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity {
namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;

std::vector<std::string> tiny_run(const std::filesystem::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"run", "--nproc",  "2",  "--out",     out.string(), "--steps",
                                "3",   "--dim",    "32", "--layers",  "2",          "--heads",
                                "2",   "--hidden", "64", "--vocab",   "64",         "--seq-len",
                                "8",   "--batch",  "2",  "--timeout", "20"};
  // An option given in `extra` replaces the default above (CLI11 takes each option once).
  for (std::size_t i = 0; i < extra.size(); ++i) {
    const auto it = std::find(args.begin(), args.end(), extra[i]);
    if (extra[i].starts_with("--") && it != args.end() && i + 1 < extra.size() &&
        !extra[i + 1].starts_with("--") && it + 1 != args.end() && !(it + 1)->starts_with("--")) {
      *(it + 1) = extra[++i];
    } else {
      args.push_back(extra[i]);
    }
  }
  return args;
}

model::RankTrace read_rank(const std::filesystem::path& dir, int rank) {
  return model::read_rank_trace(model::rank_trace_path(dir, rank).string(), rank);
}

/// Every step's loss, grad norm and hash arrays, bit for bit (the recorder's timing is not).
void expect_same_steps(const model::RankTrace& a, const model::RankTrace& b) {
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].step, b.steps[i].step);
    EXPECT_EQ(a.steps[i].loss, b.steps[i].loss) << "step " << a.steps[i].step;
    EXPECT_EQ(a.steps[i].grad_norm, b.steps[i].grad_norm) << "step " << a.steps[i].step;
    EXPECT_EQ(a.steps[i].hashes, b.steps[i].hashes) << "step " << a.steps[i].step;
  }
}

TEST(GparityRun, TwoRunsWithTheSameSeedAreBitwiseEqual) {
  TempDir dir;
  const auto a = dir.path() / "a", b = dir.path() / "b", c = dir.path() / "c";
  const auto ra = run_command(GPARITY_EXE, tiny_run(a, {"--hash-grads", "--hash-optim"}));
  ASSERT_EQ(ra.exit_code, 0) << ra.err << ra.out;
  EXPECT_NE(ra.out.find("[rank 1] step 3/3"), std::string::npos) << ra.out;
  ASSERT_EQ(run_command(GPARITY_EXE, tiny_run(b, {"--hash-grads", "--hash-optim"})).exit_code, 0);
  ASSERT_EQ(run_command(GPARITY_EXE, tiny_run(c, {"--hash-grads", "--hash-optim", "--seed", "43"})).exit_code,
            0);
  EXPECT_TRUE(std::filesystem::exists(model::manifest_path(a)));
  for (int r = 0; r < 2; ++r) {
    const auto ta = read_rank(a, r), tb = read_rank(b, r), tc = read_rank(c, r);
    EXPECT_TRUE(ta.issues.empty());
    ASSERT_EQ(ta.steps.size(), 3u);
    ASSERT_EQ(ta.params_tables.size(), 1u);
    EXPECT_EQ(ta.params_tables[0].params.size(), 21u);  // 1 + 9 per block x 2 + norm + output
    for (const char* name :
         {"param.xxh3", "param.shard", "grad.shard", "optim.exp_avg.shard", "optim.exp_avg_sq.xxh3"})
      EXPECT_NE(ta.steps[2].find_hashes(name), nullptr) << name;
    expect_same_steps(ta, tb);
    // The check can fail: another seed changes the loss bits and every weight hash.
    EXPECT_NE(ta.steps[0].loss, tc.steps[0].loss);
    EXPECT_NE(ta.steps[2].find_hashes("param.shard")->values, tc.steps[2].find_hashes("param.shard")->values);
  }
  // gparity compare agrees: parity between the repeats, divergence against the other seed.
  EXPECT_EQ(run_command(GPARITY_EXE, {"compare", a.string(), b.string()}).exit_code, 0);
  EXPECT_EQ(run_command(GPARITY_EXE, {"compare", a.string(), c.string()}).exit_code, 1);
  // Ranks see different data but reduce the same gradients: same grad norm, different losses.
  const auto t0 = read_rank(a, 0), t1 = read_rank(a, 1);
  EXPECT_EQ(t0.steps[1].grad_norm, t1.steps[1].grad_norm);
  EXPECT_NE(t0.steps[1].loss, t1.steps[1].loss);
}

TEST(GparityRun, BucketPlansRecordRegistrationAndExecutionOrder) {
  TempDir dir;
  const auto reg = dir.path() / "reg", exe = dir.path() / "exe";
  ASSERT_EQ(run_command(GPARITY_EXE, tiny_run(reg)).exit_code, 0);
  const auto re = run_command(GPARITY_EXE, tiny_run(exe, {"--bucket-order", "execution"}));
  ASSERT_EQ(re.exit_code, 0) << re.err;
  const auto a = read_rank(reg, 0), b = read_rank(exe, 0);
  ASSERT_EQ(a.buckets.size(), 1u);
  ASSERT_EQ(b.buckets.size(), 1u);
  EXPECT_EQ(a.buckets[0].extra.value("order", ""), "registration");
  EXPECT_EQ(b.buckets[0].extra.value("order", ""), "execution");
  const auto& ga = a.buckets[0].groups.at(0);
  const auto& gb = b.buckets[0].groups.at(0);
  ASSERT_EQ(ga.buckets.size(), 3u);
  ASSERT_EQ(gb.buckets.size(), 3u);
  const auto offset_of = [](const model::Bucket& bk, const std::string& fqn) {
    for (const auto& m : bk.members)
      if (m.fqn == fqn) return m.offset_bytes;
    return std::int64_t{-1};
  };
  // dim 32, hidden 64, 2 ranks: chunks of 16x32 (attention, w2 rows 16x64) and 32x32 (w1, w3)
  // floats. Registration order: wq wk wv wo w1 w2 w3 attention_norm ffn_norm.
  const auto& la = ga.buckets[1];  // layers.0
  const auto& lb = gb.buckets[1];
  EXPECT_EQ(offset_of(la, "layers.0.attention.wq.weight"), 0);
  EXPECT_EQ(offset_of(la, "layers.0.feed_forward.w2.weight"), (4 * 512 + 1024) * 4);
  EXPECT_EQ(offset_of(la, "layers.0.attention_norm.weight"), (4 * 512 + 1024 + 1024 + 1024) * 4);
  // Execution order: attention_norm wq wk wv wo ffn_norm w1 w3 w2.
  EXPECT_EQ(offset_of(lb, "layers.0.attention_norm.weight"), 0);
  EXPECT_EQ(offset_of(lb, "layers.0.attention.wq.weight"), 16 * 4);
  EXPECT_EQ(offset_of(lb, "layers.0.feed_forward.w2.weight"), (16 + 4 * 512 + 16 + 1024 + 1024) * 4);
  EXPECT_EQ(la.collective, "reduce_scatter");

  // `gparity buckets` reads both traces and names each moved member with both byte offsets.
  const auto cmp = run_command(GPARITY_EXE, {"buckets", reg.string(), exe.string()});
  EXPECT_EQ(cmp.exit_code, 1) << cmp.err;
  const std::string moved = "layers.0.attention_norm.weight moved in bucket layers.0: member 8 at byte " +
                            std::to_string(offset_of(la, "layers.0.attention_norm.weight")) +
                            " in the baseline, member 1 at byte 0 in the candidate";
  EXPECT_NE(cmp.out.find(moved), std::string::npos) << cmp.out;
  EXPECT_EQ(run_command(GPARITY_EXE, {"buckets", reg.string(), reg.string()}).exit_code, 0);
}

TEST(GparityRun, KilledRankEndsTheRunWithItsNameAndAReadablePartialTrace) {
  TempDir dir;
  const auto out = dir.path() / "killed";
  auto args = tiny_run(out, {"--inject-fault", "kill:1:3", "--steps", "5"});
  const auto r = run_command(GPARITY_EXE, args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("run failed: rank 1 was killed by signal 9"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1 is dead or not responding"), std::string::npos) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const auto t = read_rank(out, rank);
    EXPECT_TRUE(t.issues.empty()) << rank;
    ASSERT_EQ(t.steps.size(), 2u) << rank;
    EXPECT_EQ(t.steps.back().step, 2);
  }
  const auto t0 = read_rank(out, 0);
  ASSERT_EQ(t0.events.size(), 1u);
  EXPECT_EQ(t0.events[0].kind, "failure");
  EXPECT_EQ(t0.events[0].step, 3);
}

TEST(GparityRun, HungRankIsNamedAfterTheTimeout) {
  TempDir dir;
  const auto out = dir.path() / "hung";
  const auto args = tiny_run(out, {"--inject-fault", "hang:0:2", "--timeout", "2"});
  const auto r = run_command(GPARITY_EXE, args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("rank 0 is alive but hung at step 2"), std::string::npos) << r.err;
  const auto t1 = read_rank(out, 1);
  EXPECT_TRUE(t1.issues.empty());
  EXPECT_EQ(t1.steps.size(), 1u);
}

TEST(GparityRun, BadOptionsExitTwo) {
  TempDir dir;
  auto r = run_command(GPARITY_EXE, tiny_run(dir.path() / "x", {"--heads", "3"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dim must be a multiple of --heads"), std::string::npos) << r.err;
  r = run_command(GPARITY_EXE, {"run", "--out", (dir.path() / "y").string(), "--dtype", "f16"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(GparityRun, Bf16RunRecordsBf16Weights) {
  TempDir dir;
  const auto out = dir.path() / "bf16";
  const auto r =
      run_command(GPARITY_EXE, tiny_run(out, {"--dtype", "bf16", "--optimizer", "sgd", "--lr", "0.1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = read_rank(out, 1);
  ASSERT_EQ(t.steps.size(), 3u);
  EXPECT_EQ(t.params_tables.at(0).params.at(0).dtype, model::DType::BF16);
  EXPECT_NE(t.steps[0].find_hashes("param.xxh3")->values, t.steps[2].find_hashes("param.xxh3")->values);
}

}  // namespace
}  // namespace gparity
