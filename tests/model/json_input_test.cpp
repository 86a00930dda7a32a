#include "core/model/base/json_input.hpp"

#include <gtest/gtest.h>

#include "core/model/base/input_error.hpp"

namespace gparity::model {
namespace {

TEST(JsonInput, ReportsLineOfSyntaxError) {
  try {
    parse_json("{\n\"a\": 1,\n\"b\": ]\n}", "doc.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), "doc.json");
    EXPECT_EQ(e.line(), 3);
  }
}

TEST(JsonInput, FirstLineOffsetsEmbeddedDocuments) {
  try {
    parse_json("{\"a\": tru}", "run/rank-0.jsonl", 42);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 42);
    EXPECT_NE(std::string(e.what()).find("run/rank-0.jsonl:42:"), std::string::npos);
  }
}

TEST(JsonInput, CapsNestingDepth) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THROW(parse_json(deep, "deep.json"), InputError);
  const std::string ok = std::string(100, '[') + std::string(100, ']');
  EXPECT_NO_THROW(parse_json(ok, "ok.json"));
}

TEST(JsonInput, OrderedKeepsKeyOrder) {
  const auto j = parse_ordered_json(R"({"z":1,"a":2})", "x");
  EXPECT_EQ(j.begin().key(), "z");
}

}  // namespace
}  // namespace gparity::model

namespace gparity::model {
namespace {

TEST(JsonInput, NumberTooLargeForADoubleIsBadInput) {
  try {
    parse_json("{\"a\": 1e999999}", "big.json", 7);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 7);
    EXPECT_NE(std::string(e.what()).find("big.json:7: invalid JSON"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gparity::model
