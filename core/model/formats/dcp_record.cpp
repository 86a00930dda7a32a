#include "core/model/formats/dcp_record.hpp"

#include <libdeflate.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/pickle/pickle_machine.hpp"
#include "core/model/formats/zip_archive.hpp"

namespace gparity::model {
namespace {

constexpr std::uint64_t kMaxPickleBytes = 64ULL << 20;

// Little-endian field of `n` bytes at `at`, nullopt past the end.
std::optional<std::uint64_t> le(std::span<const std::byte> b, std::uint64_t at, unsigned n) {
  if (at > b.size() || n > b.size() - at) return std::nullopt;
  std::uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(b[at + i]) << (8 * i);
  return v;
}

bool same_name(std::span<const std::byte> b, std::uint64_t at, std::uint64_t len, std::string_view name) {
  return len == name.size() && at <= b.size() && len <= b.size() - at &&
         std::memcmp(b.data() + at, name.data(), name.size()) == 0;
}

struct ZipEntry {
  std::string_view name;             // into the zip's bytes
  std::uint64_t data = 0, size = 0;  // where its bytes start in the zip, and how many (as stored)
  std::uint32_t crc = 0;
  bool stored = false;  // uncompressed, unencrypted: the bytes are the member
};

// Every member of the zip held in `zip`, from its central directory (zip64 too) and local
// headers: each local header's name must match its central entry, and each member's stored
// bytes must lie inside the zip. nullopt when anything is off (the caller then reads through
// the zip library, which reports the damage).
std::optional<std::vector<ZipEntry>> zip_entries(std::span<const std::byte> zip) {
  constexpr std::uint64_t kEocd = 0x06054b50, kEocd64 = 0x06064b50, kLocator = 0x07064b50;
  constexpr std::uint64_t kCentral = 0x02014b50, kLocal = 0x04034b50, kSat = 0xFFFFFFFF;
  if (zip.size() < 22) return std::nullopt;
  std::uint64_t eocd = zip.size() - 22;
  const std::uint64_t lowest = eocd > 0xFFFF ? eocd - 0xFFFF : 0;
  while (le(zip, eocd, 4) != kEocd) {
    if (eocd == lowest) return std::nullopt;
    --eocd;
  }
  std::uint64_t entries = *le(zip, eocd + 10, 2);
  std::uint64_t cd = *le(zip, eocd + 16, 4);
  if (entries == 0xFFFF || cd == kSat) {
    if (eocd < 20 || le(zip, eocd - 20, 4) != kLocator) return std::nullopt;
    const auto e64 = le(zip, eocd - 20 + 8, 8);
    if (!e64 || le(zip, *e64, 4) != kEocd64) return std::nullopt;
    const auto n64 = le(zip, *e64 + 32, 8);
    const auto cd64 = le(zip, *e64 + 48, 8);
    if (!n64 || !cd64) return std::nullopt;
    entries = *n64;
    cd = *cd64;
  }
  if (entries > zip.size() / 46) return std::nullopt;
  std::vector<ZipEntry> out;
  for (std::uint64_t i = 0, at = cd; i < entries; ++i) {
    if (le(zip, at, 4) != kCentral) return std::nullopt;
    const auto flags = le(zip, at + 8, 2), method = le(zip, at + 10, 2), crc = le(zip, at + 16, 4);
    auto csize = le(zip, at + 20, 4), usize = le(zip, at + 24, 4);
    const auto nlen = le(zip, at + 28, 2), elen = le(zip, at + 30, 2), clen = le(zip, at + 32, 2);
    auto lho = le(zip, at + 42, 4);
    if (!flags || !method || !crc || !csize || !usize || !nlen || !elen || !clen || !lho) return std::nullopt;
    const std::uint64_t name_at = at + 46;
    if (*usize == kSat || *csize == kSat || *lho == kSat) {
      // zip64 extra (id 1): the saturated fields, 8 bytes each, in this order.
      bool found = false;
      for (std::uint64_t x = name_at + *nlen, end = x + *elen; x + 4 <= end && !found;) {
        const auto id = le(zip, x, 2), len = le(zip, x + 2, 2);
        if (!id || !len) return std::nullopt;
        if (*id == 1) {
          std::uint64_t f = x + 4;
          const std::uint64_t f_end = f + *len;
          for (auto* field : {&usize, &csize, &lho}) {
            if (**field != kSat) continue;
            if (f + 8 > f_end) return std::nullopt;
            *field = le(zip, f, 8);
            f += 8;
          }
          found = true;
        }
        x += 4 + *len;
      }
      if (!found || !usize || !csize || !lho) return std::nullopt;
    }
    ZipEntry e;
    if (name_at + *nlen > zip.size()) return std::nullopt;
    e.name = std::string_view(reinterpret_cast<const char*>(zip.data() + name_at), *nlen);
    // A crafted name ("../x", an absolute path): the zip library's path refuses it by name.
    if (!unsafe_member_reason(std::string(e.name)).empty()) return std::nullopt;
    const auto lnlen = le(zip, *lho + 26, 2), lelen = le(zip, *lho + 28, 2);
    if (le(zip, *lho, 4) != kLocal || !lnlen || !lelen || !same_name(zip, *lho + 30, *lnlen, e.name))
      return std::nullopt;
    e.data = *lho + 30 + *lnlen + *lelen;
    e.size = *csize;
    e.crc = static_cast<std::uint32_t>(*crc);
    if (e.data > zip.size() || e.size > zip.size() - e.data) return std::nullopt;
    e.stored = *method == 0 && (*flags & 1) == 0 && *csize == *usize;
    out.push_back(e);
    at = name_at + *nlen + *elen + *clen;
  }
  return out;
}

struct InPlace {
  std::uint64_t offset, size;
  std::uint32_t crc;
};

// A torch.save record read through the zip library: for records with a deflated or otherwise
// unusual member, and for the damage reports of broken ones.
class Record {
 public:
  Record(std::span<const std::byte> bytes, const std::string& where)
      : where_(where), zip_(open(bytes, where)) {}

