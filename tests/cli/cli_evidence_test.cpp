// Never green on zero evidence, through the real `gparity` binary, command by command: an input
// no reader claims is exit 2 naming the file and the formats tried; an input a reader claims but
// that holds nothing of its kind says so and yields no evidence; zero compared items on either
// side is "NOTHING COMPARED", exit 2; a rank whose input yielded nothing is missing evidence,
// exit 1. Pickles come from Python's pickle module (tests/data/reliability/make_pickles.py); no
// pickle is ever executed.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/file_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using gparity::testing::run_command;
using gparity::testing::TempDir;
constexpr auto npos = std::string::npos;

const std::string kEvidenceData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/";
const std::string kPickles = kEvidenceData + "reliability/";
const std::string kEvidenceGraphs = kEvidenceData + "graph/";
const std::string kEvidenceRuns = std::string(GPARITY_SOURCE_DIR) + "/samples/runs/";
const std::string kCollectiveFormats =
    "formats tried: Flight Recorder JSON dump, Flight Recorder pickle, TORCH_TRACE log";

using gparity::testing::slurp;

/// An empty safetensors file: a valid header ("{}") that holds no tensor.
std::string empty_safetensors(const TempDir& dir, const std::string& name) {
  std::string st(8, '\0');
  st[0] = 2;
  return dir.write(name, st + "{}");
}

/// A gparity graph JSON with no node.
std::string empty_graph(const TempDir& dir, const std::string& name) {
  return dir.write(name, R"({"format": "gparity.graph", "version": 1, "name": "g", "nodes": []})");
}

// ---- gparity collectives --------------------------------------------------------------------

TEST(CliNeverGreenOnNothing, CollectivesOnAPickleThatIsNoDumpIsNothingCompared) {
  const auto path = kPickles + "hello.pkl";
  const auto r = run_command(GPARITY_EXE, {"collectives", path});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("NOTHING COMPARED: " + path +
                       " is a pickle but holds no Flight Recorder entries (it holds a dict with keys "
                       "'hello' and no 'entries')"),
            npos)
      << r.out;
  EXPECT_NE(r.out.find("(tried: Flight Recorder JSON dump, Flight Recorder pickle, TORCH_TRACE log)"), npos)
      << r.out;
  EXPECT_EQ(r.out.find("issues the same sequence"), npos) << r.out;

  const auto list = run_command(GPARITY_EXE, {"collectives", kPickles + "list.pkl"});
  EXPECT_EQ(list.exit_code, 2) << list.out;
  EXPECT_NE(list.out.find("list.pkl is a pickle but holds no Flight Recorder entries (it holds a list"), npos)
      << list.out;

  const auto dump = run_command(GPARITY_EXE, {"collectives", "--json", kPickles + "empty_dump.pkl"});
  EXPECT_EQ(dump.exit_code, 2) << dump.out;
  const auto j = nlohmann::json::parse(dump.out);
  EXPECT_FALSE(j["parity"].get<bool>());
  EXPECT_EQ(j["result"]["evidence"]["run"]["items"], 0);
  EXPECT_EQ(j["result"]["evidence"]["run"]["nothing"],
            kPickles + "empty_dump.pkl is a Flight Recorder dump with no entries");
}

TEST(CliNeverGreenOnNothing, CollectivesOnAnEmptyOrUnknownFileNamesItAndTheFormatsTried) {
  TempDir dir;
  const auto empty = dir.write("empty.bin", "");
  const auto r = run_command(GPARITY_EXE, {"collectives", empty});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(empty + ": empty file (0 bytes); " + kCollectiveFormats), npos) << r.err;
  EXPECT_EQ(r.out.find("issues the same sequence"), npos) << r.out;

  const auto text = dir.write("notes.txt", "hello\n");
  const auto t = run_command(GPARITY_EXE, {"collectives", text});
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(t.err.find(text + ": text (UTF-8 text); " + kCollectiveFormats), npos) << t.err;

  // JSON is the dump reader's, which names what a dump lacks.
  const auto json = dir.write("other.json", R"({"hello": [1, 2, 3]})");
  const auto o = run_command(GPARITY_EXE, {"collectives", json});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(json + ": no \"entries\" array"), npos) << o.err;

  const auto binary = dir.write("data.bin", std::string("\x01\x02\x00\xff", 4));
  const auto b = run_command(GPARITY_EXE, {"collectives", binary});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(
      b.err.find(binary + ": binary data (neither UTF-8 text nor a known header); " + kCollectiveFormats),
      npos)
      << b.err;
}

