// The op-record reader (core/model/ops/op_records.hpp) on records written the way
// python/gparity/op_recorder.py writes them (trace v1 "type":"op" lines), and the run detection
// that sends a trace directory of op records to the op comparison.

#include "core/model/ops/op_records.hpp"

#include <gtest/gtest.h>

#include "core/model/ops/op_run.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::model::ops {
namespace {

constexpr std::string_view kGelu =
    R"({"type":"op","step":1,"index":0,"op":"aten::gelu","phase":"forward","module":"layers.0.mlp",)"
    R"("source":{"file":"/w/train.py","line":37,"function":"forward","code":"h = F.gelu"},)"
    R"("args":[{"id":3,"dtype":"float32","shape":[4,16],"xxh3":"00000000000000ff","shard":"0000000000000001"}],)"
    R"("outs":[{"id":4,"dtype":"float32","shape":[4,16],"xxh3":"ffffffffffffffff","shard":"8000000000000000"}]})"
    "\n";
constexpr std::string_view kMul =
    R"({"type":"op","step":1,"index":1,"op":"aten::mul.Tensor","phase":"forward","args":[{"id":4,"dtype":"float32","shape":[4,16]}],)"
    R"("outs":[{"id":5,"dtype":"float32","shape":[4,16],"xxh3":"0000000000000002","shard":"0000000000000003"}]})"
    "\n";
constexpr std::string_view kAllReduce =
    R"({"type":"op","step":2,"index":0,"op":"c10d::allreduce_","phase":"optimizer","args":[{"id":5,"dtype":"float32","shape":[4,16]}],)"
    R"("outs":[{"id":5,"dtype":"float32","shape":[4,16]}],"collective":true,"group":"default","async":true})"
    "\n";

TEST(OpRecords, RecordsCarryOpsTensorsHashesSourcesModulesAndPhases) {
  const std::string text = std::string(kGelu) + std::string(kMul) + std::string(kAllReduce);
  const OpLog log = parse_op_records(text, "rank-1.jsonl", 1);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  EXPECT_EQ(log.format, "gparity op records");
  EXPECT_EQ(log.rank, 1);
  EXPECT_EQ(log.hash_spec.functions, (std::vector<std::string>{"xxh3", "shard"}));
  ASSERT_EQ(log.records.size(), 3u);
  EXPECT_EQ(log.steps, (std::vector<std::int64_t>{1, 2}));
  const OpRecord& gelu = log.records[0];
  EXPECT_EQ(log.op_name(gelu), "aten::gelu");
  EXPECT_EQ(log.str(gelu.module), "layers.0.mlp");
  EXPECT_EQ(log.source_text(gelu), "/w/train.py:37");
  EXPECT_EQ(gelu.phase, Phase::Forward);
  EXPECT_TRUE(gelu.has_input_hashes);
  ASSERT_EQ(gelu.out_count, 1u);
  const TensorRef& out = log.out(gelu, 0);
  EXPECT_EQ(out.id, 4);
  EXPECT_EQ(out.numel, 64);
  EXPECT_EQ(log.tensor_text(out), "float32[4, 16]");
  ASSERT_EQ(out.hash_count, 2);
  EXPECT_EQ(log.hash(out, 0).bits, 0xffffffffffffffffull);  // all 64 bits kept
  EXPECT_EQ(log.hash(out, 1).bits, 0x8000000000000000ull);
  // An input that is an earlier output carries no hash: its producer's says what it holds.
  EXPECT_FALSE(log.arg(log.records[1], 0).hashed());
  EXPECT_EQ(log.arg(log.records[1], 0).id, 4);
  const OpRecord& ar = log.records[2];
  EXPECT_TRUE(ar.output_hash_unreliable);
  EXPECT_EQ(ar.phase, Phase::Optimizer);
  EXPECT_EQ(ar.step, 2);
  EXPECT_EQ(ar.index, 0u);
}

TEST(OpRecords, ShardOnlyRunsAreOneFunction) {
  const std::string line =
      R"({"type":"op","step":1,"op":"aten::relu","args":[],"outs":[{"id":0,"dtype":"bfloat16","shape":[2],"shard":"00000000000000aa"}]})"
      "\n";
  const OpLog log = parse_op_records(line, "r", 0);
  ASSERT_EQ(log.hash_spec.functions, (std::vector<std::string>{"shard"}));
  const TensorRef& t = log.out(log.records[0], 0);
  ASSERT_EQ(t.hash_count, 1);
  EXPECT_EQ(log.hash(t, 0).bits, 0xaau);
}

TEST(OpRecords, ShardSpecTwoIsAnotherFunctionAndOneLogHasOneSpec) {
  const auto relu = [](std::string_view spec, std::string_view hash) {
    return std::string(R"({"type":"op","step":1,"op":"aten::relu",)") + std::string(spec) +
           R"("args":[],"outs":[{"id":0,"dtype":"bfloat16","shape":[2],"shard":")" + std::string(hash) +
           "\"}]}\n";
  };
  // Spec v2's hashes are another function's: named apart, so never compared with v1's.
  const OpLog v2 = parse_op_records(relu(R"("shard_spec":2,)", "00000000000000aa"), "r", 0);
  ASSERT_TRUE(v2.issues.empty()) << v2.issues.front().problem;
  EXPECT_EQ(v2.hash_spec.functions, (std::vector<std::string>{"shard_v2"}));
  EXPECT_EQ(parse_op_records(relu(R"("shard_spec":1,)", "00000000000000aa"), "r", 0).hash_spec.functions,
            (std::vector<std::string>{"shard"}));
  // A record of another spec than the log's first costs that record; a bad spec value too.
  const OpLog mixed = parse_op_records(
      relu(R"("shard_spec":2,)", "00000000000000aa") + relu("", "00000000000000bb") +
          relu(R"("shard_spec":"2",)", "00000000000000cc") + relu(R"("shard_spec":2,)", "00000000000000dd"),
      "r", 0);
  EXPECT_EQ(mixed.hash_spec.functions, (std::vector<std::string>{"shard_v2"}));
  ASSERT_EQ(mixed.records.size(), 2u);
  EXPECT_EQ(mixed.hash(mixed.out(mixed.records[1], 0), 0).bits, 0xddu);
  ASSERT_EQ(mixed.issues.size(), 2u);
  EXPECT_EQ(mixed.issues[0].line, 2);
  EXPECT_NE(mixed.issues[0].problem.find("spec 1 after spec 2 (line 1)"), std::string::npos)
      << mixed.issues[0].problem;
  EXPECT_NE(mixed.issues[1].problem.find("not 1 or 2"), std::string::npos) << mixed.issues[1].problem;
}

