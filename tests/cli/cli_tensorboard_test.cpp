// `gparity compare` on TensorBoard event files written by the test helper, and `gparity gate`
// policies that name the commands producing their runs.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tensorboard_writer.hpp"

namespace {

using gparity::testing::EventFileWriter;
using gparity::testing::run_command;
using gparity::testing::TempDir;
namespace fs = std::filesystem;

const std::string kTensorboardRuns = std::string(GPARITY_SOURCE_DIR) + "/tests/data/runs/";

std::vector<float> losses() {
  return {10.8125F, 9.96875F, 8.4453125F, 7.25F, 6.3787937F};
}

/// A two-rank torchtitan-style TensorBoard run (save_for_all_ranks: rank_<r>/ folders).
EventFileWriter rank_file(const std::vector<float>& loss) {
  EventFileWriter w;
  for (std::size_t i = 0; i < loss.size(); ++i) {
    const auto step = static_cast<std::int64_t>(i + 1);
    w.scalar(step, "loss_metrics/global_avg_loss", loss[i]);
    w.scalar(step, "grad_norm", 1.0F / static_cast<float>(step));
  }
  return w;
}

std::string write_run(const TempDir& tmp, const std::string& name, const std::vector<float>& rank1_loss) {
  const auto dir = tmp.path() / name;
  rank_file(losses()).save((dir / "rank_0" / "events.out.tfevents.1700000000.node0.11.0").string());
  rank_file(rank1_loss).save((dir / "rank_1" / "events.out.tfevents.1700000000.node0.12.0").string());
  return dir.string();
}

TEST(CliTensorBoard, IdenticalBitsCompareEqualOnEveryRank) {
  TempDir tmp;
  const auto a = write_run(tmp, "a", losses());
  const auto b = write_run(tmp, "b", losses());
  const auto r = run_command(GPARITY_EXE, {"compare", "--json", a, b});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["result"]["ranks"].size(), 2U);
  for (const auto& rank : j["result"]["ranks"]) EXPECT_EQ(rank["steps_compared"], 5) << rank.dump();
  EXPECT_TRUE(j["result"]["bitwise_proof"].get<bool>()) << "float32 bits from event files are exact";
  EXPECT_FALSE(j["result"]["rounded"].get<bool>());
}

TEST(CliTensorBoard, OneLossBitApartDiverges) {
  TempDir tmp;
  auto off = losses();
  off[3] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(off[3]) ^ 1U);
  const auto a = write_run(tmp, "a", losses());
  const auto b = write_run(tmp, "b", off);
  const auto r = run_command(GPARITY_EXE, {"compare", "--json", a, b});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& ranks = j["result"]["ranks"];
  ASSERT_EQ(ranks.size(), 2U);
  EXPECT_TRUE(ranks[0]["first_divergent_step"].is_null()) << ranks[0].dump();
  EXPECT_EQ(ranks[1]["first_divergent_step"], 4) << ranks[1].dump();
  const auto text = run_command(GPARITY_EXE, {"compare", a, b});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("rank 1 diverges at step 4"), std::string::npos) << text.out;
}

TEST(CliTensorBoard, CorruptCrcInTheMiddleExitsTwoNamingFileAndByteOffset) {
  TempDir tmp;
  const auto a = write_run(tmp, "a", losses());
  const auto b = write_run(tmp, "b", losses());
  const auto w = rank_file(losses());
  auto bytes = w.bytes();
  const auto offset = w.record_offsets().at(5);  // step 3's loss
  bytes[offset + 14] = static_cast<char>(bytes[offset + 14] ^ 0x01);
  const auto damaged = tmp.write("b/rank_0/events.out.tfevents.1700000000.node0.11.0", bytes);
  const auto r = run_command(GPARITY_EXE, {"compare", a, b});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find(damaged), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at byte offset " + std::to_string(offset) + ": data CRC mismatch"), std::string::npos)
      << r.out;
  // The records before the damage were still compared: steps 1-2, then 3-5 reported missing
  // (evidence: the damaged rank's own run says it stopped there).
  EXPECT_NE(r.out.find("steps 3-5 in baseline not compared: candidate rank 0 stopped after step 2"),
            std::string::npos)
      << r.out;
}

