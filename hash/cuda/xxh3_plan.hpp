#pragma once
// Internal to hash/cuda: XXH3-64 (seed 0, default secret) restated so that a GPU can compute it,
// bit-identical to libxxhash's XXH3_64bits. Plain C++17 with no CUDA headers: the kernels
// (xxh3_kernel.cu) and the CPU-only tests (which check the split against libxxhash without a
// GPU) share every function here.
//
// The split: inputs of more than 240 bytes run XXH3's long loop, which adds each 64-byte
// stripe's contribution into 8 accumulator lanes and scrambles the lanes once per 1 KiB block.
// Additions commute, so the contribution of every full block is summed in parallel (one
// half-warp per block); one thread per lane then applies the scramble chain in block order,
// then its lane's tail (the last partial block and the final stripe); one thread merges.
// Inputs of at most 240 bytes take XXH3's short paths on one thread.

#include <cstddef>
#include <cstdint>

#include "hash/cuda/launch_plan.hpp"  // GPARITY_HD

namespace gparity::hash::cuda_detail {

/// XXH3's default secret (kSecret), 192 bytes; passed to the kernels by value.
struct Xxh3Secret {
  unsigned char bytes[192];
};

/// The secret of seed 0, taken from libxxhash itself (xxh3_cuda.cpp; CUDA builds only).
const Xxh3Secret& xxh3_default_secret();

inline constexpr std::uint64_t kXxh3StripeBytes = 64;
inline constexpr std::uint64_t kXxh3StripesPerBlock = 16;  // (192 - 64) / 8
inline constexpr std::uint64_t kXxh3BlockBytes = kXxh3StripeBytes * kXxh3StripesPerBlock;
inline constexpr std::uint64_t kXxh3MidsizeMax = 240;
inline constexpr int kXxh3Lanes = 8;

inline constexpr std::uint64_t kP32_1 = 0x9E3779B1U;
inline constexpr std::uint64_t kP32_2 = 0x85EBCA77U;
inline constexpr std::uint64_t kP32_3 = 0xC2B2AE3DU;
inline constexpr std::uint64_t kP64_1 = 0x9E3779B185EBCA87ULL;
inline constexpr std::uint64_t kP64_2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr std::uint64_t kP64_3 = 0x165667B19E3779F9ULL;
inline constexpr std::uint64_t kP64_4 = 0x85EBCA77C2B2AE63ULL;
inline constexpr std::uint64_t kP64_5 = 0x27D4EB2F165667C5ULL;
inline constexpr std::uint64_t kPMx1 = 0x165667919E3779F9ULL;
inline constexpr std::uint64_t kPMx2 = 0x9FB21C651E98DF25ULL;

/// One input of a batch: `size` bytes at device address `data`; its full blocks' lane sums sit
/// at contributions[first_block * 8 ...] (full_blocks of them).
struct Xxh3Segment {
  const unsigned char* data;
  std::uint64_t size;
  std::uint64_t first_block;
  std::uint64_t full_blocks;
};

/// Blocks summed in parallel: every 1 KiB block before the one holding the last byte.
GPARITY_HD constexpr std::uint64_t xxh3_full_blocks(std::uint64_t len) {
  return len > kXxh3MidsizeMax ? (len - 1) / kXxh3BlockBytes : 0;
}

// Byte-wise little-endian reads: the tail and the secret's odd offsets are not aligned.
GPARITY_HD std::uint64_t xxh3_read64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
GPARITY_HD std::uint32_t xxh3_read32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

GPARITY_HD std::uint64_t xxh3_mul128_fold64(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  __extension__ typedef unsigned __int128 u128;
  const u128 p = static_cast<u128>(a) * b;
  return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64);
#endif
}

