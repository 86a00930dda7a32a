#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <variant>

#include "core/model/base/input_error.hpp"
#include "core/model/base/json_input.hpp"
#include "core/model/base/mapped_file.hpp"
#include "core/model/run/trace_reader.hpp"
#include "core/model/run/trace_writer.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::model;
using gparity::testing::TempDir;

ParamsRecord two_params() {
  ParamsRecord p;
  p.params.push_back(
      {"tok.weight", DType::F32, {512, 96}, {256, 0}, {256, 96}, {{Placement::Kind::Shard, 0}}, true});
  p.params.push_back(
      {"norm.weight", DType::BF16, {96}, {0}, {96}, {{Placement::Kind::Replicate, -1}}, false});
  return p;
}

StepRecord step(std::int64_t n, float loss) {
  StepRecord s;
  s.step = n;
  s.loss = TraceScalar::from_f32(loss);
  s.grad_norm = TraceScalar::from_f64(0.5 + static_cast<double>(n));
  s.scalars.push_back({"lr", TraceScalar::from_f32(1e-3F)});
  s.hashes.push_back({"param.xxh3", {0x0123456789abcdefULL + static_cast<std::uint64_t>(n), ~0ULL}});
  s.hashes.push_back({"param.shard", {static_cast<std::uint64_t>(n), 0}});
  return s;
}

using gparity::testing::slurp;

TEST(Trace, HashArraysRoundTripThroughBase64) {
  for (std::size_t n : {0U, 1U, 2U, 3U, 1000U}) {
    std::vector<std::uint64_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 0x9E3779B97F4A7C15ULL * (i + 1);
    const auto text = encode_hash_array(v);
    EXPECT_EQ(text.size(), (n * 8 + 2) / 3 * 4);
    EXPECT_EQ(decode_hash_array(text), v);
  }
  // 8 zero bytes are "AAAAAAAAAAA=" in any base64 implementation.
  EXPECT_EQ(encode_hash_array(std::vector<std::uint64_t>{0}), "AAAAAAAAAAA=");
  EXPECT_FALSE(decode_hash_array("AAAA"));          // 3 bytes, not a multiple of 8
  EXPECT_FALSE(decode_hash_array("AAAAAAAAAA!="));  // not base64
  EXPECT_FALSE(decode_hash_array("AAAAAAAAAAA"));   // bad length
}

TEST(Trace, WriterAndReaderRoundTripEveryRecordType) {
  TempDir tmp;
  RunManifest m;
  m.run_id = "r1";
  m.world_size = 2;
  m.mesh_shape = {2};
  m.mesh_dim_names = {"dp"};
  m.ranks = {{0, 0, "h", "cuda:0"}, {1, 1, "h", "cuda:1"}};
  m.framework_versions = {{"torch", "2.11.0"}};
  write_manifest(tmp.path(), m);
  const auto mj = parse_json(slurp(manifest_path(tmp.path()).string()), "manifest");
  const auto back = manifest_from_json(mj, "manifest");
  EXPECT_EQ(back.world_size, 2);
  EXPECT_EQ(back.ranks, m.ranks);
  EXPECT_EQ(back.mesh_dim_names, m.mesh_dim_names);

  {
    TraceWriter w(tmp.path(), 1);
    w.write_params(two_params());
    w.write_params(two_params());  // unchanged: not written again
    w.write_step(step(1, 6.5F));
    BucketsRecord b;
    b.groups.push_back(
        {"dp", {{"reduce_scatter", DType::F32, {{"tok.weight", 0, 98304}, {"norm.weight", 98304, 192}}}}});
    w.write_buckets(b);
    w.write_devices({{{"tok.weight", "param", "cuda:1"}}, nlohmann::json::object()});
    w.write_graph({"graphs/fwd.txt", "aot_forward_graph", "0/0", "abc", nlohmann::json::object()});
    w.write_event({"warning", 1, "recompiled", {{"reason", "shape"}}});
    w.write_step(step(2, 6.25F));
    EXPECT_EQ(w.lines_written(), 7);
  }
  const auto t = read_rank_trace(rank_trace_path(tmp.path(), 1).string(), 1);
  EXPECT_TRUE(t.issues.empty());
  ASSERT_EQ(t.params_tables.size(), 1U);
  EXPECT_EQ(t.params_tables[0].params, two_params().params);
  ASSERT_EQ(t.steps.size(), 2U);
  const auto expected = step(2, 6.25F);
  EXPECT_EQ(t.steps[1].loss, expected.loss);
  EXPECT_EQ(t.steps[1].grad_norm, expected.grad_norm);
  EXPECT_EQ(t.steps[1].scalars, expected.scalars);
  EXPECT_EQ(t.steps[1].hashes, expected.hashes);
  EXPECT_EQ(t.step_table, (std::vector<std::size_t>{0, 0}));
  ASSERT_EQ(t.buckets.size(), 1U);
  EXPECT_EQ(t.buckets[0].groups[0].buckets[0].members[1].offset_bytes, 98304);
  ASSERT_EQ(t.devices.size(), 1U);
  EXPECT_EQ(t.devices[0].entries[0].device, "cuda:1");
  ASSERT_EQ(t.graphs.size(), 1U);
  EXPECT_EQ(t.graphs[0].compile_id, "0/0");
  ASSERT_EQ(t.events.size(), 1U);
  EXPECT_EQ(t.events[0].data["reason"], "shape");
}

