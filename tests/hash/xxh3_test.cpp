#include "hash/xxh3.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace gparity::hash {
namespace {

std::vector<std::byte> seeded_bytes(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng() & 0xFF);
  return v;
}

// Runs the reference binary from Debian's xxhash package on the same bytes.
std::string xxhsum_h3(const std::vector<std::byte>& bytes) {
  const auto path =
      std::filesystem::temp_directory_path() / ("gparity-xxh3-" + std::to_string(::getpid()) + ".bin");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string cmd = "xxhsum -H3 '" + path.string() + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  if (p) ::pclose(p);
  std::filesystem::remove(path);
  // "XXH3 (file) = 9555e8555c62dcfd"
  const auto eq = out.rfind("= ");
  return eq == std::string::npos ? out : out.substr(eq + 2, 16);
}

TEST(Xxh3, MatchesReferenceBinaryAcrossSizeClasses) {
  // XXH3 has separate code paths for 0, 1-3, 4-8, 9-16, 17-128, 129-240 and long inputs.
  for (const std::size_t n : {0UL, 1UL, 3UL, 4UL, 8UL, 9UL, 16UL, 17UL, 128UL, 129UL, 240UL, 241UL, 1024UL,
                              65537UL, (1UL << 20) + 3}) {
    const auto bytes = seeded_bytes(n, static_cast<unsigned>(n));
    EXPECT_EQ(to_hex(xxh3_64(bytes)), xxhsum_h3(bytes)) << "size " << n;
  }
}

TEST(Xxh3, KnownAnswer) {
  const std::string s = "hello";
  EXPECT_EQ(to_hex(xxh3_64(std::as_bytes(std::span(s)))), "9555e8555c62dcfd");
  EXPECT_EQ(to_hex(xxh3_64(std::span<const std::byte>{})), "2d06800538d394c2");
}

TEST(Xxh3, StreamEqualsOneShotForAnyChunking) {
  const auto bytes = seeded_bytes(100'000, 7);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    Xxh3Stream s;
    std::size_t at = 0;
    while (at < bytes.size()) {
      const std::size_t n = std::min<std::size_t>(bytes.size() - at, rng() % 5000);
      s.update(std::span(bytes).subspan(at, n));
      at += n;
    }
    EXPECT_EQ(s.digest(), xxh3_64(bytes));
  }
  Xxh3Stream s;
  s.update(bytes);
  s.reset();
  EXPECT_EQ(s.digest(), xxh3_64(std::span<const std::byte>{}));
}

TEST(Xxh3, StridedViewEqualsContiguousCopy) {
  // A 6x10 float32 buffer; view its transpose and a column slice, row-major element order.
  const auto buf = seeded_bytes(6 * 10 * 4, 11);
  const std::int64_t tshape[] = {10, 6};
  const std::int64_t tstrides[] = {1, 10};
  std::vector<std::byte> copy;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 6; ++j)
      copy.insert(copy.end(), buf.begin() + (j * 10 + i) * 4, buf.begin() + (j * 10 + i) * 4 + 4);
  EXPECT_EQ(xxh3_64(BlockView{buf.data(), 4, tshape, tstrides}), xxh3_64(copy));

  const std::int64_t cshape[] = {6, 3};
  const std::int64_t cstrides[] = {10, 1};
  copy.clear();
  for (int j = 0; j < 6; ++j)
    copy.insert(copy.end(), buf.begin() + (j * 10 + 2) * 4, buf.begin() + (j * 10 + 5) * 4);
  EXPECT_EQ(xxh3_64(BlockView{buf.data() + 2 * 4, 4, cshape, cstrides}), xxh3_64(copy));

  const std::int64_t full[] = {6, 10};
  EXPECT_EQ(xxh3_64(BlockView{buf.data(), 4, full, {}}), xxh3_64(buf));
}

TEST(Xxh3, HexRoundTrip) {
  EXPECT_EQ(to_hex(0), "0000000000000000");
  EXPECT_EQ(to_hex(0xDEADBEEF01234567ULL), "deadbeef01234567");
  EXPECT_EQ(from_hex("DEADbeef01234567"), 0xDEADBEEF01234567ULL);
  EXPECT_FALSE(from_hex("deadbeef"));
  EXPECT_FALSE(from_hex("deadbeef0123456g"));
}

}  // namespace
}  // namespace gparity::hash
