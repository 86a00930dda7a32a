// DCP checkpoints: hashes against safetensors of the same weights, across layouts, for grid
// (non-row-block) chunks, and damaged inputs. The real samples come from ../shared (skipped when
// absent); the grid checkpoint is tests/data/dcp/grid (tests/data/dcp/make_grid_checkpoint.py).

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/checkpoint_hash.hpp"
#include "core/model/formats/dcp_checkpoint.hpp"
#include "core/model/formats/dcp_record.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using gparity::model::FileDigest;
using gparity::model::hash_file;
using gparity::model::InputError;

const std::string kDcpData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/dcp";
// The shared samples' torch-2.11-dcp; empty when absent.
const fs::path kSamples = gparity::testing::sample_folder("torch-2.11-dcp");

#define SKIP_WITHOUT_SAMPLES() \
  if (kSamples.empty()) GTEST_SKIP() << "no shared samples (../shared or $GPARITY_SAMPLES)"

// name without the DCP state-dict wrapper ("model.") -> digest
std::map<std::string, gparity::model::TensorDigest> by_name(const FileDigest& d,
                                                            const std::string& drop = "") {
  std::map<std::string, gparity::model::TensorDigest> m;
  for (const auto& t : d.tensors) m[t.name.substr(t.name.starts_with(drop) ? drop.size() : 0)] = t;
  return m;
}

void expect_same_weights(const FileDigest& a, const FileDigest& b, const std::string& drop_a,
                         const std::string& drop_b) {
  const auto ma = by_name(a, drop_a);
  const auto mb = by_name(b, drop_b);
  ASSERT_EQ(ma.size(), mb.size());
  for (const auto& [name, t] : ma) {
    ASSERT_TRUE(mb.contains(name)) << name;
    EXPECT_EQ(t.dtype, mb.at(name).dtype) << name;
    EXPECT_EQ(t.shape, mb.at(name).shape) << name;
    EXPECT_EQ(t.xxh3, mb.at(name).xxh3) << name << ": " << a.path << " vs " << b.path;
    EXPECT_EQ(t.shard_hash, mb.at(name).shard_hash) << name;
  }
}

TEST(Dcp, GridChunksHashLikeTheFullTensors) {
  // Chunks in a 2x2 grid, column blocks, transposed storage, a 0-d tensor: the row-major XXH3
  // streamed from the chunks and the summed shard hashes equal those of the whole tensors.
  const auto dcp = hash_file(kDcpData + "/grid");
  const auto st = hash_file(kDcpData + "/grid.safetensors");
  EXPECT_EQ(dcp.format, "dcp");
  ASSERT_EQ(dcp.tensors.size(), 4U);
  EXPECT_EQ(dcp.tensors[0].name, "grid.weight");  // registration order
  EXPECT_EQ(dcp.tensors[0].layout, "4 chunks of mixed sizes");
  EXPECT_EQ(dcp.other_entries, std::vector<std::string>{"step"});
  expect_same_weights(dcp, st, "", "");
  // The result never depends on the number of threads.
  const auto one = hash_file(kDcpData + "/grid", {1});
  for (std::size_t i = 0; i < one.tensors.size(); ++i) EXPECT_EQ(one.tensors[i].xxh3, dcp.tensors[i].xxh3);
}

TEST(Dcp, SamplesFsdp4AndFsdp2AreIdenticalAndMatchTheirSafetensors) {
  SKIP_WITHOUT_SAMPLES();
  for (const char* step : {"step-0", "step-3"}) {
    const auto f4 = hash_file((kSamples / "fsdp4" / step).string());
    const auto f2 = hash_file((kSamples / "fsdp2" / step).string());
    ASSERT_EQ(f4.tensors.size(), 8U);
    EXPECT_EQ(f4.tensors[0].layout, "4 chunks of [64, 128]");
    EXPECT_EQ(f2.tensors[0].layout, "2 chunks of [128, 128]");
    expect_same_weights(f4, f2, "", "");
    const auto st4 = hash_file((kSamples / "fsdp4" / (std::string(step) + ".safetensors")).string());
    const auto st2 = hash_file((kSamples / "fsdp2" / (std::string(step) + ".safetensors")).string());
    expect_same_weights(f4, st4, "model.", "");
    expect_same_weights(f2, st2, "model.", "");
  }
}

