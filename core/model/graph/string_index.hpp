#pragma once
// A flat hash index from strings (views the caller keeps alive) to 32-bit values: open addressing
// with linear probing, one array of slots, no allocation per entry. What StringPool interns with
// and the FX reader names nodes with: both look up or insert a string for nearly every token of
// a 100,000-node graph, where a node-based std::unordered_map spends most of its time allocating.
// Erase leaves a tombstone; the table grows (rehashing live entries only) at half full, so probes
// stay short. The hash is not keyed: like std::hash, crafted input can make it collide, which
// costs time linear in the colliding entries, never a wrong answer.

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace gparity::model {

class StringIndex {
 public:
  /// The value stored for `key`, or nullptr.
  [[nodiscard]] const std::uint32_t* find(std::string_view key) const noexcept {
    const Slot* s = live(key);
    return s != nullptr ? &s->value : nullptr;
  }
  [[nodiscard]] bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

  /// Adds key -> value unless the key is there (false, the old value kept).
  bool insert(std::string_view key, std::uint32_t value) {
    bool fresh = false;
    find_or_insert(
        key,
        [&] {
          fresh = true;
          return value;
        },
        [](std::string_view k) { return k; });
    return fresh;
  }

  /// The value stored for `key`, or the value `make()` gives, stored under the key view
  /// `stable(key)` (the caller's copy that outlives the index), in one probe.
  template <typename Make, typename Stable>
  std::uint32_t find_or_insert(std::string_view key, Make&& make, Stable&& stable) {
    if ((used_ + 1) * 2 > slots_.size()) grow(live_ + 1);
    const std::size_t mask = slots_.size() - 1;
    Slot* tomb = nullptr;
    for (std::size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.state == kEmpty) {
        Slot& at = tomb != nullptr ? *tomb : s;
        if (tomb == nullptr) ++used_;
        const std::uint32_t value = make();
        at = {stable(key), value, kLive};
        ++live_;
        return value;
      }
      if (s.state == kTomb) {
        if (tomb == nullptr) tomb = &s;
      } else if (s.key == key) {
        return s.value;
      }
    }
  }

  /// Removes `key`; false when it was not there.
  bool erase(std::string_view key) noexcept {
    Slot* s = const_cast<Slot*>(live(key));
    if (s == nullptr) return false;
    s->state = kTomb;
    --live_;
    return true;
  }

  /// Room for `n` entries without growing.
  void reserve(std::size_t n) {
    if ((n + 1) * 2 > slots_.size()) grow(n);
  }
  [[nodiscard]] std::size_t size() const noexcept { return live_; }

  /// Calls f(key, value&) for every entry, in no particular order.
  template <typename F>
  void for_each(F&& f) {
    for (Slot& s : slots_) {
      if (s.state == kLive) f(s.key, s.value);
    }
  }

  /// The index's hash of a string (splitmix-style mixing of 8-byte words).
  [[nodiscard]] static std::uint64_t hash(std::string_view s) noexcept {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xff51afd7ed558ccdull);
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    std::uint64_t w = 0;
    if (i < s.size()) std::memcpy(&w, s.data() + i, s.size() - i);
    h = (h ^ w) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
  }

 private:
  static constexpr std::uint8_t kEmpty = 0, kLive = 1, kTomb = 2;
  struct Slot {
    std::string_view key;
    std::uint32_t value = 0;
    std::uint8_t state = kEmpty;
  };

  /// The live slot of `key`, or nullptr.
  [[nodiscard]] const Slot* live(std::string_view key) const noexcept {
    if (slots_.empty()) return nullptr;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.state == kEmpty) return nullptr;
      if (s.state == kLive && s.key == key) return &s;
    }
  }

  void grow(std::size_t entries) {
    std::size_t n = 16;
    while (n < entries * 2 + 2) n *= 2;
    std::vector<Slot> old(n);
    old.swap(slots_);
    used_ = live_ = 0;
    const std::size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.state != kLive) continue;
      std::size_t i = hash(s.key) & mask;
      while (slots_[i].state != kEmpty) i = (i + 1) & mask;
      slots_[i] = s;
      ++used_;
      ++live_;
    }
  }

  std::vector<Slot> slots_;  // a power of two, or empty
  std::size_t used_ = 0;     // live entries and tombstones
  std::size_t live_ = 0;
};

}  // namespace gparity::model
