#pragma once
// XXH3-64 (seed 0) fingerprints of raw bytes: one-shot, streaming, and over strided element
// views in row-major element order. Digests equal `xxhsum -H3` on the same bytes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hash/block_view.hpp"

namespace gparity::hash {

/// XXH3-64 with seed 0 over a contiguous buffer.
std::uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept;

/// XXH3-64 over the elements of a strided block, visited in row-major order. Equals xxh3_64 of
/// the same elements copied into a contiguous buffer.
std::uint64_t xxh3_64(const BlockView& block);

/// 16 lowercase hex digits, as xxhsum prints them.
std::string to_hex(std::uint64_t digest);

/// Parses exactly 16 hex digits (either case); nullopt otherwise.
std::optional<std::uint64_t> from_hex(std::string_view text) noexcept;

/// Streaming XXH3-64 for data that arrives in chunks. The digest of a stream equals the one-shot
/// digest of the concatenated chunks.
class Xxh3Stream {
 public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(Xxh3Stream&&) noexcept;
  Xxh3Stream& operator=(Xxh3Stream&&) noexcept;
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;

  void update(std::span<const std::byte> bytes) noexcept;
  /// Digest of everything so far; the stream can keep going afterwards.
  [[nodiscard]] std::uint64_t digest() const noexcept;
  void reset() noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gparity::hash
