#!/usr/bin/env python3
"""Reference implementation of gparity's shard-invariant hash v1 (docs/hashing.md).

Deliberately plain Python, written from the spec and not from the C++ code, so the tests and the
bundled samples have an independent second implementation to agree with.
"""

MASK64 = (1 << 64) - 1
SEED = 0x6770617269747931  # b"gparity1" as a big-endian integer
INDEX_STEP = 0x9E3779B97F4A7C15
ROUND1, ROUND2, ROUND3 = 0x85EBCA6B, 0xC2B2AE35, 0x27D4EB2F


def feistel_round(v: int, k: int) -> int:
    p = v * k
    return (p & 0xFFFFFFFF) ^ (p >> 32)


def feistel_mix(x: int) -> int:
    hi, lo = x >> 32, x & 0xFFFFFFFF
    hi ^= feistel_round(lo, ROUND1)
    lo ^= feistel_round(hi, ROUND2)
    hi ^= feistel_round(lo, ROUND3)
    return (hi << 32) | lo


def mix(index: int, bits: int) -> int:
    key = (SEED + index * INDEX_STEP) & MASK64
    return feistel_mix(key ^ bits)


def shard_hash(raw: bytes, elem_size: int, first_index: int = 0) -> int:
    """Hash of consecutive little-endian elements whose global indices start at first_index."""
    assert len(raw) % elem_size == 0
    total = 0
    for i in range(len(raw) // elem_size):
        bits = int.from_bytes(raw[i * elem_size:(i + 1) * elem_size], "little")
        total = (total + mix(first_index + i, bits)) & MASK64
    return total


if __name__ == "__main__":
    import sys
    data = open(sys.argv[1], "rb").read()
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print(f"{shard_hash(data, size):016x}")
