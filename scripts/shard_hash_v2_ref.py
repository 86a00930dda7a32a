#!/usr/bin/env python3
"""Reference implementation of gparity's shard-invariant hash, spec v2 (docs/hashing.md).

Deliberately plain Python, written from the spec and not from the C++ or CUDA code, so the tests
have an independent second implementation to agree with. Spec v2 in one paragraph: H is the sum
mod 2^64 over elements of a term of (global flat index i, raw bits b). For elements of 1, 2 or 4
bytes the term is x * x with x = (KEY_SEED + i * KEY_STEP + b) mod 2^32; for 8-byte elements it
is spec v1's term (scripts/shard_hash_ref.py).

Usage: shard_hash_v2_ref.py FILE [ELEM_SIZE [FIRST_INDEX]]  prints H of FILE's bytes as elements.
       shard_hash_v2_ref.py --vectors                        prints the known-answer vectors.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shard_hash_ref as v1  # noqa: E402  (8-byte elements keep v1's term)

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
KEY_SEED = 0x69747932  # low 32 bits of b"gparity2" read as a big-endian integer
KEY_STEP = 0x7F4A7C15  # low 32 bits of the golden-ratio step; odd


def key(index: int) -> int:
    return (KEY_SEED + index * KEY_STEP) & MASK32


def mix(index: int, bits: int, elem_size: int) -> int:
    if elem_size == 8:
        return v1.mix(index, bits)
    assert 0 <= bits < (1 << (8 * elem_size))
    x = (key(index) + bits) & MASK32
    return x * x  # < 2^64: exact


def shard_hash(raw: bytes, elem_size: int, first_index: int = 0) -> int:
    """Hash of consecutive little-endian elements whose global indices start at first_index."""
    assert elem_size in (1, 2, 4, 8) and len(raw) % elem_size == 0
    total = 0
    for i in range(len(raw) // elem_size):
        bits = int.from_bytes(raw[i * elem_size:(i + 1) * elem_size], "little")
        total = (total + mix(first_index + i, bits, elem_size)) & MASK64
    return total


def vectors():
    """The known-answer vectors of tests/hash/shard_hash_v2_test.cpp."""
    iota = bytes(i & 0xFF for i in range(256))
    out = []
    for (i, b, es) in [(0, 0, 4), (1, 0, 4), (0, 1, 4), (12345, 0x3F800000, 4), (2**64 - 1, 2**32 - 1, 4),
                       (7, 0xBF80, 2), (2**40 + 3, 0xFF, 1), (0, 0, 8), (5, 2**64 - 1, 8)]:
        out.append((f"mix_v2({i:#x}, {b:#x}, {es})", mix(i, b, es)))
    for es in (1, 2, 4, 8):
        out.append((f"iota256 es {es}", shard_hash(iota, es)))
    out.append(("iota256 es 4 first 1000", shard_hash(iota, 4, 1000)))
    out.append(("iota256 es 2 first 2^32-5", shard_hash(iota, 2, 2**32 - 5)))
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--vectors":
        for name, value in vectors():
            print(f"{name}: 0x{value:016x}")
        sys.exit(0)
    data = open(sys.argv[1], "rb").read()
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    print(f"{shard_hash(data, size, first):016x}")