TEST(Dcp, SamplesStep3DiffersFromStep0InEveryParameter) {
  // As found by gparity (and by `gparity hash` on step-0/3.safetensors): after 3 AdamW steps
  // every one of the 8 parameters has changed, the norm weights included.
  SKIP_WITHOUT_SAMPLES();
  const auto s0 = by_name(hash_file((kSamples / "fsdp4" / "step-0").string()));
  const auto s3 = by_name(hash_file((kSamples / "fsdp4" / "step-3").string()));
  ASSERT_EQ(s0.size(), 8U);
  for (const auto& [name, t] : s0) {
    EXPECT_NE(t.shard_hash, s3.at(name).shard_hash) << name;
    EXPECT_NE(t.xxh3, s3.at(name).xxh3) << name;
  }
  // At step 0 the two blocks' norm weights are both ones: equal to each other.
  EXPECT_EQ(s0.at("model.layers.0.norm.weight").xxh3, s0.at("model.layers.1.norm.weight").xxh3);
}

std::string copy_checkpoint(const gparity::testing::TempDir& tmp, const std::string& from) {
  const auto to = tmp.path() / "ckpt";
  fs::copy(from, to, fs::copy_options::recursive);
  for (const auto& e : fs::directory_iterator(to))
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return to.string();
}