TEST(Trace, IntegerFieldsRejectFloatsAndOutOfRangeNumbers) {
  // Found by fuzz_trace_jsonl: a bucket member's offset of 2e88 was converted to an int64 (undefined
  // behaviour); 1.5 and 2^63 are not int64 offsets either, nor 1e30 a shape. Each is a
  // corrupt line naming the field, never a number made up.
  const auto bucket = [](const std::string& offset) {
    return R"({"type":"buckets","step":1,"bucket_names":["b"],"groups":[{"group":"dp","buckets":[{"collective":)"
           R"("reduce_scatter","dtype":"float32","members":[{"fqn":"w","offset":)" +
           offset + R"(,"size":4}]}]}]})";
  };
  EXPECT_NO_THROW((void)parse_trace_line(bucket("8"), "rank0.jsonl", 3));
  for (const std::string bad :
       {"2.0544e88", "1.5", "-1e300", "9223372036854775808", "18446744073709551615"}) {
    try {
      (void)parse_trace_line(bucket(bad), "rank0.jsonl", 3);
      ADD_FAILURE() << "offset " << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("\"offset\" is not an integer in range"), std::string::npos)
          << e.what();
      EXPECT_EQ(e.line(), 3);
    }
  }
  const auto node = [](const std::string& shape) {
    return R"({"type":"node","graph":"g","node":"n","dtype":"float32","shape":)" + shape +
           R"(,"shard":"0123456789abcdef"})";
  };
  EXPECT_NO_THROW((void)parse_trace_line(node("[2,3]"), "rank0.jsonl", 1));
  try {
    (void)parse_trace_line(node("[2,1e30]"), "rank0.jsonl", 1);
    ADD_FAILURE() << "a shape of 1e30 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"shape\" is not an integer in range"), std::string::npos)
        << e.what();
  }
}