TEST(CliTensorBoard, TruncatedLastRecordIsAWarningAndTheStepItHeldIsMissing) {
  TempDir tmp;
  const auto a = write_run(tmp, "a", losses());
  const auto b = write_run(tmp, "b", losses());
  const auto w = rank_file(losses());
  const auto last = w.record_offsets().end()[-2];  // step 5's loss; its grad_norm follows
  tmp.write("b/rank_1/events.out.tfevents.1700000000.node0.12.0",
            std::string_view(w.bytes()).substr(0, last + 20));
  const auto r = run_command(GPARITY_EXE, {"compare", a, b});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("at byte offset " + std::to_string(last) + ": truncated"), std::string::npos) << r.out;
  // The rank stopped short of its run's other rank: the step is missing evidence, not a divergence.
  EXPECT_NE(r.out.find("step 5 in baseline not compared: candidate rank 1 stopped after step 4"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("INCOMPLETE: evidence is missing"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("rank 1 diverges"), std::string::npos) << r.out;
}

// --- gate policies that run the commands producing their runs --------------------------------

std::string write_policy(const TempDir& tmp, const nlohmann::json& baseline,
                         const nlohmann::json& candidate) {
  return tmp.write(
      "ci/policy.json",
      nlohmann::json{{"baseline", baseline}, {"candidate", candidate}, {"checks", {"loss", "weights"}}}
          .dump());
}

nlohmann::json copy_run(const std::string& from, const std::string& to) {
  // `cp -v` prints to stdout: the gate must keep it off its own stdout.
  return {{"command", {"cp", "-v", "-r", kTensorboardRuns + from, to}}, {"path", to}};
}

TEST(CliGateCommands, RunsTheCommandsInThePolicyFolderThenCompares) {
  TempDir tmp;
  const auto policy = write_policy(tmp, copy_run("eager", "base"), copy_run("eager_repeat", "cand"));
  const auto r = run_command(GPARITY_EXE,
                             {"gate", "--json", "--policy", policy, "--out", (tmp.path() / "rep").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(tmp.path() / "ci" / "base" / "rank0.jsonl")) << "ran in the policy's folder";
  EXPECT_TRUE(fs::exists(tmp.path() / "ci" / "cand" / "rank1.jsonl"));
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << "command output went to stdout:\n" << r.out;
  EXPECT_NE(r.err.find("running the baseline command"), std::string::npos) << r.err;

  TempDir tmp2;
  const auto diverging = write_policy(tmp2, copy_run("eager", "base"), copy_run("compile", "cand"));
  EXPECT_EQ(run_command(GPARITY_EXE, {"gate", "--policy", diverging, "--out", (tmp2.path() / "rep").string()})
                .exit_code,
            1);
}

TEST(CliGateCommands, FailingOrMissingCommandExitsTwoAndComparesNothing) {
  TempDir tmp;
  const auto out = (tmp.path() / "rep").string();
  auto policy =
      write_policy(tmp, copy_run("eager", "base"),
                   {{"command", {"cp", "-r", kTensorboardRuns + "no-such-run", "cand"}}, {"path", "cand"}});
  auto r = run_command(GPARITY_EXE, {"gate", "--policy", policy, "--out", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("candidate command: cp -r "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with status 1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fs::path(out) / "report.json")) << "no report on runs that were not produced";

  policy = write_policy(tmp, {{"command", {"gparity-no-such-program"}}, {"path", "base"}}, "cand");
  r = run_command(GPARITY_EXE, {"gate", "--policy", policy, "--out", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot run gparity-no-such-program"), std::string::npos) << r.err;

  // A run named on the command line is not produced again: the failing command is not run.
  policy = write_policy(tmp, {{"command", {"false"}}, {"path", "base"}}, "cand");
  r = run_command(GPARITY_EXE, {"gate", "--policy", policy, "--baseline", kTensorboardRuns + "eager",
                                "--candidate", kTensorboardRuns + "eager_repeat", "--out", out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliGateCommands, MalformedRunEntriesAreRejected) {
  TempDir tmp;
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"command", "cp -r a b"}, {"path", "b"}}, "must be a non-empty list of strings"},
      {{{"command", nlohmann::json::array()}, {"path", "b"}}, "must be a non-empty list of strings"},
      {{{"command", {"cp", 1}}, {"path", "b"}}, "non-string argument 1"},
      {{{"command", {"true"}}}, "needs a \"path\""},
      {{{"comand", {"true"}}, {"path", "b"}}, "unknown key \"comand\""},
      {42, "must be a path or"},
  };
  for (const auto& [entry, message] : bad) {
    const auto policy = write_policy(tmp, entry, "cand");
    const auto r = run_command(GPARITY_EXE, {"gate", "--policy", policy});
    EXPECT_EQ(r.exit_code, 2) << entry.dump();
    EXPECT_NE(r.err.find(message), std::string::npos) << entry.dump() << ": " << r.err;
  }
}

}  // namespace
