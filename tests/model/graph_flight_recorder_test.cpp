// Flight Recorder dumps from the samples, checked against counts taken from the JSON itself,
// and malformed dumps.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/flight_recorder.hpp"
#include "core/model/formats/torch_trace.hpp"

namespace {

using namespace gparity::model;

const std::string kData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph";

TEST(GraphFlightRecorder, SampleDumpIsOneOrderedCollectiveSequence) {
  const std::string path = kData + "/compile/rank1_flight_recorder.json";
  const auto d = read_flight_recorder(path);
  std::ifstream f(path);
  const auto raw = nlohmann::json::parse(f);
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.version, raw["version"]);
  EXPECT_EQ(d.comm_lib_version, "2.28.9");
  ASSERT_EQ(d.groups.size(), 1U);
  EXPECT_EQ(d.groups[0].desc, "default_pg");
  EXPECT_EQ(d.groups[0].ranks, (std::vector<std::int64_t>{0, 1}));
  ASSERT_EQ(d.entries.size(), raw["entries"].size());
  std::map<std::string, int> expected, got;
  for (const auto& e : raw["entries"]) ++expected[e["profiling_name"].get<std::string>()];
  for (const auto& e : d.entries) ++got[e.profiling_name];
  EXPECT_EQ(got, expected);
  const auto seq = d.sequence("0");
  ASSERT_EQ(seq.size(), d.entries.size());
  for (std::size_t i = 1; i < seq.size(); ++i)
    EXPECT_LT(seq[i - 1]->collective_seq_id, seq[i]->collective_seq_id);
  const auto& first = *seq.front();
  EXPECT_EQ(first.op(), raw["entries"][0]["profiling_name"].get<std::string>().substr(5));
  EXPECT_EQ(first.input_sizes,
            raw["entries"][0]["input_sizes"].get<std::vector<std::vector<std::int64_t>>>());
  EXPECT_EQ(first.output_dtypes, std::vector<std::string>{"Float"});
  EXPECT_EQ(first.state, "completed");
}

void expect_error(const std::string& text, const std::string& what) {
  try {
    parse_flight_recorder(text, "fr.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), "fr.json");
    EXPECT_NE(e.problem().find(what), std::string::npos) << e.what();
  }
}

TEST(GraphFlightRecorder, MalformedDumpsNameTheEntry) {
  expect_error("[]", "JSON object");
  expect_error("{\"version\": \"2.10\"}", "no \"entries\"");
  expect_error(
      "{\"entries\": [{\"record_id\": 0, \"profiling_name\": \"nccl:all_reduce\", \"input_sizes\": [[1, "
      "\"x\"]]}]}",
      "entries[0]: \"input_sizes\" holds a non-integer");
  expect_error("{\"entries\": [{\"record_id\": 0}, {\"profiling_name\": \"x\"}]}",
               "entries[0]: missing \"profiling_name\"");
  expect_error("{\"entries\": [], \"pg_config\": {\"0\": {\"ranks\": 5}}}", "pg_config[\"0\"]: ranks");
  expect_error("{\"entries\": [" + std::string(10000, '['), "nested deeper");
  expect_error("{\"entries\": [}", "invalid JSON");
}

}  // namespace

namespace {

// Found by fuzz_flight_recorder: a number that overflows a double made nlohmann throw
// out_of_range instead of parse_error, which escaped as a crash.
TEST(GraphFlightRecorder, NumberOverflowIsAnInputErrorNotACrash) {
  expect_error("{\"entries\": [{\"record_id\": 17952E6636819044315}]}", "number overflow");
}

TEST(GraphFlightRecorder, EnvelopeNumberOverflowIsReportedByTheTraceReader) {
  // The same input in a TORCH_TRACE envelope is damage, not an exception (fuzz_torch_trace).
  const auto t =
      gparity::model::parse_torch_trace("V1121 04:50:33.123000 9 a.py:1] {\"x\": 587194e751}\n", "o.log");
  ASSERT_EQ(t.problems.size(), 1U);
  EXPECT_NE(t.problems[0].problem.find("number overflow"), std::string::npos) << t.problems[0].text();
}

}  // namespace