GPARITY_HD std::uint64_t xxh3_avalanche(std::uint64_t h) {
  h ^= h >> 37;
  h *= kPMx1;
  return h ^ (h >> 32);
}
GPARITY_HD std::uint64_t xxh64_avalanche(std::uint64_t h) {
  h ^= h >> 33;
  h *= kP64_2;
  h ^= h >> 29;
  h *= kP64_3;
  return h ^ (h >> 32);
}
GPARITY_HD std::uint64_t xxh3_rotl64(std::uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
GPARITY_HD std::uint64_t xxh3_rrmxmx(std::uint64_t h, std::uint64_t len) {
  h ^= xxh3_rotl64(h, 49) ^ xxh3_rotl64(h, 24);
  h *= kPMx2;
  h ^= (h >> 35) + len;
  h *= kPMx2;
  return h ^ (h >> 28);
}
GPARITY_HD std::uint64_t xxh3_mix16(const unsigned char* in, const unsigned char* sec) {
  return xxh3_mul128_fold64(xxh3_read64(in) ^ xxh3_read64(sec), xxh3_read64(in + 8) ^ xxh3_read64(sec + 8));
}
GPARITY_HD std::uint64_t xxh3_swap64(std::uint64_t x) {
  std::uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r = (r << 8) | ((x >> (8 * i)) & 0xFF);
  return r;
}

/// XXH3_64bits of an input of at most 240 bytes (seed 0).
GPARITY_HD std::uint64_t xxh3_short(const unsigned char* p, std::uint64_t len, const Xxh3Secret& secret) {
  const unsigned char* s = secret.bytes;
  if (len == 0) return xxh64_avalanche(xxh3_read64(s + 56) ^ xxh3_read64(s + 64));
  if (len <= 3) {
    const std::uint32_t combined =
        (static_cast<std::uint32_t>(p[0]) << 16) | (static_cast<std::uint32_t>(p[len >> 1]) << 24) |
        static_cast<std::uint32_t>(p[len - 1]) | (static_cast<std::uint32_t>(len) << 8);
    const std::uint64_t bitflip = xxh3_read32(s) ^ xxh3_read32(s + 4);
    return xxh64_avalanche(combined ^ bitflip);
  }
  if (len <= 8) {
    const std::uint64_t in64 = xxh3_read32(p + len - 4) + (static_cast<std::uint64_t>(xxh3_read32(p)) << 32);
    return xxh3_rrmxmx(in64 ^ (xxh3_read64(s + 8) ^ xxh3_read64(s + 16)), len);
  }
  if (len <= 16) {
    const std::uint64_t lo = xxh3_read64(p) ^ (xxh3_read64(s + 24) ^ xxh3_read64(s + 32));
    const std::uint64_t hi = xxh3_read64(p + len - 8) ^ (xxh3_read64(s + 40) ^ xxh3_read64(s + 48));
    return xxh3_avalanche(len + xxh3_swap64(lo) + hi + xxh3_mul128_fold64(lo, hi));
  }
  std::uint64_t acc = len * kP64_1;
  if (len <= 128) {
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          acc += xxh3_mix16(p + 48, s + 96);
          acc += xxh3_mix16(p + len - 64, s + 112);
        }
        acc += xxh3_mix16(p + 32, s + 64);
        acc += xxh3_mix16(p + len - 48, s + 80);
      }
      acc += xxh3_mix16(p + 16, s + 32);
      acc += xxh3_mix16(p + len - 32, s + 48);
    }
    acc += xxh3_mix16(p, s);
    acc += xxh3_mix16(p + len - 16, s + 16);
    return xxh3_avalanche(acc);
  }
  for (std::uint64_t i = 0; i < 8; ++i) acc += xxh3_mix16(p + 16 * i, s + 16 * i);
  std::uint64_t acc_end = xxh3_mix16(p + len - 16, s + 136 - 17);
  acc = xxh3_avalanche(acc);
  for (std::uint64_t i = 8; i < len / 16; ++i) acc_end += xxh3_mix16(p + 16 * i, s + 16 * (i - 8) + 3);
  return xxh3_avalanche(acc + acc_end);
}

