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

namespace gparity::model {
namespace {

// Python's json.dumps writes these for a diverging run's loss; they read as null.
TEST(JsonInput, PythonNanAndInfinityReadAsNull) {
  const auto j = parse_json(R"({"loss": NaN, "g": [Infinity, -Infinity, 1.5], "s": "NaN"})", "py.json");
  EXPECT_TRUE(j["loss"].is_null());
  ASSERT_EQ(j["g"].size(), 3U);
  EXPECT_TRUE(j["g"][0].is_null());
  EXPECT_TRUE(j["g"][1].is_null());
  EXPECT_EQ(j["g"][2].get<double>(), 1.5);
  EXPECT_EQ(j["s"], "NaN");  // inside a string: data, not a number
}

TEST(JsonInput, NonFiniteWordsOnlyOutsideStringsAndAsWholeWords) {
  EXPECT_EQ(python_nonfinite_as_null(R"({"a": "x\" NaN Infinity"})"), std::nullopt);
  EXPECT_EQ(python_nonfinite_as_null(R"([NaNa, Infinityx])"), std::nullopt);
  EXPECT_EQ(python_nonfinite_as_null("[NaN,-Infinity]"), std::optional<std::string>("[null,null]"));
  // Still invalid JSON after the words are replaced: the error names the line.
  try {
    parse_json("{\"a\": NaN,\n\"b\": nope}", "bad.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
  }
}

TEST(JsonInput, MillionDeepArraysAndObjectsAreRefusedWithoutRecursion) {
  constexpr std::size_t kDepth = 1000000;
  const std::string arrays = std::string(kDepth, '[') + std::string(kDepth, ']');
  std::string objects;
  for (std::size_t i = 0; i < kDepth; ++i) objects += "{\"a\":";
  objects += "1" + std::string(kDepth, '}');
  for (const std::string* doc : {&arrays, static_cast<const std::string*>(&objects)}) {
    try {
      parse_json(*doc, "deep.json");
      FAIL();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("nested deeper than 256"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gparity::model