  [[noreturn]] void fail(const std::string& problem) const { throw InputError(where_, problem); }

  /// The archive's folder prefix ("archive/" or "<name>/"), found from its data.pkl.
  std::string prefix() const {
    for (const auto& name : zip_.members()) {
      if (name == "data.pkl") return "";
      if (name.ends_with("/data.pkl") && name.find('/') == name.size() - 9)
        return name.substr(0, name.size() - 8);
    }
    fail("torch.save record without a data.pkl member");
  }

  /// Reads a member whose size is at most `cap` into `out` (resized to the member's size).
  void read(const std::string& member, std::uint64_t cap, std::vector<std::byte>& out) const {
    const ZipMemberInfo* info = zip_.info(member);
    if (!info) fail("no member \"" + member + "\"");
    if (info->size > cap)
      fail("member \"" + member + "\" declares " + std::to_string(info->size) + " bytes, more than the " +
           std::to_string(cap) + " that can hold");
    zip_.read_into(member, cap, out);
  }

  /// A member's bytes, read into `scratch`.
  std::span<const std::byte> member(const std::string& member, std::uint64_t cap,
                                    std::vector<std::byte>& scratch) const {
    read(member, cap, scratch);
    return scratch;
  }

  /// Where a member stored uncompressed and unencrypted lies in `bytes` (the zip this record was
  /// opened on), with its size and CRC; nullopt for anything else.
  std::optional<InPlace> stored(const std::string& member, std::span<const std::byte> bytes) const {
    const ZipMemberInfo* info = zip_.info(member);
    if (!info || !info->stored()) return std::nullopt;
    const auto entries = zip_entries(bytes);
    if (!entries) return std::nullopt;
    for (const auto& e : *entries)
      if (e.name == member)
        return e.stored && e.size == info->size ? std::optional(InPlace{e.data, e.size, info->crc})
                                                : std::nullopt;
    return std::nullopt;
  }

  bool has(const std::string& member) const { return zip_.contains(member); }

 private:
  static ZipArchive open(std::span<const std::byte> bytes, const std::string& where) {
    try {
      // A storage member can be as large as the record (deflated ones larger: read() caps them).
      return ZipArchive(bytes, where, ZipLimits{.max_members = 65536, .max_member_bytes = UINT64_MAX});
    } catch (const InputError& e) {
      if (e.source() != where) throw;  // a member's problem names the member
      throw InputError(where, "not a torch.save zip record: " + e.problem());
    }
  }
  std::string where_;
  ZipArchive zip_;
};

// A torch.save record whose every member is stored (what torch.save writes), read in place
// without the zip library: opening an archive through it costs more than a small chunk's
// hashing (it copies every central entry out and checks each local header again on open).
// Same interface as Record; member bytes are CRC-checked as the zip library does.
class StoredZip {
 public:
  StoredZip(std::span<const std::byte> bytes, const std::string& where, std::vector<ZipEntry> entries)
      : bytes_(bytes), where_(where), entries_(std::move(entries)) {}

  [[noreturn]] void fail(const std::string& problem) const { throw InputError(where_, problem); }

  std::string prefix() const {
    for (const auto& e : entries_) {
      if (e.name == "data.pkl") return "";
      if (e.name.ends_with("/data.pkl") && e.name.find('/') == e.name.size() - 9)
        return std::string(e.name.substr(0, e.name.size() - 8));
    }
    fail("torch.save record without a data.pkl member");
  }

  bool has(const std::string& member) const { return find(member) != nullptr; }