GPARITY_HD std::uint64_t xxh3_init_acc(int lane) {
  switch (lane) {
    case 0: return kP32_3;
    case 1: return kP64_1;
    case 2: return kP64_2;
    case 3: return kP64_3;
    case 4: return kP64_4;
    case 5: return kP32_2;
    case 6: return kP64_5;
    default: return kP32_1;
  }
}

/// What one stripe adds to lane j: its partner word (j ^ 1) plus the keyed 32x32 product of
/// its own word.
GPARITY_HD std::uint64_t xxh3_lane_contribution(std::uint64_t word, std::uint64_t partner,
                                                std::uint64_t key) {
  const std::uint64_t dk = word ^ key;
  return partner + (dk & 0xFFFFFFFFULL) * (dk >> 32);
}

/// The scramble applied to a lane after each full block; `key` is the secret's word at byte
/// 128 + 8 * lane.
GPARITY_HD std::uint64_t xxh3_scramble(std::uint64_t acc, std::uint64_t key) {
  acc ^= acc >> 47;
  acc ^= key;
  return acc * kP32_1;
}

/// A lane's chain state in 32-bit halves: z = acc + (the next block's lane sum), the value the
/// next scramble takes.
struct Xxh3Halves {
  std::uint32_t lo, hi;
};

/// scramble(z) + next_sum, with the key's halves and kP32_1 passed in. Equal to
/// xxh3_scramble(z, key) + next_sum (tests check it); written so that a step's dependent path on a
/// GPU can be three instructions: the high half's product and the next sum go into one 64-bit
/// addend (off that path), then the shift-xor of the low half and one IMAD.WIDE.U32 with that
/// addend. `p` is a parameter rather than the constant: an earlier form with the constant inline
/// compiled to a multiply by the immediate followed by a separate 64-bit add (seen in its SASS),
/// and ran at 19.8 ns a block on an H200 against 16.1 for this one (whose SASS was not read).
GPARITY_HD Xxh3Halves xxh3_scramble_add(Xxh3Halves z, std::uint64_t next_sum, std::uint32_t key_lo,
                                        std::uint32_t key_hi, std::uint32_t p) {
  const std::uint32_t yh = z.hi ^ key_hi;
  const std::uint32_t yl = z.lo ^ (z.hi >> 15) ^ key_lo;
  const std::uint64_t addend =
      (static_cast<std::uint64_t>(yh * p + static_cast<std::uint32_t>(next_sum >> 32)) << 32) |
      static_cast<std::uint32_t>(next_sum);
#if defined(__CUDA_ARCH__)
  std::uint64_t w;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(w) : "r"(yl), "r"(p), "l"(addend));
#else
  const std::uint64_t w = static_cast<std::uint64_t>(yl) * p + addend;
#endif
  return {static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(w >> 32)};
}

/// Where an input's tail starts: the bytes from here to `len` are all XXH3 reads after the full
/// blocks' sums (the last partial block and the last 64 bytes, at most 1,088 bytes; an input of at
/// most 240 bytes is all tail). The host-finished digests copy only these and the block sums.
GPARITY_HD constexpr std::uint64_t xxh3_tail_start(std::uint64_t len) {
  if (len <= kXxh3MidsizeMax) return 0;
  const std::uint64_t last_block = xxh3_full_blocks(len) * kXxh3BlockBytes;
  return last_block < len - kXxh3StripeBytes ? last_block : len - kXxh3StripeBytes;
}