TEST(OpRecords, DamageCostsOneRecordAndACutLastLineMarksTheLogTruncated) {
  const std::string text =
      std::string(kGelu) + "{not json\n" +
      R"({"type":"op","step":1,"op":"aten::mul","args":[{"id":-1}],"outs":[]})" + "\n" +
      R"({"type":"op","step":1,"op":"aten::add","args":[],"outs":[{"id":9,"dtype":"float32","shape":[2],"xxh3":"xyz","shard":"01"}]})" +
      "\n" + R"({"type":"params","params":[]})" + "\n" + std::string(kMul) +
      R"({"type":"op","step":1,"op":"aten::t)";
  const OpLog log = parse_op_records(text, "rank-0.jsonl", 0);
  EXPECT_EQ(log.records.size(), 2u);  // gelu and mul; the params record is not an op
  ASSERT_EQ(log.issues.size(), 4u);
  EXPECT_EQ(log.issues[0].line, 2);
  EXPECT_EQ(log.issues[1].line, 3);
  EXPECT_NE(log.issues[1].problem.find("id"), std::string::npos);
  EXPECT_EQ(log.issues[2].line, 4);
  EXPECT_NE(log.issues[2].problem.find("16 hex digits"), std::string::npos);
  EXPECT_TRUE(log.truncated);
  EXPECT_EQ(log.issues[3].line, 7);
}