TEST(Trace, NodeRecordsSayWhichHashesTheyCarryAndWhereAViewLies) {
  // Issue 24: a shard-only record, a record with both hashes, and a view (no hash, its base).
  NodeRecord shard_only;
  shard_only.graph = "g";
  shard_only.node = "mm";
  shard_only.shape = {4, 6};
  shard_only.shard = 0x0123456789abcdefULL;
  shard_only.has_xxh3 = false;
  NodeRecord both = shard_only;
  both.has_xxh3 = true;
  both.xxh3 = 42;
  NodeRecord view = shard_only;
  view.node = "t";
  view.has_shard = false;
  view.shard = 0;
  view.view = NodeView{"mm", 0, 6, {1, 6}, {6, 1}};
  for (const auto& r : {shard_only, both, view}) {
    const auto line = to_json(r).dump();
    EXPECT_EQ(line.find("\"xxh3\"") != std::string::npos, r.has_xxh3) << line;
    EXPECT_EQ(line.find("\"shard\"") != std::string::npos, r.has_shard) << line;
    const auto back = std::get<NodeRecord>(parse_trace_line(line, "rank0.jsonl", 1));
    EXPECT_EQ(back.has_xxh3, r.has_xxh3) << line;
    EXPECT_EQ(back.has_shard, r.has_shard) << line;
    EXPECT_EQ(back.xxh3, r.xxh3) << line;
    EXPECT_EQ(back.shard, r.shard) << line;
    EXPECT_EQ(back.view, r.view) << line;
    EXPECT_TRUE(back.extra.empty()) << line;
  }
  // Older runs wrote `"view": true` and a zero shard: a view naming no base.
  const auto old = std::get<NodeRecord>(parse_trace_line(
      R"({"type":"node","graph":"g","node":"t","dtype":"float32","shape":[6,4],"shard":"0000000000000000","view":true})",
      "rank0.jsonl", 1));
  ASSERT_TRUE(old.view);
  EXPECT_TRUE(old.view->base.empty());
  EXPECT_FALSE(old.has_shard);
  // A record with neither a hash nor a view, or a view that is not an object, is bad input.
  for (const char* bad :
       {R"({"type":"node","graph":"g","node":"n","dtype":"float32","shape":[2]})",
        R"({"type":"node","graph":"g","node":"n","dtype":"float32","shape":[2],"view":"mm"})",
        R"({"type":"node","graph":"g","node":"n","dtype":"float32","shape":[2],"view":{"offset":1}})"}) {
    EXPECT_THROW((void)parse_trace_line(bad, "rank0.jsonl", 7), InputError) << bad;
  }
}

TEST(Trace, LossesKeepTheirBitsIncludingNanAndSignedZero) {
  TempDir tmp;
  const float nan_payload = std::bit_cast<float>(0x7fc00123U);
  {
    TraceWriter w(tmp.path(), 0);
    w.write_step(step(1, nan_payload));
    w.write_step(step(2, -0.0F));
    w.write_step(step(3, 0.0F));
    w.write_step(step(4, std::numeric_limits<float>::infinity()));
  }
  const auto t = read_rank_trace(rank_trace_path(tmp.path(), 0).string(), 0);
  ASSERT_EQ(t.steps.size(), 4U);
  EXPECT_EQ(t.steps[0].loss->bits, 0x7fc00123U);
  EXPECT_TRUE(std::isnan(t.steps[0].loss->value));
  EXPECT_EQ(t.steps[1].loss->bits, 0x80000000U);
  EXPECT_TRUE(std::signbit(t.steps[1].loss->value));
  EXPECT_EQ(t.steps[2].loss->bits, 0U);
  EXPECT_EQ(t.steps[3].loss->bits, 0x7f800000U);
}

TEST(Trace, TruncatedLastLineIsReportedAndEarlierLinesUsed) {
  TempDir tmp;
  {
    TraceWriter w(tmp.path(), 0);
    w.write_params(two_params());
    w.write_step(step(1, 1.0F));
    w.write_step(step(2, 2.0F));
  }
  const auto path = rank_trace_path(tmp.path(), 0).string();
  std::string text = slurp(path);
  text.resize(text.size() - 30);  // cut into the last step line
  tmp.write("rank-0.jsonl", text);
  const auto t = read_rank_trace(path, 0);
  ASSERT_EQ(t.steps.size(), 1U);
  EXPECT_EQ(t.steps[0].step, 1);
  ASSERT_EQ(t.issues.size(), 1U);
  EXPECT_EQ(t.issues[0].kind, TraceIssue::Kind::TruncatedTail);
  EXPECT_EQ(t.issues[0].line, 3);
  EXPECT_NE(t.issues[0].text().find("rank-0.jsonl:3: truncated"), std::string::npos) << t.issues[0].text();
}