  /// A member's bytes, in place (CRC-checked): `scratch` is not needed.
  std::span<const std::byte> member(const std::string& member, std::uint64_t cap,
                                    std::vector<std::byte>&) const {
    const ZipEntry* e = find(member);
    if (!e) fail("no member \"" + member + "\"");
    if (e->size > cap)
      fail("member \"" + member + "\" declares " + std::to_string(e->size) + " bytes, more than the " +
           std::to_string(cap) + " that can hold");
    const auto data = bytes_.subspan(e->data, e->size);
    if (const auto crc = zip_crc32(0, data); crc != e->crc)
      check_storage_crc32(crc, e->crc, where_ + "!" + member);
    return data;
  }

  void read(const std::string& name, std::uint64_t cap, std::vector<std::byte>& out) const {
    const auto data = member(name, cap, out);
    out.assign(data.begin(), data.end());
  }

  std::optional<InPlace> stored(const std::string& member, std::span<const std::byte>) const {
    const ZipEntry* e = find(member);
    if (!e) return std::nullopt;
    return InPlace{e->data, e->size, e->crc};
  }

 private:
  const ZipEntry* find(const std::string& member) const {
    for (const auto& e : entries_)
      if (e.name == member) return &e;
    return nullptr;
  }
  std::span<const std::byte> bytes_;
  std::string where_;
  std::vector<ZipEntry> entries_;
};

// Highest element offset the view touches past storage_offset, or -1 for an empty view.
std::int64_t view_extent(const pickle::TensorRecord& t) {
  std::int64_t last = 0;
  for (std::size_t d = 0; d < t.size.size(); ++d) {
    if (t.size[d] == 0) return -1;
    if (t.size[d] < 0 || t.stride[d] < 0) return -2;
    if (t.size[d] > 1 && t.stride[d] > (INT64_MAX - last) / (t.size[d] - 1)) return -2;
    last += (t.size[d] - 1) * t.stride[d];
  }
  return last;
}

}  // namespace

#if defined(__x86_64__)
namespace {

// Zip's CRC-32 folded 256 bytes at a time with carry-less multiplies on 512-bit vectors
// (VPCLMULQDQ; Debian 12's libdeflate 1.14 folds 16 bytes at a time). The message, with the
// incoming CRC's complement XORed into its first 4 bytes, is congruent modulo the CRC polynomial
// to its folded 16-byte remainder followed by the unfolded tail, so libdeflate's CRC of those
// (started from 0xFFFFFFFF, i.e. no pre-inversion) is the CRC of the whole. Fold constants for
// a distance of D bits (reflected): x^(D+32) mod P and x^(D-32) mod P, bit-reflected, times x.
#define GPARITY_VPCLMUL [[gnu::target("avx512f,vpclmulqdq,pclmul"), gnu::always_inline]] inline

GPARITY_VPCLMUL __m512i fold(__m512i acc, __m512i k, __m512i next) noexcept {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00),
                                   _mm512_clmulepi64_epi128(acc, k, 0x11), next, 0x96);  // a ^ b ^ c
}

GPARITY_VPCLMUL __m128i fold128(__m128i acc, __m128i k, __m128i next) noexcept {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)),
                       next);
}

GPARITY_VPCLMUL __m512i fold_constants(std::uint64_t lo, std::uint64_t hi) noexcept {
  const auto l = static_cast<long long>(lo), h = static_cast<long long>(hi);
  return _mm512_set_epi64(h, l, h, l, h, l, h, l);
}

GPARITY_VPCLMUL __m512i load64(const std::byte* p) noexcept {
  return _mm512_loadu_si512(p);
}

#undef GPARITY_VPCLMUL

// At least 256 bytes.
[[gnu::target("avx512f,vpclmulqdq,pclmul")]] std::uint32_t crc32_vpclmul(std::uint32_t crc,
                                                                         const std::byte* p,
                                                                         std::size_t n) noexcept {
  const __m512i k2048 = fold_constants(0x11542778a, 0x1322d1430);
  const __m512i k512 = fold_constants(0x154442bd4, 0x1c6e41596);
  const __m128i k128 = _mm_set_epi64x(0xccaa009e, 0x1751997d0);
  __m512i a0 = _mm512_xor_si512(load64(p), _mm512_castsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  __m512i a1 = load64(p + 64), a2 = load64(p + 128), a3 = load64(p + 192);
  std::size_t at = 256;
  for (; at + 256 <= n; at += 256) {
    a0 = fold(a0, k2048, load64(p + at));
    a1 = fold(a1, k2048, load64(p + at + 64));
    a2 = fold(a2, k2048, load64(p + at + 128));
    a3 = fold(a3, k2048, load64(p + at + 192));
  }
  __m512i a = fold(fold(fold(a0, k512, a1), k512, a2), k512, a3);
  for (; at + 64 <= n; at += 64) a = fold(a, k512, load64(p + at));
  alignas(64) __m128i lanes[4];
  _mm512_store_si512(lanes, a);
  __m128i r = fold128(lanes[0], k128, lanes[1]);
  r = fold128(r, k128, lanes[2]);
  r = fold128(r, k128, lanes[3]);
  alignas(16) std::byte rest[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(rest), r);
  const std::uint32_t c = libdeflate_crc32(0xFFFFFFFF, rest, sizeof rest);
  return libdeflate_crc32(c, p + at, n - at);
}

bool has_vpclmul() noexcept {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
  return yes;
}

}  // namespace
#endif