std::string dcp_error_of(const std::string& dir) {
  try {
    (void)hash_file(dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Dcp, TruncatedDataFileIsReportedWithFileAndRange) {
  gparity::testing::TempDir tmp;
  const auto dir = copy_checkpoint(tmp, kDcpData + "/grid");
  fs::resize_file(fs::path(dir) / "__1_0.distcp", 1000);
  const auto msg = dcp_error_of(dir);
  EXPECT_NE(msg.find("__1_0.distcp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("outside"), std::string::npos) << msg;
}

TEST(Dcp, HashFilesKeepsPathOrderAndReportsTheFirstBadPath) {
  gparity::testing::TempDir tmp;
  const auto bad = copy_checkpoint(tmp, kDcpData + "/grid");
  fs::resize_file(fs::path(bad) / "__1_0.distcp", 1000);
  const std::vector<std::string> good{kDcpData + "/grid.safetensors", kDcpData + "/grid",
                                      kDcpData + "/grid.safetensors"};
  std::vector<std::string> seen;
  const auto all = gparity::model::hash_files(good, {2}, [&](std::size_t k, const std::string& p) {
    EXPECT_EQ(k, seen.size() + 1);
    seen.push_back(p);
  });
  ASSERT_EQ(all.size(), 3U);
  EXPECT_EQ(seen.size(), 3U);
  for (std::size_t i = 0; i < good.size(); ++i) {
    const auto one = hash_file(good[i], {1});
    EXPECT_EQ(all[i].path, good[i]);
    ASSERT_EQ(all[i].tensors.size(), one.tensors.size());
    for (std::size_t t = 0; t < one.tensors.size(); ++t)
      EXPECT_EQ(all[i].tensors[t].xxh3, one.tensors[t].xxh3);
  }
  // The bad checkpoint is reported, whichever thread finished first; the good ones still ran.
  const std::vector<std::string> mixed{kDcpData + "/grid", bad, kDcpData + "/nope"};
  try {
    (void)gparity::model::hash_files(mixed, {3});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("__1_0.distcp"), std::string::npos) << e.what();
  }
}

// Checkpoints hashed together hold their data files open for pread up to a process-wide cap;
// past it, files are mapped instead. Both ways give the same digests.
TEST(Dcp, CheckpointsPastTheOpenFileCapAreReadThroughMappings) {
  const std::size_t files = gparity::model::DcpCheckpoint(kDcpData + "/grid").files().size();
  ASSERT_GT(files, 0U);
  const std::size_t copies = gparity::model::DcpCheckpoint::kMaxOpenFiles / files + 2;
  const std::vector<std::string> paths(copies, kDcpData + "/grid");
  const auto one = hash_file(kDcpData + "/grid", {1});
  for (const unsigned threads : {1U, 2U}) {
    const auto all = gparity::model::hash_files(paths, {threads});
    ASSERT_EQ(all.size(), copies);
    for (const auto& d : all) {
      ASSERT_EQ(d.tensors.size(), one.tensors.size());
      for (std::size_t t = 0; t < one.tensors.size(); ++t) {
        EXPECT_EQ(d.tensors[t].xxh3, one.tensors[t].xxh3) << d.tensors[t].name;
        EXPECT_EQ(d.tensors[t].shard_hash, one.tensors[t].shard_hash) << d.tensors[t].name;
      }
    }
  }
}

// The CRC-32 that checks every storage (a vector kernel for large runs where the CPU has one,
// continued run after run as the one-pass hash feeds it) is zip's, bit for bit.
TEST(Dcp, ZipCrc32MatchesTheBitwiseDefinition) {
  const auto reference = [](std::uint32_t crc, std::span<const std::byte> bytes) {
    crc = ~crc;
    for (const auto b : bytes) {
      crc ^= static_cast<std::uint8_t>(b);
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320U & (0U - (crc & 1U)));
    }
    return ~crc;
  };
  std::vector<std::byte> data(70000);
  std::uint32_t x = 12345;
  for (auto& b : data) {
    x = x * 1103515245U + 12345U;
    b = static_cast<std::byte>(x >> 24);
  }
  for (const std::size_t n : {0UL, 1UL, 63UL, 255UL, 256UL, 1023UL, 1024UL, 1025UL, 1088UL, 1279UL, 1280UL,
                              1344UL, 4097UL, 65536UL + 77UL}) {
    for (const std::size_t offset : {0UL, 3UL}) {
      const auto bytes = std::span<const std::byte>(data).subspan(offset, n);
      for (const std::uint32_t init : {0U, 0xFFFFFFFFU, 0x1234ABCDU}) {
        EXPECT_EQ(gparity::model::zip_crc32(init, bytes), reference(init, bytes))
            << n << " bytes at " << offset;
      }
      // In two runs, as the one-pass hash computes it.
      const auto head = bytes.first(n / 3);
      EXPECT_EQ(gparity::model::zip_crc32(gparity::model::zip_crc32(0, head), bytes.subspan(head.size())),
                reference(0, bytes))
          << n;
    }
  }
}

TEST(Dcp, CorruptStorageBytesAndMissingFilesAreInputErrors) {
  gparity::testing::TempDir tmp;
  const auto dir = copy_checkpoint(tmp, kDcpData + "/grid");
  {
    // Flip one byte in the middle of rank 3's file: a zip structure or CRC check catches it.
    std::fstream f(fs::path(dir) / "__3_0.distcp", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto n = static_cast<std::streamoff>(f.tellg());
    for (std::streamoff at = 0; at < n; at += 97) {
      f.seekp(at);
      f.put('\x5a');
    }
  }
  const auto msg = dcp_error_of(dir);
  EXPECT_NE(msg.find("__3_0.distcp"), std::string::npos) << msg;
  fs::remove(fs::path(dir) / "__2_0.distcp");
  const auto missing = dcp_error_of(dir);
  EXPECT_NE(missing.find("__2_0.distcp"), std::string::npos) << missing;
  EXPECT_NE(missing.find("missing"), std::string::npos) << missing;
  fs::remove(fs::path(dir) / ".metadata");
  EXPECT_FALSE(gparity::model::is_dcp_checkpoint(dir));
}

// Flips the first data byte of the first storage member ("<archive>/data/<key>") in `file`.
void flip_first_storage_byte(const fs::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (std::size_t at = bytes.find("PK\x03\x04"); at != std::string::npos;
       at = bytes.find("PK\x03\x04", at + 4)) {
    const auto u16 = [&](std::size_t i) {
      return std::size_t(std::uint8_t(bytes[i])) | std::size_t(std::uint8_t(bytes[i + 1])) << 8;
    };
    const std::string name = bytes.substr(at + 30, u16(at + 26));
    if (name.find("/data/") == std::string::npos || name.find("/.data/") != std::string::npos) continue;
    const std::size_t data = at + 30 + u16(at + 26) + u16(at + 28);
    f.seekp(static_cast<std::streamoff>(data));
    f.put(static_cast<char>(bytes[data] ^ 0x01));
    return;
  }
  FAIL() << "no storage member in " << file;
}

// Storage members are read in place (not through the zip library), so the CRC-32 check is ours: one
// flipped bit is refused, both on the one-pass path (row chunks of the samples) and on the
// general one (the grid's column blocks).
TEST(Dcp, OneFlippedStorageBitFailsTheCrcCheck) {
  gparity::testing::TempDir tmp;
  const auto grid = copy_checkpoint(tmp, kDcpData + "/grid");
  flip_first_storage_byte(fs::path(grid) / "__0_0.distcp");
  const auto msg = dcp_error_of(grid);
  EXPECT_NE(msg.find("__0_0.distcp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CRC-32"), std::string::npos) << msg;
  if (!fs::exists(kSamples)) GTEST_SKIP() << "samples not found";
  gparity::testing::TempDir tmp2;
  const auto rows = copy_checkpoint(tmp2, (kSamples / "fsdp4" / "step-0").string());
  flip_first_storage_byte(fs::path(rows) / "__1_0.distcp");
  const auto msg2 = dcp_error_of(rows);
  EXPECT_NE(msg2.find("__1_0.distcp"), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("CRC-32"), std::string::npos) << msg2;
}

// One torch.save record three ways (tests/data/dcp/record_*.zip, from make_grid_checkpoint.py):
// every member stored (read without the zip library, storage in place), data.pkl deflated
// (minizip, storage still in place), data.pkl and storage deflated (minizip, storage copied out).
// Same tensor.
TEST(Dcp, RecordReaderTakesEachZipPathToTheSameTensor) {
  using gparity::model::CrcCheck;
  using gparity::model::read_torch_save_tensor;
  const auto read = [](const std::string& name) {
    std::ifstream f(kDcpData + "/" + name, std::ios::binary);
    const std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(s.size());
    std::memcpy(bytes.data(), s.data(), s.size());
    return bytes;
  };
  const auto stored = read("record_stored.zip"), mixed = read("record_mixed.zip"),
             deflated = read("record_deflated.zip");
  std::vector<std::byte> b1, b2, b3;
  const auto in_place = [](const auto& t, const std::vector<std::byte>& bytes) {
    return t.storage.data() >= bytes.data() && t.storage.data() < bytes.data() + bytes.size();
  };
  const auto t1 = read_torch_save_tensor(stored, "stored", b1, CrcCheck::by_caller);
  const auto t2 = read_torch_save_tensor(mixed, "mixed", b2, CrcCheck::by_caller);
  const auto t3 = read_torch_save_tensor(deflated, "deflated", b3, CrcCheck::by_caller);
  EXPECT_TRUE(in_place(t1, stored) && t1.unchecked_crc32);
  EXPECT_TRUE(in_place(t2, mixed) && t2.unchecked_crc32);
  EXPECT_FALSE(in_place(t3, deflated) || t3.unchecked_crc32);
  for (const auto* t : {&t2, &t3}) {
    EXPECT_EQ(t->record.size, t1.record.size);
    EXPECT_EQ(t->record.stride, t1.record.stride);
    EXPECT_EQ(t->record.dtype, t1.record.dtype);
    ASSERT_EQ(t->storage.size(), t1.storage.size());
    EXPECT_EQ(std::memcmp(t->storage.data(), t1.storage.data(), t1.storage.size()), 0);
  }
  EXPECT_EQ(*t1.unchecked_crc32, gparity::model::zip_crc32(0, t1.storage));
  // CrcCheck::now checks it before returning: a flipped storage byte is an error.
  auto bad = stored;
  bad[static_cast<std::size_t>(t1.storage.data() - stored.data())] ^= std::byte{1};
  EXPECT_THROW((void)read_torch_save_tensor(bad, "bad", b1), InputError);
}

// A record whose member names climb out of the archive ("../"): refused by name, on the path that
// reads stored records without the zip library as on the one through it.
TEST(Dcp, RecordWithDotDotMemberNamesIsRefusedByName) {
  using gparity::model::read_torch_save_tensor;
  for (const auto* name : {"record_stored.zip", "record_deflated.zip"}) {
    std::ifstream f(kDcpData + "/" + name, std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (auto at = s.find("archive/"); at != std::string::npos; at = s.find("archive/", at + 1))
      s.replace(at, 8, "../chive");  // same length: every offset stays right
    std::vector<std::byte> bytes(s.size());
    std::memcpy(bytes.data(), s.data(), s.size());
    std::vector<std::byte> buffer;
    try {
      (void)read_torch_save_tensor(bytes, name, buffer);
      FAIL() << name;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("'..' in member path"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