TEST(Trace, CorruptLineInTheMiddleIsReportedWithItsLineAndTheRestIsRead) {
  TempDir tmp;
  {
    TraceWriter w(tmp.path(), 0);
    w.write_params(two_params());
    w.write_step(step(1, 1.0F));
    w.write_step(step(2, 2.0F));
    w.write_step(step(3, 3.0F));
  }
  const auto path = rank_trace_path(tmp.path(), 0).string();
  std::string text = slurp(path);
  // Corrupt line 3 (step 2): damage a base64 character of its hash array.
  std::size_t start = 0;
  for (int i = 0; i < 2; ++i) start = text.find('\n', start) + 1;
  const auto h = text.find("\"param.xxh3\":\"", start) + 15;
  text[h] = '*';
  tmp.write("rank-0.jsonl", text);
  const auto t = read_rank_trace(path, 0);
  ASSERT_EQ(t.steps.size(), 2U);
  EXPECT_EQ(t.steps[0].step, 1);
  EXPECT_EQ(t.steps[1].step, 3);
  ASSERT_EQ(t.issues.size(), 1U);
  EXPECT_EQ(t.issues[0].kind, TraceIssue::Kind::CorruptLine);
  EXPECT_EQ(t.issues[0].line, 3);
  EXPECT_NE(t.issues[0].problem.find("param.xxh3"), std::string::npos) << t.issues[0].problem;

  // Invalid JSON is reported too, by the JSON parser's own message.
  tmp.write(
      "rank-0.jsonl",
      "{\"type\":\"step\",\"step\":1}\n{\"type\": \"step\", \"step\": }\n{\"type\":\"step\",\"step\":3}\n");
  const auto t2 = read_rank_trace(path, 0);
  EXPECT_EQ(t2.steps.size(), 2U);
  ASSERT_EQ(t2.issues.size(), 1U);
  EXPECT_EQ(t2.issues[0].line, 2);
}

TEST(Trace, HashArraysMustMatchTheParamsTable) {
  TempDir tmp;
  {
    TraceWriter w(tmp.path(), 0);
    w.write_params(two_params());
    auto s = step(1, 1.0F);
    s.hashes[0].values.push_back(7);  // three values for two params
    w.write_step(s);
  }
  const auto t = read_rank_trace(rank_trace_path(tmp.path(), 0).string(), 0);
  EXPECT_TRUE(t.steps.empty());
  ASSERT_EQ(t.issues.size(), 1U);
  EXPECT_NE(t.issues[0].problem.find("has 3 values but the params table has 2"), std::string::npos);
}

TEST(Trace, ShardSpecIsWrittenOnlyForV2AndReadBack) {
  // docs/trace-format.md: "shard_spec" on step and node records, absent = 1; others are bad input.
  TempDir tmp;
  {
    TraceWriter w(tmp.path(), 0);
    w.write_params(two_params());
    w.write_step(step(1, 1.0F));
    auto s = step(2, 2.0F);
    s.shard_spec = 2;
    w.write_step(s);
  }
  const auto path = rank_trace_path(tmp.path(), 0).string();
  const std::string text = slurp(path);
  EXPECT_EQ(text.find("shard_spec"), text.rfind("shard_spec")) << "only the v2 step names its spec";
  const auto t = read_rank_trace(path, 0);
  ASSERT_EQ(t.steps.size(), 2U);
  EXPECT_EQ(t.steps[0].shard_spec, 1);
  EXPECT_EQ(t.steps[1].shard_spec, 2);
  EXPECT_FALSE(t.steps[1].extra.contains("shard_spec"));

  NodeRecord n;
  n.graph = "a";
  n.node = "mm";
  n.shape = {2, 2};
  n.shard = 42;
  n.shard_spec = 2;
  const auto j = to_json(n);
  EXPECT_EQ(j.at("shard_spec"), 2);
  EXPECT_EQ(node_from_json(j, "x.jsonl", 1).shard_spec, 2);
  n.shard_spec = 1;
  EXPECT_FALSE(to_json(n).contains("shard_spec"));
  EXPECT_EQ(node_from_json(to_json(n), "x.jsonl", 1).shard_spec, 1);

  for (const char* bad : {"3", "0", "\"v2\"", "2.0"}) {
    tmp.write("rank-0.jsonl", std::string("{\"type\":\"step\",\"step\":1,\"shard_spec\":") + bad + "}\n");
    const auto t2 = read_rank_trace(path, 0);
    EXPECT_TRUE(t2.steps.empty()) << bad;
    ASSERT_EQ(t2.issues.size(), 1U) << bad;
    EXPECT_EQ(t2.issues[0].line, 1);
    EXPECT_NE(t2.issues[0].problem.find("shard_spec"), std::string::npos) << t2.issues[0].problem;
  }
}

