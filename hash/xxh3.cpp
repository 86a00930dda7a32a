#include "hash/xxh3.hpp"

#include <xxhash.h>

#include <array>
#include <cstring>
#include <vector>

#include "hash/block_walk.hpp"
#include "hash/xxh3_dispatch.hpp"

namespace gparity::hash {

struct Xxh3Stream::State {
  detail::Xxh3State* s = detail::xxh3_state_new();
  State() = default;
  ~State() { detail::xxh3_state_free(s); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

std::uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept {
  return XXH3_64bits(bytes.data(), bytes.size());
}

Xxh3Stream::Xxh3Stream() : state_(std::make_unique<State>()) {}
Xxh3Stream::~Xxh3Stream() = default;
Xxh3Stream::Xxh3Stream(Xxh3Stream&&) noexcept = default;
Xxh3Stream& Xxh3Stream::operator=(Xxh3Stream&&) noexcept = default;

void Xxh3Stream::update(std::span<const std::byte> bytes) noexcept {
  detail::xxh3_state_update(state_->s, bytes.data(), bytes.size());
}

std::uint64_t Xxh3Stream::digest() const noexcept {
  return detail::xxh3_state_digest(state_->s);
}

void Xxh3Stream::reset() noexcept {
  detail::xxh3_state_reset(state_->s);
}

std::uint64_t xxh3_64(const BlockView& block) {
  const detail::BlockWalk walk(block, {}, {});
  const std::size_t es = block.elem_size;
  std::uint64_t one_shot = 0;
  bool single = false;
  walk.for_each_row(0, walk.total(), [&](const detail::Row& r) {
    if (r.count == walk.total() && (r.stride == 1 || r.count == 1)) {
      one_shot = xxh3_64(std::span<const std::byte>(r.data, static_cast<std::size_t>(r.count) * es));
      single = true;
    }
  });
  if (single) return one_shot;
  if (walk.total() == 0) return xxh3_64(std::span<const std::byte>{});

  Xxh3Stream stream;
  // Gathers strided elements through a small buffer so xxh3 sees long updates.
  std::vector<std::byte> buf(std::size_t{64} << 10);
  std::size_t used = 0;
  const auto flush = [&] {
    stream.update({buf.data(), used});
    used = 0;
  };
  walk.for_each_row(0, walk.total(), [&](const detail::Row& r) {
    if (r.stride == 1) {
      if (used) flush();
      stream.update({r.data, static_cast<std::size_t>(r.count) * es});
      return;
    }
    for (std::int64_t i = 0; i < r.count; ++i) {
      if (used + es > buf.size()) flush();
      std::memcpy(buf.data() + used, r.data + i * r.stride * static_cast<std::int64_t>(es), es);
      used += es;
    }
  });
  if (used) flush();
  return stream.digest();
}

std::string to_hex(std::uint64_t digest) {
  static constexpr std::array<char, 16> kDigits = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                   '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = kDigits[digest & 0xF];
    digest >>= 4;
  }
  return out;
}

std::optional<std::uint64_t> from_hex(std::string_view text) noexcept {
  if (text.size() != 16) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : text) {
    int d = 0;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return std::nullopt;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

}  // namespace gparity::hash
