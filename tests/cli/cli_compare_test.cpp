#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/file_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tensorboard_writer.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;
namespace fs = std::filesystem;

// Copies of ../shared/samples/torch-2.11-fsdp2-2rank (facts from its README).
const std::string kCompareRuns = std::string(GPARITY_SOURCE_DIR) + "/tests/data/runs/";

nlohmann::json compare_json(const std::string& a, const std::string& b, int expected_rc) {
  const auto r = run_command(GPARITY_EXE, {"compare", "--json", a, b});
  EXPECT_EQ(r.exit_code, expected_rc) << r.err;
  return nlohmann::json::parse(r.out);
}

using gparity::testing::slurp;

TEST(CliCompare, EagerRepeatIsBitwiseIdenticalOnBothRanks) {
  const auto j = compare_json(kCompareRuns + "eager", kCompareRuns + "eager_repeat", 0);
  ASSERT_EQ(j["result"]["ranks"].size(), 2U);
  for (const auto& r : j["result"]["ranks"]) {
    EXPECT_TRUE(r["first_divergent_step"].is_null());
    EXPECT_EQ(r["steps_compared"], 6);
  }
  EXPECT_TRUE(j["result"]["bitwise_proof"].get<bool>());
}

TEST(CliCompare, CompileDivergesInWeightsAtStepOneWhileLossesAreEqual) {
  const auto j = compare_json(kCompareRuns + "eager", kCompareRuns + "compile", 1);
  ASSERT_EQ(j["result"]["ranks"].size(), 2U);
  for (const auto& r : j["result"]["ranks"]) {
    EXPECT_EQ(r["first_divergent_step"], 1) << r.dump();
    const auto& first = r["first_divergence"];
    EXPECT_EQ(first["params"]["count"], 14);
    EXPECT_EQ(first["params"]["total"], 21);
    EXPECT_EQ(first["params"]["params"][0], "tok.weight");
    EXPECT_EQ(first["scalars"]["loss"], "bitwise equal");
    EXPECT_EQ(first["scalars"]["grad_norm"], "bitwise equal");
    // Losses diverge later than weights.
    ASSERT_FALSE(r["loss_first_divergent_step"].is_null());
    EXPECT_GT(r["loss_first_divergent_step"].get<int>(), 1);
  }
  const auto text = run_command(GPARITY_EXE, {"compare", kCompareRuns + "eager", kCompareRuns + "compile"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("ranks 0-1 diverge at step 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("14 of 21 parameters differ"), std::string::npos);
  EXPECT_EQ(text.out.find("\033["), std::string::npos) << "no colour when stdout is not a TTY";
}

TEST(CliCompare, ConsoleLogsSayRoundedTextCannotProveParity) {
  const auto r =
      run_command(GPARITY_EXE, {"compare", kCompareRuns + "eager.log", kCompareRuns + "compile.log"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cannot prove bitwise parity"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parity cannot be proven bitwise from rounded text"), std::string::npos) << r.out;
  const auto j = compare_json(kCompareRuns + "eager.log", kCompareRuns + "compile.log", 0);
  EXPECT_TRUE(j["result"]["rounded"].get<bool>());
  EXPECT_FALSE(j["result"]["bitwise_proof"].get<bool>());
}

TEST(CliCompare, MissingRankFileIsNamedAndIncomplete) {
  TempDir tmp;
  fs::copy(kCompareRuns + "eager", tmp.path() / "cand", fs::copy_options::recursive);
  // Rank 1's lines as rank 2's (each line names its rank: a file of another rank's lines is corrupt).
  auto text = slurp(tmp.path() / "cand" / "rank1.jsonl");
  for (auto at = text.find("\"rank\": 1,"); at != std::string::npos; at = text.find("\"rank\": 1,", at + 1))
    text.replace(at, 10, "\"rank\": 2,");
  tmp.write("cand/rank2.jsonl", text);
  fs::remove(tmp.path() / "cand" / "rank1.jsonl");
  const auto r =
      run_command(GPARITY_EXE, {"compare", kCompareRuns + "eager", (tmp.path() / "cand").string()});
  EXPECT_EQ(r.exit_code, 1);  // missing evidence: INCOMPLETE (rank 2 is extra: it diverges)
  EXPECT_NE(r.out.find("rank1.jsonl"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1 file is missing"), std::string::npos) << r.out;
}

TEST(CliCompare, TruncatedLastLineIsAWarningAndEarlierStepsStillCompare) {
  TempDir tmp;
  fs::copy(kCompareRuns + "eager_repeat", tmp.path() / "cand", fs::copy_options::recursive);
  auto text = slurp(tmp.path() / "cand" / "rank0.jsonl");
  text.resize(text.size() - 100);
  tmp.write("cand/rank0.jsonl", text);
  const auto r =
      run_command(GPARITY_EXE, {"compare", kCompareRuns + "eager", (tmp.path() / "cand").string()});
  // Step 6 on rank 0 is lost: rank 0 stopped short of rank 1, so the step is missing evidence.
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("rank0.jsonl:6, rank 0]: candidate: truncated last line"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 6 in baseline not compared: candidate rank 0 stopped after step 5"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("INCOMPLETE: evidence is missing"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("rank 0 diverges"), std::string::npos) << r.out;
}

TEST(CliCompare, ToleranceIsNamedInTheReport) {
  const auto j =
      nlohmann::json::parse(run_command(GPARITY_EXE, {"compare", "--json", "--ulp", "2",
                                                      kCompareRuns + "eager", kCompareRuns + "compile"})
                                .out);
  EXPECT_NE(j["mode"].get<std::string>().find("ulp <= 2"), std::string::npos);
  for (const auto& r : j["result"]["ranks"])
    EXPECT_TRUE(r["loss_first_divergent_step"].is_null()) << r.dump();
}

TEST(CliCompare, BadInputAndUsageExitTwo) {
  EXPECT_EQ(run_command(GPARITY_EXE, {"compare", kCompareRuns + "eager"}).exit_code, 2);
  const auto r = run_command(GPARITY_EXE, {"compare", kCompareRuns + "eager", "/nonexistent/run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/run"), std::string::npos) << r.err;
}

TEST(CliGate, WritesJunitMarkdownAndJsonAndExitsLikeCompare) {
  TempDir tmp;
  const auto out = tmp.path() / "reports";
  auto r = run_command(GPARITY_EXE, {"gate", "--baseline", kCompareRuns + "eager", "--candidate",
                                     kCompareRuns + "compile", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto junit = slurp(out / "junit.xml");
  EXPECT_NE(junit.find("<testcase classname=\"gparity.gate.weights\" name=\"weights [rank 1]\">"),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<failure message=\"first divergence at step 1\">"), std::string::npos) << junit;
  EXPECT_NE(slurp(out / "report.md").find("14 of 21 parameters differ"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(slurp(out / "report.json"))["exit_code"], 1);

  r = run_command(GPARITY_EXE,
                  {"gate", "--policy", std::string(GPARITY_SOURCE_DIR) + "/samples/runs/gate.json", "--out",
                   out.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(slurp(out / "junit.xml").find("failures=\"0\""), std::string::npos);
}

TEST(CliGate, PolicyTypoIsRejected) {
  TempDir tmp;
  const auto policy = tmp.write("p.json", R"({"baseline": "a", "candidate": "b", "tolerence": {"ulp": 1}})");
  const auto r = run_command(GPARITY_EXE, {"gate", "--policy", policy});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown key \"tolerence\""), std::string::npos) << r.err;
}

// --- never green on missing evidence (docs/gate.md) ------------------------------------------
// Traces written by the real `gparity run` with injected faults (tests/data/runs/faults/README.md).

const std::string kFaults = kCompareRuns + "faults/";
constexpr auto npos = std::string::npos;

TEST(CliEvidence, TwoRunsThatFailedAtStepOneCompareNothingAndFailTheGate) {
  const auto a = kFaults + "failed-step1-kill";
  const auto b = kFaults + "failed-step1-hang";
  const auto r = run_command(GPARITY_EXE, {"compare", a, b});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("NOTHING COMPARED: neither run recorded a step"), npos) << r.out;
  EXPECT_EQ(r.out.find("PARITY"), npos) << r.out;
  EXPECT_NE(r.out.find("baseline rank 0 failed at step 1: rank 0: all_gather at step 1 failed"), npos)
      << r.out;
  EXPECT_NE(r.out.find("candidate rank 1 failed at step 1: rank 1: all_gather at step 1 failed"), npos)
      << r.out;
  EXPECT_NE(r.out.find("baseline rank 1 recorded no step: steps 1-3 missing (the manifest declares 3 steps)"),
            npos)
      << r.out;
  // A failed run against itself is no better.
  EXPECT_EQ(run_command(GPARITY_EXE, {"compare", a, a}).exit_code, 2);
  EXPECT_EQ(run_command(GPARITY_EXE, {"compare", "--allow-incomplete", a, a}).exit_code, 2)
      << "--allow-incomplete never turns nothing compared into a pass";

  TempDir tmp;
  const auto out = tmp.path() / "reports";
  const auto g = run_command(GPARITY_EXE, {"gate", "--baseline", a, "--candidate", b, "--out", out.string()});
  EXPECT_EQ(g.exit_code, 2) << g.out << g.err;
  const auto json = nlohmann::json::parse(slurp(out / "report.json"));
  EXPECT_EQ(json["exit_code"], 2);
  EXPECT_FALSE(json["parity"].get<bool>());
  EXPECT_TRUE(json["result"]["nothing_compared"].get<bool>());
  EXPECT_EQ(json["result"]["compared"]["values"], 0);
  const auto md = slurp(out / "report.md");
  EXPECT_NE(md.find("❌"), npos) << md;
  EXPECT_NE(md.find("NOTHING COMPARED"), npos) << md;
  const auto html = slurp(out / "report.html");
  EXPECT_NE(html.find("<p class=\"fail\" id=\"verdict\"><b>NOTHING COMPARED"), npos) << html;
  EXPECT_NE(
      html.find("<tr class=\"incomplete\"><td>incomplete</td><td>rank 0, step 1</td><td>rank_failure</td>"),
      npos)
      << html;
  const auto junit = slurp(out / "junit.xml");
  EXPECT_NE(junit.find("name=\"evidence [rank 0]\""), npos) << junit;
  EXPECT_EQ(junit.find("failures=\"0\""), npos) << junit;
}

TEST(CliEvidence, KilledRankAgainstItselfIsIncompleteAndNamesRankAndStep) {
  const auto run = kFaults + "killed-rank1-step2";
  const auto r = run_command(GPARITY_EXE, {"compare", run, run});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("INCOMPLETE: evidence is missing"), npos) << r.out;
  EXPECT_NE(r.out.find("incomplete [rank 1, step 2]: baseline rank 1 stopped after step 1: steps 2-3 missing "
                       "(the manifest declares 3 steps); no failure event of its own: killed or lost"),
            npos)
      << r.out;
  EXPECT_NE(
      r.out.find("incomplete [rank 0, step 2]: baseline rank 0 failed at step 2: rank 0: all_gather at step "
                 "2 failed"),
      npos)
      << r.out;
  EXPECT_NE(r.out.find("rank 1 is dead or not responding (last seen at step 2)"), npos) << r.out;
  EXPECT_EQ(r.out.find("PARITY"), npos) << r.out;

  const auto j = compare_json(run, run, 1);
  EXPECT_TRUE(j["result"]["incomplete"].get<bool>());
  EXPECT_FALSE(j["result"]["bitwise_proof"].get<bool>());
  EXPECT_EQ(j["result"]["evidence"]["candidate"]["incomplete_ranks"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(j["result"]["evidence"]["candidate"]["manifest_steps"], 3);
  EXPECT_EQ(j["result"]["compared"]["steps"], 1);

  TempDir tmp;
  const auto out = tmp.path() / "reports";
  const auto g =
      run_command(GPARITY_EXE, {"gate", "--baseline", run, "--candidate", run, "--out", out.string()});
  EXPECT_EQ(g.exit_code, 1) << g.out << g.err;
  const auto junit = slurp(out / "junit.xml");
  EXPECT_NE(junit.find("<testcase classname=\"gparity.gate.evidence\" name=\"evidence [rank 1]\">"), npos)
      << junit;
  EXPECT_NE(junit.find("baseline rank 1 stopped after step 1"), npos) << junit;
  const auto md = slurp(out / "report.md");
  EXPECT_NE(md.find("## ❌"), npos) << md;
  EXPECT_NE(md.find("candidate rank 1 stopped after step 1"), npos) << md;

  // Against a complete run of the same configuration the lost steps are missing too.
  const auto full = run_command(GPARITY_EXE, {"compare", run, kFaults + "failed-step1-kill"});
  EXPECT_EQ(full.exit_code, 2) << "the candidate recorded no step: " << full.out;
  EXPECT_NE(full.out.find("NOTHING COMPARED: the candidate recorded no step"), npos) << full.out;
}

TEST(CliEvidence, AllowIncompleteIsNamedInEveryReport) {
  const auto run = kFaults + "killed-rank1-step2";
  TempDir tmp;
  const auto junit = tmp.path() / "junit.xml";
  const auto md = tmp.path() / "report.md";
  const auto json = tmp.path() / "report.json";
  const auto html = tmp.path() / "report.html";
  const auto r = run_command(
      GPARITY_EXE, {"compare", "--allow-incomplete", run, run, "--junit", junit.string(), "--markdown",
                    md.string(), "--json-file", json.string(), "--html", html.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("note: --allow-incomplete: missing evidence"), npos) << r.out;
  EXPECT_NE(r.out.find("PARITY: bitwise identical on the evidence present (--allow-incomplete)"), npos)
      << r.out;
  EXPECT_NE(r.out.find("baseline rank 1 stopped after step 1"), npos) << "still named: " << r.out;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_TRUE(j["result"]["allow_incomplete"].get<bool>());
  EXPECT_TRUE(j["result"]["incomplete"].get<bool>());
  EXPECT_FALSE(j["result"]["bitwise_proof"].get<bool>());
  EXPECT_NE(j["notes"].dump().find("--allow-incomplete"), npos) << j["notes"];
  const auto x = slurp(junit);
  EXPECT_NE(x.find("<property name=\"note\" value=\"--allow-incomplete:"), npos) << x;
  EXPECT_NE(x.find("<skipped message=\"incomplete (allowed by --allow-incomplete)\">"), npos) << x;
  const auto m = slurp(md);
  EXPECT_NE(m.find("## ⚠️"), npos) << m;
  EXPECT_NE(m.find("> --allow-incomplete: missing evidence"), npos) << m;
  const auto h = slurp(html);
  EXPECT_NE(h.find("<p class=\"warn\" id=\"verdict\"><b>PARITY: bitwise identical on the evidence present "
                   "(--allow-incomplete)"),
            npos)
      << h;
  EXPECT_NE(h.find("<li>--allow-incomplete: missing evidence"), npos) << h;
}

TEST(CliEvidence, GatePolicyRequiresMinimumsAndMayAllowIncomplete) {
  TempDir tmp;
  const auto run = kFaults + "killed-rank1-step2";
  const auto gate = [&](const nlohmann::json& policy) {
    nlohmann::json p = policy;
    p["baseline"] = run;
    p["candidate"] = run;
    const auto path = tmp.write("policy.json", p.dump());
    return run_command(GPARITY_EXE, {"gate", "--policy", path, "--out", (tmp.path() / "out").string()});
  };
  auto r = gate({{"allow_incomplete", true}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = gate({{"allow_incomplete", true}, {"require", {{"steps", 3}, {"ranks", 2}}}});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("less was compared than required: steps 1 of at least 3"), npos) << r.out;
  EXPECT_NE(r.out.find("INCOMPLETE: less was compared than the gate requires"), npos) << r.out;
  r = gate({{"require", {{"steps", -1}}}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("\"require\" \"steps\" must be a non-negative integer"), npos) << r.err;
  r = gate({{"require", {{"step", 1}}}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown key \"step\""), npos) << r.err;
  // The bundled policy still passes, with its minimums met.
  r = gate({{"require", {{"steps", 1}, {"ranks", 2}, {"parameters", 1}}}, {"allow_incomplete", true}});
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(CliEvidence, SourcesWithoutAManifestDeclareWhatTheirRanksRecorded) {
  TempDir tmp;
  // torchtitan console logs: rank 1 printed one step fewer than rank 0.
  const auto log =
      tmp.write("short.log",
                "[rank0]: step: 1  loss: 4.1  grad_norm: 1.5\n[rank1]: step: 1  loss: 4.1  grad_norm: 1.5\n"
                "[rank0]: step: 2  loss: 3.9  grad_norm: 1.4\n");
  auto r = run_command(GPARITY_EXE, {"compare", log, log});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(
      r.out.find(
          "baseline rank 1 stopped after step 1: step 2 missing (other ranks of the run recorded them)"),
      npos)
      << r.out;
  // Logs with no step in common: nothing compared.
  const auto late = tmp.write("late.log", "step: 7  loss: 4.1  grad_norm: 1.5\n");
  const auto early = tmp.write("early.log", "step: 1  loss: 4.1  grad_norm: 1.5\n");
  r = run_command(GPARITY_EXE, {"compare", early, late});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("NOTHING COMPARED: the runs share no rank and step"), npos) << r.out;

  // Reference rank<r>.jsonl folders: rank 1 lost its last three steps.
  fs::copy(kCompareRuns + "eager", tmp.path() / "cut", fs::copy_options::recursive);
  auto text = slurp(tmp.path() / "cut" / "rank1.jsonl");
  for (int i = 0; i < 3; ++i) text.resize(text.rfind('\n', text.size() - 2) + 1);
  tmp.write("cut/rank1.jsonl", text);
  r = run_command(GPARITY_EXE, {"compare", (tmp.path() / "cut").string(), (tmp.path() / "cut").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(
      r.out.find("rank 1 stopped after step 3: steps 4-6 missing (other ranks of the run recorded them)"),
      npos)
      << r.out;

  // TensorBoard event files that hold no scalar (a job that died before its first log step).
  gparity::testing::EventFileWriter empty;
  empty.save((tmp.path() / "tb" / "events.out.tfevents.1700000000.node0.11.0").string());
  r = run_command(GPARITY_EXE, {"compare", (tmp.path() / "tb").string(), (tmp.path() / "tb").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("NOTHING COMPARED: neither run recorded a step"), npos) << r.out;
}

TEST(CliEvidence, SharedSamplesKeepTheirVerdicts) {
  const auto samples = gparity::testing::samples_dir();  // ../shared/samples or $GPARITY_SAMPLES
  if (!samples || !fs::exists(fs::path(*samples) / "torch-2.11-fsdp2-2rank"))
    GTEST_SKIP() << "no shared samples";
  const fs::path root(*samples);
  for (const auto* sample : {"torch-2.11-fsdp2-2rank", "torch-2.11-2x2mesh-mp"}) {
    const auto dir = root / sample;
    if (!fs::exists(dir)) continue;
    auto r = run_command(GPARITY_EXE, {"compare", (dir / "eager").string(), (dir / "eager_repeat").string()});
    EXPECT_EQ(r.exit_code, 0) << sample << r.out;
    EXPECT_EQ(r.out.find("incomplete"), npos) << sample << r.out;
    r = run_command(GPARITY_EXE, {"compare", (dir / "eager").string(), (dir / "compile").string()});
    EXPECT_EQ(r.exit_code, 1) << sample << r.out;
  }
}

}  // namespace
