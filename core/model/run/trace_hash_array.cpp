// The wire form of a step record's hash arrays (trace_schema.hpp): the values as little-endian
// u64 bytes in standard base64 with padding, one string per array.

#include <array>
#include <bit>

#include "core/model/run/trace_schema.hpp"

namespace gparity::model {
namespace {

constexpr std::string_view kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> make_b64_table() {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (std::size_t i = 0; i < kB64.size(); ++i)
    t[static_cast<unsigned char>(kB64[i])] = static_cast<std::int8_t>(i);
  return t;
}
constexpr auto kB64Table = make_b64_table();

}  // namespace

std::string encode_hash_array(std::span<const std::uint64_t> values) {
  std::string out;
  out.reserve((values.size() * 8 + 2) / 3 * 4);
  std::array<unsigned char, 8> b{};
  std::uint32_t acc = 0;
  int have = 0;
  for (const std::uint64_t v : values) {
    for (int i = 0; i < 8; ++i) b[static_cast<std::size_t>(i)] = static_cast<unsigned char>(v >> (8 * i));
    for (const unsigned char c : b) {
      acc = (acc << 8) | c;
      if (++have == 3) {
        out += kB64[(acc >> 18) & 63];
        out += kB64[(acc >> 12) & 63];
        out += kB64[(acc >> 6) & 63];
        out += kB64[acc & 63];
        acc = 0;
        have = 0;
      }
    }
  }
  if (have == 1) {
    acc <<= 16;
    out += kB64[(acc >> 18) & 63];
    out += kB64[(acc >> 12) & 63];
    out += "==";
  } else if (have == 2) {
    acc <<= 8;
    out += kB64[(acc >> 18) & 63];
    out += kB64[(acc >> 12) & 63];
    out += kB64[(acc >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::vector<std::uint64_t>> decode_hash_array(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = (text.size() >= 2 && text[text.size() - 2] == '=') ? 2 : 1;
  const std::size_t bytes = text.size() / 4 * 3 - pad;
  if (bytes % 8 != 0) return std::nullopt;
  std::vector<std::uint64_t> out(bytes / 8, 0);
  auto* dst = reinterpret_cast<unsigned char*>(out.data());
  std::size_t o = 0;
  const std::size_t body = text.size() - (pad ? 4 : 0);
  for (std::size_t i = 0; i < body; i += 4) {
    const int a = kB64Table[static_cast<unsigned char>(text[i])];
    const int b = kB64Table[static_cast<unsigned char>(text[i + 1])];
    const int c = kB64Table[static_cast<unsigned char>(text[i + 2])];
    const int d = kB64Table[static_cast<unsigned char>(text[i + 3])];
    if ((a | b | c | d) < 0) return std::nullopt;
    const std::uint32_t v = (static_cast<std::uint32_t>(a) << 18) | (static_cast<std::uint32_t>(b) << 12) |
                            (static_cast<std::uint32_t>(c) << 6) | static_cast<std::uint32_t>(d);
    dst[o++] = static_cast<unsigned char>(v >> 16);
    dst[o++] = static_cast<unsigned char>(v >> 8);
    dst[o++] = static_cast<unsigned char>(v);
  }
  if (pad) {
    const std::size_t i = body;
    const int a = kB64Table[static_cast<unsigned char>(text[i])];
    const int b = kB64Table[static_cast<unsigned char>(text[i + 1])];
    const int c = pad == 1 ? kB64Table[static_cast<unsigned char>(text[i + 2])] : 0;
    if ((a | b | c) < 0) return std::nullopt;
    const std::uint32_t v = (static_cast<std::uint32_t>(a) << 18) | (static_cast<std::uint32_t>(b) << 12) |
                            (static_cast<std::uint32_t>(c) << 6);
    dst[o++] = static_cast<unsigned char>(v >> 16);
    if (pad == 1) dst[o++] = static_cast<unsigned char>(v >> 8);
  }
  if constexpr (std::endian::native == std::endian::big) {
    for (auto& v : out) v = __builtin_bswap64(v);
  }
  return out;
}

}  // namespace gparity::model
