// json_output: gparity's JSON text keeps strings exact and survives bytes JSON cannot hold.

#include "core/model/base/json_output.hpp"

#include <gtest/gtest.h>

namespace {

using gparity::model::json_output;

TEST(JsonOutput, ControlCharactersAreExactJsonEscapes) {
  const nlohmann::json doc = {{"name", "tok\x1b]0;t\x07.weight"}};
  const std::string text = json_output(doc, -1);
  EXPECT_EQ(text, R"({"name":"tok\u001b]0;t\u0007.weight"})");
  EXPECT_EQ(nlohmann::json::parse(text)["name"], "tok\x1b]0;t\x07.weight");
}

TEST(JsonOutput, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  // A path on a Linux file system may hold any bytes; nlohmann's dump() would throw on them.
  const nlohmann::ordered_json doc = {{"path", "bad\xff\xfe\x1b[2Jname"}, {"ok", true}};
  EXPECT_THROW((void)doc.dump(), nlohmann::json::type_error);
  const std::string text = json_output(doc);
  const auto back = nlohmann::json::parse(text);
  EXPECT_EQ(back["path"], "bad\xef\xbf\xbd\xef\xbf\xbd\x1b[2Jname");
  EXPECT_EQ(back["ok"], true);
}

}  // namespace