/// Adds the tail to lane j (after the full blocks' scramble chain): the stripes of the last
/// partial block, then the input's last 64 bytes with the secret's "last stripe" key. len > 240;
/// `tail` holds the input's bytes from xxh3_tail_start(len) on.
GPARITY_HD std::uint64_t xxh3_tail_lane_from(std::uint64_t acc, int j, const unsigned char* tail,
                                             std::uint64_t len, const Xxh3Secret& secret) {
  const std::uint64_t start = xxh3_tail_start(len);
  const std::uint64_t full = xxh3_full_blocks(len);
  const std::uint64_t stripes = ((len - 1) - full * kXxh3BlockBytes) / kXxh3StripeBytes;
  const unsigned char* last_block = tail + (full * kXxh3BlockBytes - start);
  const auto add = [&](const unsigned char* in, const unsigned char* sec) {
    acc += xxh3_lane_contribution(xxh3_read64(in + 8 * j), xxh3_read64(in + 8 * (j ^ 1)),
                                  xxh3_read64(sec + 8 * j));
  };
  for (std::uint64_t n = 0; n < stripes; ++n) add(last_block + n * kXxh3StripeBytes, secret.bytes + 8 * n);
  add(tail + (len - kXxh3StripeBytes - start), secret.bytes + 192 - kXxh3StripeBytes - 7);
  return acc;
}

/// xxh3_tail_lane_from with the whole input at `p`.
GPARITY_HD std::uint64_t xxh3_tail_lane(std::uint64_t acc, int j, const unsigned char* p, std::uint64_t len,
                                        const Xxh3Secret& secret) {
  return xxh3_tail_lane_from(acc, j, p + xxh3_tail_start(len), len, secret);
}

/// Merges the final lanes into the digest of an input of `len` (> 240) bytes.
GPARITY_HD std::uint64_t xxh3_merge(const std::uint64_t (&acc)[kXxh3Lanes], std::uint64_t len,
                                    const Xxh3Secret& secret) {
  const unsigned char* s = secret.bytes;
  std::uint64_t h = len * kP64_1;
  for (int i = 0; i < 4; ++i) {
    h += xxh3_mul128_fold64(acc[2 * i] ^ xxh3_read64(s + 11 + 16 * i),
                            acc[2 * i + 1] ^ xxh3_read64(s + 19 + 16 * i));
  }
  return xxh3_avalanche(h);
}

/// The kernels' split run on the host, for tests: the full blocks' lane sums, the scramble
/// chain in halves (xxh3_scramble_add), then the tail. Equals XXH3_64bits(p, len).
inline std::uint64_t xxh3_by_blocks(const unsigned char* p, std::uint64_t len, const Xxh3Secret& secret) {
  if (len <= kXxh3MidsizeMax) return xxh3_short(p, len, secret);
  const auto block_sum = [&](std::uint64_t b, int j) {
    std::uint64_t sum = 0;
    for (std::uint64_t st = 0; st < kXxh3StripesPerBlock; ++st) {
      const unsigned char* in = p + b * kXxh3BlockBytes + st * kXxh3StripeBytes;
      sum += xxh3_lane_contribution(xxh3_read64(in + 8 * j), xxh3_read64(in + 8 * (j ^ 1)),
                                    xxh3_read64(secret.bytes + 8 * (st + static_cast<std::uint64_t>(j))));
    }
    return sum;
  };
  std::uint64_t acc[kXxh3Lanes];
  const std::uint64_t blocks = xxh3_full_blocks(len);
  for (int j = 0; j < kXxh3Lanes; ++j) {
    acc[j] = xxh3_init_acc(j);
    if (blocks == 0) continue;
    // As chain_kernel walks it: z = acc + sum(0), then scramble-and-add block by block.
    const std::uint64_t key = xxh3_read64(secret.bytes + 128 + 8 * j);
    const auto key_lo = static_cast<std::uint32_t>(key);
    const auto key_hi = static_cast<std::uint32_t>(key >> 32);
    const auto p32 = static_cast<std::uint32_t>(kP32_1);
    const std::uint64_t z0 = acc[j] + block_sum(0, j);
    Xxh3Halves z{static_cast<std::uint32_t>(z0), static_cast<std::uint32_t>(z0 >> 32)};
    for (std::uint64_t b = 1; b < blocks; ++b) z = xxh3_scramble_add(z, block_sum(b, j), key_lo, key_hi, p32);
    z = xxh3_scramble_add(z, 0, key_lo, key_hi, p32);
    acc[j] = (static_cast<std::uint64_t>(z.hi) << 32) | z.lo;
  }
  for (int j = 0; j < kXxh3Lanes; ++j) acc[j] = xxh3_tail_lane(acc[j], j, p, len, secret);
  return xxh3_merge(acc, len, secret);
}

