#include "core/model/formats/safetensors.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/checkpoint_hash.hpp"
#include "hash/xxh3.hpp"
#include "tests/support/temp_dir.hpp"

namespace gparity::model {
namespace {

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

std::string file_with_header(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

// Expects an InputError whose message names the file and contains `needle`.
void expect_bad(const std::string& path, const std::string& needle) {
  try {
    const SafetensorsFile f(path);
    ADD_FAILURE() << "no error for " << path;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Safetensors, BundledSampleMatchesIndependentHashes) {
  // samples/tiny-checkpoint.expected.json holds xxhsum's digests and the Python reference
  // implementation's shard hashes, computed when the sample was generated.
  const std::string dir = std::string(GPARITY_SOURCE_DIR) + "/samples/";
  std::ifstream ef(dir + "tiny-checkpoint.expected.json");
  const auto expected = nlohmann::json::parse(ef);
  const FileDigest d = hash_file(dir + "tiny-checkpoint.safetensors");
  EXPECT_EQ(d.format, "safetensors");
  ASSERT_EQ(d.tensors.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(d.tensors[i].name, expected[i]["name"]);
    EXPECT_EQ(std::string(dtype_safetensors_name(*d.tensors[i].dtype)), expected[i]["dtype"]);
    EXPECT_EQ(d.tensors[i].shape, expected[i]["shape"].get<std::vector<std::int64_t>>());
    EXPECT_EQ(hash::to_hex(d.tensors[i].xxh3), expected[i]["xxh3"]) << d.tensors[i].name;
    EXPECT_EQ(hash::to_hex(d.tensors[i].shard_hash), expected[i]["shard_hash"]) << d.tensors[i].name;
  }
}

TEST(Safetensors, ReadsHeaderOrderAndBytes) {
  testing::TempDir tmp;
  const std::string hdr =
      R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"BF16","shape":[1,2],"data_offsets":[8,12]},"__metadata__":{"k":"v"}})";
  const std::string data = "ABCDEFGHIJKL";
  const SafetensorsFile f(tmp.write("x.safetensors", file_with_header(hdr, data)));
  ASSERT_EQ(f.tensors().size(), 2U);
  EXPECT_EQ(f.tensors()[0].name, "b");
  EXPECT_EQ(f.tensors()[1].name, "a");
  EXPECT_EQ(f.tensors()[1].dtype, DType::BF16);
  const auto b = f.bytes(f.tensors()[1]);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()), "IJKL");
}

TEST(Safetensors, MalformedFilesGiveClearErrors) {
  testing::TempDir tmp;
  const std::string ok = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_bad(tmp.write("short.safetensors", "abc"), "truncated");
  expect_bad(tmp.write("len.safetensors", le64(1000) + "{}"), "truncated");
  expect_bad(tmp.write("huge.safetensors", le64(1ULL << 40) + "{}"), "exceeds");
  expect_bad(tmp.write("json.safetensors", file_with_header("{\"w\": [1,", "")), "invalid JSON");
  expect_bad(tmp.write("data.safetensors", file_with_header(ok, "1234")), "outside");
  expect_bad(
      tmp.write("dtype.safetensors",
                file_with_header(R"({"w":{"dtype":"F13","shape":[2],"data_offsets":[0,8]}})", "12345678")),
      "unknown dtype");
  expect_bad(
      tmp.write("size.safetensors",
                file_with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678")),
      "needs 3 x 4 bytes");
  expect_bad(
      tmp.write("neg.safetensors",
                file_with_header(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "12345678")),
      "non-negative");
  expect_bad(tmp.write("overflow.safetensors",
                       file_with_header(
                           R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})",
                           "12345678")),
             "overflows");
  expect_bad(
      tmp.write(
          "overlap.safetensors",
          file_with_header(
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              "12345678")),
      "overlap");
  expect_bad(
      tmp.write("nesting.safetensors", file_with_header(std::string(5000, '[') + std::string(5000, ']'), "")),
      "nested deeper");
  expect_bad(tmp.path().string() + "/missing.safetensors", "cannot open");
}

TEST(CheckpointHash, PlainFileIsOneRawByteTensor) {
  testing::TempDir tmp;
  const auto path = tmp.write("notes.txt", "hello");
  const FileDigest d = hash_file(path);
  EXPECT_EQ(d.format, "raw");
  ASSERT_EQ(d.tensors.size(), 1U);
  EXPECT_FALSE(d.tensors[0].dtype.has_value());
  EXPECT_EQ(d.tensors[0].shape, std::vector<std::int64_t>{5});
  EXPECT_EQ(hash::to_hex(d.tensors[0].xxh3), "9555e8555c62dcfd");
}

}  // namespace
}  // namespace gparity::model