TEST(OpRecords, AViewIsReadAsItsBase) {
  // aten::t of a weight (hashed as the op's input) makes a view: no hash, its base named. The mm
  // reading it reads the weight (its id, and its hashes: same dtype and size); a slice of the
  // weight (fewer elements) reads the weight's id without a hash.
  const std::string text =
      R"({"type":"op","step":1,"op":"aten::t","args":[{"id":0,"dtype":"float32","shape":[4,2],"xxh3":"00000000000000aa","shard":"00000000000000bb"}],)"
      R"("outs":[{"id":1,"dtype":"float32","shape":[2,4],"view":{"base":0}}]})"
      "\n"
      R"({"type":"op","step":1,"op":"aten::mm","args":[{"id":2,"dtype":"float32","shape":[3,2],"shard":"0000000000000001","xxh3":"0000000000000002"},)"
      R"({"id":1,"dtype":"float32","shape":[2,4],"view":{"base":0}}],"outs":[{"id":3,"dtype":"float32","shape":[3,4],"xxh3":"0000000000000003","shard":"0000000000000004"}]})"
      "\n"
      R"({"type":"op","step":1,"op":"aten::relu","args":[{"id":5,"dtype":"float32","shape":[2],"view":{"base":0}}],"outs":[{"id":6,"dtype":"float32","shape":[2],"xxh3":"0000000000000005","shard":"0000000000000006"}]})"
      "\n";
  const OpLog log = parse_op_records(text, "r", 0);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  const TensorRef& view = log.out(log.records[0], 0);
  EXPECT_EQ(view.id, 1);  // the view op's output keeps its id: nothing reads it by that id
  EXPECT_FALSE(view.hashed());
  EXPECT_TRUE(log.records[0].view);  // made no value of its own
  EXPECT_FALSE(log.records[1].view);
  const TensorRef& read = log.arg(log.records[1], 1);
  EXPECT_EQ(read.id, 0);
  ASSERT_EQ(read.hash_count, 2);
  EXPECT_EQ(log.hash(read, 0).bits, 0xaau);
  EXPECT_EQ(log.hash(read, 1).bits, 0xbbu);
  const TensorRef& slice = log.arg(log.records[2], 0);
  EXPECT_EQ(slice.id, 0);
  EXPECT_FALSE(slice.hashed());
  // A view with hashes, or without a base: the record is an issue.
  const std::string bad =
      R"({"type":"op","step":1,"op":"aten::t","args":[],"outs":[{"id":1,"dtype":"float32","shape":[2],"view":{"base":0},"shard":"01"}]})"
      "\n"
      R"({"type":"op","step":1,"op":"aten::t","args":[],"outs":[{"id":1,"dtype":"float32","shape":[2],"view":{"base":"x"}}]})"
      "\n";
  const OpLog damaged = parse_op_records(bad, "r", 0);
  EXPECT_TRUE(damaged.records.empty());
  ASSERT_EQ(damaged.issues.size(), 2u);
  EXPECT_NE(damaged.issues[0].problem.find("a view with hashes"), std::string::npos);
  EXPECT_NE(damaged.issues[1].problem.find("\"base\""), std::string::npos);
}

TEST(OpRecords, CollectivesNameTheirGroupAndItsMembers) {
  // A TP all-reduce of a 2x2 mesh on rank 3: group "2" of ranks 2 and 3. A record of the older
  // recorder ("default", no members) still reads as all ranks: no member list.
  const std::string tp =
      R"({"type":"op","step":2,"index":1,"op":"c10d::allreduce_","phase":"optimizer","args":[{"id":5,"dtype":"float32","shape":[4,16]}],)"
      R"("outs":[{"id":5,"dtype":"float32","shape":[4,16]}],"collective":true,"group":"2","group_ranks":[2,3],"async":true})"
      "\n";
  const OpLog log = parse_op_records(std::string(kAllReduce) + tp + tp, "rank-3.jsonl", 3);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  ASSERT_EQ(log.records.size(), 3u);
  EXPECT_EQ(log.str(log.records[0].group), "default");
  EXPECT_EQ(log.str(log.records[1].group), "2");
  EXPECT_EQ(log.records[2].group, log.records[1].group);
  ASSERT_EQ(log.group_ranks.size(), 1u);
  EXPECT_EQ(log.group_ranks.at(log.records[1].group), (std::vector<int>{2, 3}));
  // An op without a group names none.
  EXPECT_EQ(parse_op_records(std::string(kMul), "r", 0).records[0].group, 0u);

  // Bad members cost their record, named; a group listed with other members than before too.
  auto with_ranks = [&](const std::string& ranks) {
    std::string s = tp;
    s.replace(s.find("[2,3]"), 5, ranks);
    return s;
  };
  const OpLog bad = parse_op_records(tp + with_ranks("[3,2]") + with_ranks("[]") + with_ranks("\"2,3\"") +
                                         with_ranks("[2,-3]") + with_ranks("[0,1]"),
                                     "rank-3.jsonl", 3);
  EXPECT_EQ(bad.records.size(), 1u);
  ASSERT_EQ(bad.issues.size(), 5u);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NE(bad.issues[i].problem.find("group_ranks"), std::string::npos) << bad.issues[i].problem;
  EXPECT_EQ(bad.issues[4].line, 6);
  EXPECT_NE(bad.issues[4].problem.find("other ranks"), std::string::npos) << bad.issues[4].problem;
  EXPECT_EQ(bad.group_ranks.at(bad.records[0].group), (std::vector<int>{2, 3}));
  EXPECT_EQ(bad.tensors.size(), 2u);  // the failed records' tensors are not kept
  std::string unnamed = tp;
  unnamed.replace(unnamed.find(R"("group":"2")"), 11, R"("group":7)");
  EXPECT_EQ(parse_op_records(unnamed, "r", 3).issues.size(), 1u);
}

