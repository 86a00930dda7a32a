#include "core/model/base/crc32c.hpp"

#include <array>

namespace gparity::model {
namespace {

// Slicing-by-8 tables: event files are small, but directories of them add up, and eight tables
// of 1 KiB cost nothing.
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() noexcept {
  Tables t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t s = 1; s < 8; ++s) {
    for (std::size_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFU];
  }
  return t;
}

constexpr Tables kTables = make_tables();

std::uint32_t update(std::uint32_t crc, const unsigned char* p, std::size_t n) noexcept {
  while (n >= 8) {
    const std::uint32_t lo = crc ^ (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 |
                                    std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24);
    crc = kTables[7][lo & 0xFFU] ^ kTables[6][(lo >> 8) & 0xFFU] ^ kTables[5][(lo >> 16) & 0xFFU] ^
          kTables[4][lo >> 24] ^ kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^ kTables[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xFFU];
  return crc;
}

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> data) noexcept {
  return ~update(~0U, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

std::uint32_t crc32c(std::string_view data) noexcept {
  return ~update(~0U, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

}  // namespace gparity::model
