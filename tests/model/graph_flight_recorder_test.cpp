// Flight Recorder dumps from the samples, checked against counts taken from the JSON itself,
// and malformed dumps.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/flight_recorder.hpp"
#include "core/model/formats/torch_trace.hpp"

namespace {

using namespace gparity::model;

const std::string kFrGraphData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/graph";

TEST(GraphFlightRecorder, SampleDumpIsOneOrderedCollectiveSequence) {
  const std::string path = kFrGraphData + "/compile/rank1_flight_recorder.json";
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

void expect_fr_error(const std::string& text, const std::string& what) {
  try {
    parse_flight_recorder(text, "fr.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), "fr.json");
    EXPECT_NE(e.problem().find(what), std::string::npos) << e.what();
  }
}

TEST(GraphFlightRecorder, MalformedDumpsNameTheEntry) {
  expect_fr_error("[]", "JSON object");
  expect_fr_error("{\"version\": \"2.10\"}", "no \"entries\"");
  expect_fr_error(
      "{\"entries\": [{\"record_id\": 0, \"profiling_name\": \"nccl:all_reduce\", \"input_sizes\": [[1, "
      "\"x\"]]}]}",
      "entries[0]: \"input_sizes\" holds a non-integer");
  expect_fr_error("{\"entries\": [{\"record_id\": 0}, {\"profiling_name\": \"x\"}]}",
                  "entries[0]: missing \"profiling_name\"");
  expect_fr_error("{\"entries\": [], \"pg_config\": {\"0\": {\"ranks\": 5}}}", "pg_config[\"0\"]: ranks");
  expect_fr_error("{\"entries\": [" + std::string(10000, '['), "nested deeper");
  expect_fr_error("{\"entries\": [}", "invalid JSON");
}

}  // namespace

namespace {

// Found by fuzz_flight_recorder: a number that overflows a double made nlohmann throw
// out_of_range instead of parse_error, which escaped as a crash.
TEST(GraphFlightRecorder, NumberOverflowIsAnInputErrorNotACrash) {
  expect_fr_error("{\"entries\": [{\"record_id\": 17952E6636819044315}]}", "number overflow");
}

TEST(GraphFlightRecorder, EnvelopeNumberOverflowIsReportedByTheTraceReader) {
  // The same input in a TORCH_TRACE envelope is damage, not an exception (fuzz_torch_trace).
  const auto t =
      gparity::model::parse_torch_trace("V1121 04:50:33.123000 9 a.py:1] {\"x\": 587194e751}\n", "o.log");
  ASSERT_EQ(t.problems.size(), 1U);
  EXPECT_NE(t.problems[0].problem.find("number overflow"), std::string::npos) << t.problems[0].text();
}

}  // namespace

namespace {

/// `text` with one more top-level member that only the DOM reader takes (Python's NaN): the
/// same dump, read by the DOM reader instead of the fast one.
std::string dom_only(const std::string& text) {
  const auto brace = text.rfind('}');
  return text.substr(0, brace) + ", \"nan_field\": NaN}";
}

void expect_same_dump(const FlightRecorderDump& fast, const FlightRecorderDump& dom) {
  EXPECT_EQ(fast.version, dom.version);
  EXPECT_EQ(fast.comm_lib_version, dom.comm_lib_version);
  ASSERT_EQ(fast.groups.size(), dom.groups.size());
  for (std::size_t g = 0; g < dom.groups.size(); ++g) {
    EXPECT_EQ(fast.groups[g].id, dom.groups[g].id);
    EXPECT_EQ(fast.groups[g].name, dom.groups[g].name);
    EXPECT_EQ(fast.groups[g].desc, dom.groups[g].desc);
    EXPECT_EQ(fast.groups[g].ranks, dom.groups[g].ranks);
  }
  ASSERT_EQ(fast.entries.size(), dom.entries.size());
  for (std::size_t i = 0; i < dom.entries.size(); ++i) {
    const auto& a = fast.entries[i];
    const auto& b = dom.entries[i];
    SCOPED_TRACE("entry " + std::to_string(i));
    EXPECT_EQ(a.record_id, b.record_id);
    EXPECT_EQ(a.pg_id, b.pg_id);
    EXPECT_EQ(a.pg_name, b.pg_name);
    EXPECT_EQ(a.pg_desc, b.pg_desc);
    EXPECT_EQ(a.collective_seq_id, b.collective_seq_id);
    EXPECT_EQ(a.p2p_seq_id, b.p2p_seq_id);
    EXPECT_EQ(a.op_id, b.op_id);
    EXPECT_EQ(a.is_p2p, b.is_p2p);
    EXPECT_EQ(a.profiling_name, b.profiling_name);
    EXPECT_EQ(a.input_sizes, b.input_sizes);
    EXPECT_EQ(a.output_sizes, b.output_sizes);
    EXPECT_EQ(a.input_dtypes, b.input_dtypes);
    EXPECT_EQ(a.output_dtypes, b.output_dtypes);
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.retired, b.retired);
    EXPECT_EQ(a.time_created_ns, b.time_created_ns);
    ASSERT_EQ(a.frames.size(), b.frames.size());
    for (std::size_t f = 0; f < a.frames.size(); ++f) {
      EXPECT_EQ(a.frames[f].name, b.frames[f].name);
      EXPECT_EQ(a.frames[f].filename, b.frames[f].filename);
      EXPECT_EQ(a.frames[f].line, b.frames[f].line);
    }
  }
}

}  // namespace

// Large dumps are read by a fast reader that walks the text once; whatever it accepts must read
// exactly as the DOM reader reads it (escapes, UTF-8, nulls, duplicate keys, ignored members).
TEST(GraphFlightRecorder, FastReaderReadsWhatTheDomReaderReads) {
  const std::string sample = kFrGraphData + "/compile/rank1_flight_recorder.json";
  std::ifstream f(sample);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string tricky = R"({"version": "2.\u0037", "comm_lib_version": "2.21.5",
    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}, "1": {"name": "1", "desc": "tp", "ranks": [0, 1]}},
    "pg_status": {"0": {"last_enqueued_collective": 3, "nested": [[1.5e3, -0.25, true, null, {"a": "b"}]]}},
    "entries": [
      {"record_id": 0, "pg_id": null, "process_group": ["0", "default_pg", 7, {"x": 1}], "collective_seq_id": 1,
       "p2p_seq_id": null, "op_id": -3, "profiling_name": "nccl:all_reduce", "time_created_ns": 1700000000000000000,
       "duration_ms": 0.25, "input_sizes": [[1024, 2], []], "input_dtypes": ["Float", "BFloat16"],
       "output_sizes": [[1024, 2]], "output_dtypes": ["Float"], "state": "completed", "retired": "yes",
       "timeout_ms": 600000, "is_p2p": false,
       "frames": [{"name": "fwd \"q\" \\ caf\u00e9", "filename": "/a/b\/c.py", "line": 12, "extra": [1, 2]},
                  {"name": "défaut", "filename": "x.py", "line": null}, {}]},
      {"record_id": 1, "record_id": 2, "process_group": ["1"], "collective_seq_id": 2, "profiling_name": "nccl:send 0->1",
       "is_p2p": true, "retired": true, "retired": false, "state": "started", "input_sizes": [[4]], "input_sizes": [[8]],
       "frames": []},
      {"record_id": 3, "profiling_name": "nccl:all_gather", "retired": true, "retired": 1}
    ]}
  )";
  for (const auto& [name, dump] : {std::pair{"sample", text}, std::pair{"tricky", tricky}}) {
    SCOPED_TRACE(name);
    const auto fast = parse_flight_recorder(dump, "rank1_flight_recorder.json");
    const auto dom = parse_flight_recorder(dom_only(dump), "rank1_flight_recorder.json");
    expect_same_dump(fast, dom);
    EXPECT_FALSE(fast.entries.empty());
  }
  const auto t = parse_flight_recorder(tricky, "rank1_flight_recorder.json");
  EXPECT_EQ(t.version, "2.7");
  EXPECT_EQ(t.entries[0].frames[0].name, "fwd \"q\" \\ caf\u00e9");
  EXPECT_EQ(t.entries[1].record_id, 2);
  EXPECT_FALSE(t.entries[1].retired);
  EXPECT_EQ(t.entries[1].input_sizes, (std::vector<std::vector<std::int64_t>>{{8}}));
}

