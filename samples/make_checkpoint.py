#!/usr/bin/env python3
"""Writes samples/tiny-checkpoint.safetensors deterministically (no numpy, no torch) and
samples/tiny-checkpoint.expected.json: per tensor, XXH3-64 from the reference `xxhsum -H3`
binary and the shard-invariant hash from scripts/shard_hash_ref.py.

Run from the repository root: python3 samples/make_checkpoint.py
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import shard_hash_ref  # noqa: E402


def lcg(seed):
    state = seed
    while True:
        state = (state * 6364136223846793005 + 1442695040888963407) & ((1 << 64) - 1)
        yield state >> 33


def floats(seed, n, scale=0.02):
    g = lcg(seed)
    return [((next(g) % 2000001) / 1000000.0 - 1.0) * scale for _ in range(n)]


def f32_bytes(values):
    return struct.pack(f"<{len(values)}f", *values)


def bf16_bytes(values):
    out = bytearray()
    for v in values:
        (u,) = struct.unpack("<I", struct.pack("<f", v))
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even
        out += struct.pack("<H", u & 0xFFFF)
    return bytes(out)


def i64_bytes(values):
    return struct.pack(f"<{len(values)}q", *values)


def tensors():
    # A Llama-shaped toy: names follow the samples' FSDP2 model (dim 16, vocab 64, 1 layer).
    dim, vocab, hidden = 16, 64, 32
    yield "tok.weight", "F32", [vocab, dim], f32_bytes(floats(1, vocab * dim))
    yield "layers.0.attn_norm.weight", "F32", [dim], f32_bytes([1.0] * dim)
    yield "layers.0.attn.wqkv.weight", "BF16", [3 * dim, dim], bf16_bytes(floats(2, 3 * dim * dim))
    yield "layers.0.attn.wo.weight", "BF16", [dim, dim], bf16_bytes(floats(3, dim * dim))
    yield "layers.0.mlp.w1.weight", "F32", [hidden, dim], f32_bytes(floats(4, hidden * dim))
    yield "layers.0.mlp.w2.weight", "F32", [dim, hidden], f32_bytes(floats(5, dim * hidden))
    yield "norm.weight", "F32", [dim], f32_bytes([1.0] * dim)
    yield "output.weight", "F32", [vocab, dim], f32_bytes(floats(6, vocab * dim))
    yield "step", "I64", [], i64_bytes([6])


SIZES = {"F32": 4, "BF16": 2, "I64": 8}


def xxhsum(raw):
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(raw)
        name = f.name
    try:
        out = subprocess.run(["xxhsum", "-H3", name], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(name)
    return out.strip().split()[-1]


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    header, blobs, expected, offset = {}, [], [], 0
    for name, dtype, shape, raw in tensors():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
        expected.append({"name": name, "dtype": dtype, "shape": shape, "xxh3": xxhsum(raw),
                         "shard_hash": f"{shard_hash_ref.shard_hash(raw, SIZES[dtype]):016x}"})
    header["__metadata__"] = {"format": "pt", "generator": "samples/make_checkpoint.py"}
    hjson = json.dumps(header, separators=(",", ":")).encode()
    hjson += b" " * (-len(hjson) % 8)
    with open(os.path.join(root, "tiny-checkpoint.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hjson)) + hjson + b"".join(blobs))
    with open(os.path.join(root, "tiny-checkpoint.expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