/// The digest of an input of `len` bytes from its full blocks' lane sums (`sums`: 8 words a block,
/// lane j of block b at sums[8 * b + j], as block_sums_kernel writes them) and its tail (bytes from
/// xxh3_tail_start(len) on): the scramble chains walked on the host, all eight lanes a block at a
/// time (independent chains, so a core overlaps them: 2.7-7 ns a KiB). Equals XXH3_64bits.
inline std::uint64_t xxh3_from_block_sums(const std::uint64_t* sums, const unsigned char* tail,
                                          std::uint64_t len, const Xxh3Secret& secret) {
  if (len <= kXxh3MidsizeMax) return xxh3_short(tail, len, secret);
  std::uint64_t acc[kXxh3Lanes];
  std::uint64_t key[kXxh3Lanes];
  for (int j = 0; j < kXxh3Lanes; ++j) {
    acc[j] = xxh3_init_acc(j);
    key[j] = xxh3_read64(secret.bytes + 128 + 8 * j);
  }
  const std::uint64_t blocks = xxh3_full_blocks(len);
  for (std::uint64_t b = 0; b < blocks; ++b) {
    const std::uint64_t* s = sums + b * kXxh3Lanes;
    // Unrolled, the lanes stay in registers and a core overlaps their chains: 2.7 ns a block on
    // the dev machine's EPYC against 10.4 with the loop kept (each lane then went through memory).
#if defined(__GNUC__) && !defined(__CUDACC__)
#pragma GCC unroll 8
#endif
    for (int j = 0; j < kXxh3Lanes; ++j) acc[j] = xxh3_scramble(acc[j] + s[j], key[j]);
  }
  for (int j = 0; j < kXxh3Lanes; ++j) acc[j] = xxh3_tail_lane_from(acc[j], j, tail, len, secret);
  return xxh3_merge(acc, len, secret);
}

/// Enqueues the digests of `n` segments (host array; their first_block fields numbered over
/// `total_blocks` full blocks) on `stream`, writing digest i to device_out[i * out_stride].
/// The block sums go to a scratch the calling thread keeps per device and stream (a
/// stream-ordered one under graph capture); returns without waiting. With a `chain_stream` other
/// than `stream`, the block sums run on `stream` and the scramble chains on `chain_stream` once
/// they are done, so that work enqueued on `stream` next runs beside the chains; the digests are
/// then written in `chain_stream`'s order (the caller joins it).
void launch_xxh3(const Xxh3Segment* segments, std::size_t n, std::uint64_t total_blocks,
                 const Xxh3Secret& secret, std::uint64_t* device_out, std::size_t out_stride, void* stream,
                 void* chain_stream = nullptr);

/// The device half of host-finished digests (xxh3_host.hpp): enqueues on `stream` the lane sums
/// of every segment's full blocks into `sums` (device; segment i's at sums + 8 * first_block, as
/// launch_xxh3 numbers them) and copies each segment's tail (its bytes from xxh3_tail_start on) to
/// `tails + tail_offsets[i]` (device). Once these are done the segments' bytes are not read again.
void launch_xxh3_sums(const Xxh3Segment* segments, std::size_t n, const std::uint64_t* tail_offsets,
                      const Xxh3Secret& secret, std::uint64_t* sums, unsigned char* tails, void* stream);

}  // namespace gparity::hash::cuda_detail