TEST(Trace, UnknownFieldsAndRecordTypesAreKept) {
  TempDir tmp;
  const auto path = tmp.write("rank-0.jsonl",
                              "{\"type\":\"step\",\"step\":4,\"tokens\":123,\"hashes\":{}}\n"
                              "{\"type\":\"memory\",\"bytes\":77}\n"
                              "{\"step\":5,\"type\":\"step\",\"future\":{\"a\":[1,2]}}\n");
  const auto t = read_rank_trace(path, 0);
  ASSERT_TRUE(t.issues.empty()) << t.issues[0].text();
  ASSERT_EQ(t.steps.size(), 2U);
  EXPECT_EQ(t.steps[0].extra["tokens"], 123);
  EXPECT_EQ(t.steps[1].extra["future"]["a"][1], 2);
  ASSERT_EQ(t.unknown.size(), 1U);
  EXPECT_EQ(t.unknown[0].type, "memory");
  EXPECT_EQ(t.unknown[0].json["bytes"], 77);
}

TEST(Trace, ManifestSchemaVersionIsChecked) {
  const auto j = nlohmann::json{{"schema_version", 2}, {"world_size", 1}};
  try {
    manifest_from_json(j, "m.json");
    FAIL() << "schema 2 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("schema_version 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(manifest_from_json(nlohmann::json{{"world_size", 1}}, "m.json"), InputError);
}

TEST(Trace, ScalarBitsDecodeInTheirDtype) {
  const auto bf = scalar_from_json({{"value", 1.0}, {"bits", "3f80"}, {"dtype", "bfloat16"}}, "s", 1);
  EXPECT_EQ(bf.value, 1.0);
  const auto h = scalar_from_json({{"value", 1.0}, {"bits", "3c00"}, {"dtype", "float16"}}, "s", 1);
  EXPECT_EQ(h.value, 1.0);
  EXPECT_THROW(scalar_from_json({{"bits", "3f8000000"}, {"dtype", "float32"}}, "s", 1), InputError);
  EXPECT_THROW(scalar_from_json({{"bits", "zz"}, {"dtype", "float32"}}, "s", 1), InputError);
}

}  // namespace

namespace {

// A trace written by Python's json (a shim, a script) spells a non-finite value NaN / Infinity:
// the line is read, and the bits say which value it was.
TEST(Trace, PythonNanAndInfinityLiteralsReadAsNullValuesWithTheirBits) {
  TempDir tmp;
  const auto path = tmp.write(
      "rank-0.jsonl",
      R"({"type": "step", "step": 1, "loss": {"value": NaN, "bits": "7fc00000", "dtype": "float32"}, )"
      R"("grad_norm": {"value": Infinity, "bits": "7f800000", "dtype": "float32"}})"
      "\n");
  const auto t = read_rank_trace(path, 0);
  EXPECT_TRUE(t.issues.empty()) << (t.issues.empty() ? "" : t.issues.front().text());
  ASSERT_EQ(t.steps.size(), 1U);
  EXPECT_EQ(t.steps[0].loss->bits, 0x7fc00000U);
  EXPECT_TRUE(std::isnan(t.steps[0].loss->value));
  EXPECT_EQ(t.steps[0].grad_norm->bits, 0x7f800000U);
}

// One line of 10^6 nested arrays costs that line: it is reported with its line number and the
// lines around it are read.
TEST(Trace, MillionDeepLineIsOneCorruptLine) {
  TempDir tmp;
  const auto good =
      R"({"type": "step", "step": 1, "loss": {"value": 1.0, "bits": "3f800000", "dtype": "float32"}})";
  const auto path = tmp.write("rank-0.jsonl", std::string(good) + "\n" + std::string(1000000, '[') +
                                                  std::string(1000000, ']') + "\n" + good + "\n");
  const auto t = read_rank_trace(path, 0);
  EXPECT_EQ(t.steps.size(), 2U);
  ASSERT_EQ(t.issues.size(), 1U);
  EXPECT_EQ(t.issues[0].line, 2);
  EXPECT_NE(t.issues[0].problem.find("nested deeper than"), std::string::npos) << t.issues[0].text();
}

}  // namespace