TEST(CliNeverGreenOnNothing, CollectivesNeverExecutesAPickle) {
  const std::string marker = "/tmp/gparity-reliability-pickle-executed";
  std::filesystem::remove(marker);
  const auto r = run_command(GPARITY_EXE, {"collectives", kPickles + "entries_reduce.pkl"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(kPickles + "entries_reduce.pkl"), npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the pickle's __reduce__ ran";
}

TEST(CliNeverGreenOnNothing, CollectivesRankWhosePickleHoldsNoDumpIsMissingEvidence) {
  TempDir dir;
  const auto rank1 = dir.write("rank1_dump.pkl", slurp(kPickles + "hello.pkl"));
  const auto r =
      run_command(GPARITY_EXE, {"collectives", kEvidenceGraphs + "eager/rank0_flight_recorder.json", rank1});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("incomplete [" + rank1 + ", rank 1]: rank 1 yielded no collectives (" + rank1 +
                       " is a pickle but holds no Flight Recorder entries"),
            npos)
      << r.out;
}

TEST(CliNeverGreenOnNothing, CollectivesVerdictCarriesTheCounts) {
  const auto r = run_command(GPARITY_EXE, {"collectives", "--json", kEvidenceGraphs + "eager"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& ev = j["result"]["evidence"];
  EXPECT_EQ(ev["what"], "collectives");
  EXPECT_GT(ev["run"]["items"].get<int>(), 0);
  EXPECT_EQ(ev["ranks"].size(), 2U);
  EXPECT_EQ(ev["ranks"][0]["items"], ev["ranks"][1]["items"]);
  EXPECT_EQ(j["summary"].back(), ev["summary"]);
  EXPECT_EQ(ev["summary"].get<std::string>().rfind("compared: ", 0), 0U);
}

// ---- gparity compare / gate -----------------------------------------------------------------

TEST(CliNeverGreenOnNothing, CompareRefusesInputsNoReaderClaims) {
  TempDir dir;
  const auto empty = dir.write("empty.log", "");
  const auto r = run_command(GPARITY_EXE, {"compare", empty, empty});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(
      r.err.find(empty + ": not a run: empty file (0 bytes); formats tried: trace v1 folder (manifest.json)"),
      npos)
      << r.err;
  const auto pickle = run_command(GPARITY_EXE, {"compare", kPickles + "hello.pkl", kPickles + "hello.pkl"});
  EXPECT_EQ(pickle.exit_code, 2);
  EXPECT_NE(pickle.err.find("hello.pkl: not a run: pickle (pickle protocol 4); formats tried: "), npos)
      << pickle.err;
}

TEST(CliNeverGreenOnNothing, CompareAndGateOfCheckpointsWithNoTensorAreNothingCompared) {
  TempDir dir;
  const auto a = empty_safetensors(dir, "a.safetensors");
  const auto b = empty_safetensors(dir, "b.safetensors");
  const auto r = run_command(GPARITY_EXE, {"compare", a, b});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("NOTHING COMPARED: neither side yielded any parameters"), npos) << r.out;
  EXPECT_EQ(r.out.find("parity: all 0 parameters"), npos) << r.out;

  const auto out = dir.path() / "reports";
  const auto g = run_command(GPARITY_EXE, {"gate", "--baseline", a, "--candidate", b, "--out", out.string()});
  EXPECT_EQ(g.exit_code, 2) << g.out << g.err;
  const auto json = nlohmann::json::parse(slurp((out / "report.json").string()));
  EXPECT_TRUE(json["result"]["nothing_compared"].get<bool>());
  EXPECT_EQ(json["result"]["evidence"]["baseline"]["items"], 0);
  EXPECT_EQ(json["result"]["evidence"]["candidate"]["nothing"], b + " holds no tensor");
}

TEST(CliNeverGreenOnNothing, CompareParitySaysWhatWasCompared) {
  const auto r =
      run_command(GPARITY_EXE, {"compare", kEvidenceRuns + "eager", kEvidenceRuns + "eager_repeat"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  compared: "), npos) << r.out;
  EXPECT_NE(r.out.find(" parameters on 2 ranks each side\n"), npos) << r.out;
  const auto j = run_command(GPARITY_EXE,
                             {"compare", "--json", kEvidenceRuns + "eager", kEvidenceRuns + "eager_repeat"});
  const auto doc = nlohmann::json::parse(j.out);
  const auto& ev = doc["result"]["evidence"];
  EXPECT_GT(ev["baseline"]["items"].get<int>(), 0);
  EXPECT_EQ(ev["baseline"]["items"], ev["candidate"]["items"]);
  EXPECT_GT(ev["compared"].get<int>(), 0);
  EXPECT_EQ(ev["ranks_without_evidence"], nlohmann::json::array());
}

// ---- gparity buckets ------------------------------------------------------------------------

TEST(CliNeverGreenOnNothing, BucketsOfPlansWithNoMemberAreNothingCompared) {
  TempDir dir;
  const auto meta =
      dir.write("rank0_meta.json", R"({"world": 1, "registration_order": [], "fsdp_buckets": []})");
  const auto r = run_command(GPARITY_EXE, {"buckets", meta, meta});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("NOTHING COMPARED: neither side yielded any bucket members"), npos) << r.out;
  EXPECT_EQ(r.out.find("bucket plans agree"), npos) << r.out;

  const auto pickle = run_command(GPARITY_EXE, {"buckets", kPickles + "hello.pkl", meta});
  EXPECT_EQ(pickle.exit_code, 2);
  EXPECT_NE(pickle.err.find("hello.pkl: pickle (pickle protocol 4); formats tried: gparity trace"), npos)
      << pickle.err;
}

// ---- gparity graph ranks / diff / devices / list ----------------------------------------------

TEST(CliNeverGreenOnNothing, GraphRanksOfATraceWithNoGraphIsNothingCompared) {
  TempDir dir;
  const std::string envelope =
      "V1121 04:51:47.987000 1508 torch/_dynamo/utils.py:2126] {\"chromium_event\": {}, \"rank\": RANK, "
      "\"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 0}\n";
  for (const char* rank : {"0", "1"}) {
    std::string line = envelope;
    line.replace(line.find("RANK"), 4, rank);
    dir.write(std::string("trace/dedicated_log_torch_trace_rank_") + rank + "_x.log", line);
  }
  const auto trace = (dir.path() / "trace").string();
  const auto r = run_command(GPARITY_EXE, {"graph", "ranks", trace});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("NOTHING COMPARED: " + trace + " holds no graph"), npos) << r.out;
  EXPECT_EQ(r.out.find("verdict: identical"), npos) << r.out;
  const auto j = run_command(GPARITY_EXE, {"graph", "ranks", "--json", trace});
  EXPECT_EQ(j.exit_code, 2);
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_TRUE(doc["evidence"]["nothing_compared"].get<bool>());
  EXPECT_EQ(doc["evidence"]["exit_code"], 2);
}

TEST(CliNeverGreenOnNothing, GraphDiffAndDevicesOfGraphsWithNoNodeAreNothingCompared) {
  TempDir dir;
  const auto a = empty_graph(dir, "a.json");
  const auto b = empty_graph(dir, "b.json");
  const auto d = run_command(GPARITY_EXE, {"graph", "diff", a, b});
  EXPECT_EQ(d.exit_code, 2) << d.out << d.err;
  EXPECT_NE(d.out.find("NOTHING COMPARED: neither side yielded any nodes"), npos) << d.out;
  const auto dj = run_command(GPARITY_EXE, {"graph", "diff", "--json", a, b});
  EXPECT_EQ(dj.exit_code, 2);
  EXPECT_EQ(nlohmann::json::parse(dj.out)["evidence"]["baseline"]["items"], 0);

  const auto v = run_command(GPARITY_EXE, {"graph", "devices", a});
  EXPECT_EQ(v.exit_code, 2) << v.out << v.err;
  EXPECT_NE(v.out.find("NOTHING COMPARED: " + a + " holds a graph with no node"), npos) << v.out;
}

TEST(CliNeverGreenOnNothing, GraphCommandsRefuseInputsNoReaderClaims) {
  TempDir dir;
  const auto empty = dir.write("empty.log", "");
  const auto d = run_command(GPARITY_EXE, {"graph", "diff", empty, kPickles + "hello.pkl"});
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.err.find(empty + ": empty file (0 bytes); formats tried: TORCH_TRACE log or folder"), npos)
      << d.err;
  const auto l = run_command(GPARITY_EXE, {"graph", "list", kPickles + "hello.pkl"});
  EXPECT_EQ(l.exit_code, 2);
  EXPECT_NE(l.err.find("hello.pkl: pickle (pickle protocol 4); formats tried: TORCH_TRACE log or folder, "
                       "torch.export .pt2 archive"),
            npos)
      << l.err;
}

}  // namespace