// What the fast reader gives up on still gets the DOM reader's message, naming the entry.
TEST(GraphFlightRecorder, FastReaderLeavesErrorsToTheDomReader) {
  const std::string head =
      R"({"version": "2.7", "entries": [{"record_id": 0, "profiling_name": "nccl:all_reduce"}, )";
  expect_fr_error(head + R"({"record_id": 1.5, "profiling_name": "x"}]})",
                  "entries[1]: \"record_id\" is not an integer");
  expect_fr_error(head + R"({"record_id": 1, "profiling_name": "x", "is_p2p": null}]})",
                  "entries[1]: \"is_p2p\" is not a boolean");
  expect_fr_error(head + R"({"record_id": 1, "profiling_name": "x", "input_sizes": [[1, "2"]]}]})",
                  "entries[1]: \"input_sizes\" holds a non-integer size");
  expect_fr_error(head + R"({"record_id": 1, "profiling_name": "x", "process_group": []}]})",
                  "entries[1]: \"process_group\" is not [name, desc]");
  expect_fr_error(head + R"({"record_id": 1}]})", "entries[1]: missing \"profiling_name\"");
  expect_fr_error(head + R"({"record_id": 1, "profiling_name": "x", "frames": [3]}]})",
                  "entries[1]: a frame is not an object");
  expect_fr_error(head + R"({"record_id": 1, "profiling_name": "x"}] )",
                  "");  // truncated: the JSON parser's message
}
