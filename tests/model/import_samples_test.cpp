#include "core/model/formats/import_samples.hpp"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::model;
using gparity::testing::TempDir;

std::string line_with(const std::string& shape, const std::string& shard_shape) {
  return R"({"step": 1, "loss_bits": "40cdd4c8", "params": {"w": {"shard_xxh3": "b4018590d220db1a", )"
         R"("dtype": "torch.float32", "shape": )" +
         shape + R"(, "shard_shape": )" + shard_shape + "}}}\n";
}

TEST(ImportSamples, ShardOffsetsAreInferredFromTheRank) {
  TempDir tmp;
  const auto t = import_sample_rank(tmp.write("rank3.jsonl", line_with("[8, 2]", "[2, 2]")), 3);
  ASSERT_TRUE(t.issues.empty()) << t.issues.front().text();
  ASSERT_EQ(t.params_tables.size(), 1U);
  EXPECT_EQ(t.params_tables[0].params[0].local_offsets, (std::vector<std::int64_t>{6, 0}));
}

TEST(ImportSamples, ShapesMustBeExactNonNegativeIntegersAndOffsetsMustNotOverflow) {
  // Found with fuzz_trace_jsonl's sanitizers: a shape of 1e30 was converted to int64 and a
  // shard_shape[0] of 2^63 - 1 times the rank overflowed (both undefined behaviour). Each line
  // is now a corrupt line naming what is wrong, and the good line after it is still read.
  for (const auto& [shape, shard, what] : {
           std::tuple{"[1e30]", "[2]", "\"shape\" is not a list of non-negative integers"},
           std::tuple{"[4]", "[2.5]", "\"shard_shape\" is not a list of non-negative integers"},
           std::tuple{"[-4]", "[2]", "\"shape\" is not a list of non-negative integers"},
           std::tuple{"[9223372036854775807]", "[9223372036854775807]", ""},  // not sharded: no offset
           std::tuple{"[4]", "[9223372036854775807]", "shard_shape[0] times the rank overflows"},
       }) {
    TempDir tmp;
    const auto t =
        import_sample_rank(tmp.write("rank3.jsonl", line_with(shape, shard) + line_with("[8]", "[2]")), 3);
    if (std::string(what).empty()) {
      EXPECT_TRUE(t.issues.empty()) << shape << " " << shard;
      EXPECT_EQ(t.steps.size(), 2U);
      continue;
    }
    ASSERT_EQ(t.issues.size(), 1U) << shape << " " << shard;
    EXPECT_EQ(t.issues[0].kind, TraceIssue::Kind::CorruptLine);
    EXPECT_EQ(t.issues[0].line, 1);
    EXPECT_NE(t.issues[0].problem.find(what), std::string::npos) << t.issues[0].problem;
    EXPECT_EQ(t.steps.size(), 1U);
  }
}

}  // namespace