std::uint32_t zip_crc32(std::uint32_t crc, std::span<const std::byte> bytes) noexcept {
#if defined(__x86_64__)
  if (bytes.size() >= 1024 && has_vpclmul()) return crc32_vpclmul(crc, bytes.data(), bytes.size());
#endif
  return libdeflate_crc32(crc, bytes.data(), bytes.size());
}

void check_storage_crc32(std::uint32_t actual, std::uint32_t expected, const std::string& where) {
  if (actual == expected) return;
  char text[64];
  std::snprintf(text, sizeof text, "CRC-32 %08x, but the zip records %08x", actual, expected);
  throw InputError(where, std::string("corrupt storage bytes: ") + text);
}

namespace {

template <class Zip>
TorchSaveTensor read_tensor(const Zip& rec, std::span<const std::byte> bytes, const std::string& where,
                            std::vector<std::byte>& buffer, CrcCheck crc) {
  const std::string prefix = rec.prefix();
  std::vector<std::byte> scratch;  // members read through the zip library; stored ones in place
  if (rec.has(prefix + "byteorder")) {
    const auto bo = rec.member(prefix + "byteorder", 16, scratch);
    const std::string_view order(reinterpret_cast<const char*>(bo.data()), bo.size());
    if (order != "little") rec.fail("storage byte order \"" + std::string(order) + "\" is not little-endian");
  }
  const auto pkl = rec.member(prefix + "data.pkl", kMaxPickleBytes, scratch);
  const auto doc = pickle::decode(pkl, where + "!" + prefix + "data.pkl");
  pickle::require_allowed(doc, pickle::torch_save_allow_list());
  TorchSaveTensor out;
  out.record = pickle::as_tensor(doc, *doc.root);
  const auto& t = out.record;
  const std::size_t elem = dtype_size(t.dtype);
  const std::int64_t last = view_extent(t);
  if (last == -2) rec.fail("tensor size/stride are negative or overflow");
  if (t.storage_offset < 0 || t.storage_numel < 0) rec.fail("negative storage offset or numel");
  if (last >= 0 && (t.storage_offset > t.storage_numel - 1 || last > t.storage_numel - 1 - t.storage_offset))
    rec.fail("tensor view (offset " + std::to_string(t.storage_offset) + ", size/stride) reaches past its " +
             std::to_string(t.storage_numel) + "-element storage");
  if (static_cast<std::uint64_t>(t.storage_numel) > bytes.size() / elem)
    rec.fail("storage of " + std::to_string(t.storage_numel) + " elements is larger than the record");
  const auto need = static_cast<std::uint64_t>(t.storage_numel) * elem;
  const std::string member = prefix + "data/" + t.storage_key;
  if (const auto in_place = rec.stored(member, bytes)) {
    if (in_place->size < need)
      rec.fail("storage \"" + t.storage_key + "\" holds " + std::to_string(in_place->size) + " bytes, " +
               std::to_string(t.storage_numel) + " elements need " + std::to_string(need));
    out.storage = bytes.subspan(in_place->offset, in_place->size);
    if (crc == CrcCheck::now)
      check_storage_crc32(zip_crc32(0, out.storage), in_place->crc, where + "!" + member);
    else
      out.unchecked_crc32 = in_place->crc;
    return out;
  }
  rec.read(member, bytes.size(), buffer);
  if (buffer.size() < need)
    rec.fail("storage \"" + t.storage_key + "\" holds " + std::to_string(buffer.size()) + " bytes, " +
             std::to_string(t.storage_numel) + " elements need " + std::to_string(need));
  out.storage = std::span<const std::byte>(buffer);
  return out;
}

}  // namespace

TorchSaveTensor read_torch_save_tensor(std::span<const std::byte> bytes, const std::string& where,
                                       std::vector<std::byte>& buffer, CrcCheck crc) {
  if (auto entries = zip_entries(bytes)) {
    bool all_stored = true;
    for (const auto& e : *entries) all_stored = all_stored && e.stored;
    if (all_stored)
      return read_tensor(StoredZip(bytes, where, std::move(*entries)), bytes, where, buffer, crc);
  }
  return read_tensor(Record(bytes, where), bytes, where, buffer, crc);
}

}  // namespace gparity::model