TEST(OpRecords, StepsOutOfOrderAreAnIssueNotARecord) {
  std::string late(kGelu);
  late.replace(late.find("\"step\":1"), 8, "\"step\":3");
  const OpLog log = parse_op_records(late + std::string(kMul), "r", 0);
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.issues.size(), 1u);
  EXPECT_NE(log.issues[0].problem.find("out of order"), std::string::npos);
}

TEST(OpRecordRun, ATraceDirectoryOfOpRecordsIsAnOpRun) {
  testing::TempDir dir;
  dir.write("run/manifest.json", R"({"schema_version": 1, "format": "gparity-trace", "world_size": 2})");
  dir.write("run/rank-0.jsonl", kGelu);
  dir.write("run/rank-1.jsonl", kMul);
  dir.write("steps/manifest.json", R"({"schema_version": 1, "format": "gparity-trace", "world_size": 1})");
  dir.write("steps/rank-0.jsonl",
            R"({"type":"step","step":1,"loss":{"value":1,"bits":"3f800000","dtype":"float32"}})"
            "\n");
  const std::string run = (dir.path() / "run").string();
  EXPECT_TRUE(is_op_record_run(run));
  EXPECT_TRUE(is_op_log_path(run));
  EXPECT_FALSE(is_op_record_run((dir.path() / "steps").string()));
  EXPECT_FALSE(is_op_log_path((dir.path() / "steps").string()));
  const OpRun r = open_op_run(run);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.ranks(), (std::vector<int>{0, 1}));
  const OpLog log = read_op_run_file(r.files[1]);
  EXPECT_EQ(log.rank, 1);
  EXPECT_EQ(log.format, "gparity op records");
  ASSERT_EQ(log.records.size(), 1u);
  EXPECT_EQ(log.op_name(log.records[0]), "aten::mul.Tensor");
}

TEST(OpRecords, TheUnhashedMarkerOfRngStateOutputsIsReadBack) {
  const std::string text =
      R"({"type":"op","step":1,"op":"aten::_scaled_dot_product_efficient_attention","phase":"forward",)"
      R"("args":[{"id":0,"dtype":"float32","shape":[4],"xxh3":"0000000000000001","shard":"0000000000000002"}],)"
      R"("outs":[{"id":1,"dtype":"float32","shape":[4],"xxh3":"0000000000000003","shard":"0000000000000004"},)"
      R"({"id":2,"dtype":"int64","shape":[],"unhashed":"rng_state"},{"id":3,"dtype":"float32","shape":[0],"unhashed":"debug"}]})"
      "\n";
  const OpLog log = parse_op_records(text, "rank-0.jsonl", 0);
  ASSERT_TRUE(log.issues.empty()) << log.issues.front().problem;
  const OpRecord& r = log.records.at(0);
  ASSERT_EQ(r.out_count, 3u);
  EXPECT_EQ(log.out(r, 0).unhashed, Unhashed::No);
  EXPECT_TRUE(log.out(r, 0).hashed());
  EXPECT_EQ(log.out(r, 1).unhashed, Unhashed::RngState);
  EXPECT_FALSE(log.out(r, 1).hashed());
  EXPECT_EQ(log.out(r, 2).unhashed, Unhashed::Debug);
}

TEST(OpRecords, TheNameRuleOfUnhashedReturns) {
  for (const char* rng : {"philox_seed", "philox_offset", "rng_state", "unused", "seed", "offset"})
    EXPECT_EQ(unhashed_return(rng), Unhashed::RngState) << rng;
  EXPECT_EQ(unhashed_return("debug_attn_mask"), Unhashed::Debug);
  for (const char* value : {"", "output", "logsumexp", "cum_seq_q", "mask"})
    EXPECT_EQ(unhashed_return(value), Unhashed::No) << value;
  const auto cudnn = attention_returns("aten::_scaled_dot_product_cudnn_attention");
  ASSERT_EQ(cudnn.size(), 9u);
  EXPECT_EQ(cudnn[6], "philox_seed");
  EXPECT_EQ(cudnn[8], "debug_attn_mask");
  EXPECT_EQ(attention_returns("aten::_scaled_dot_product_efficient_attention.default").size(), 4u);
  EXPECT_EQ(attention_returns("_flash_attention_forward")[2], "rng_state");
  EXPECT_TRUE(attention_returns("aten::native_dropout").empty());  // its mask is a value
  EXPECT_TRUE(attention_returns("aten::_scaled_dot_product_efficient_attention_backward").empty());
}

}  // namespace
}  // namespace gparity::model::ops
