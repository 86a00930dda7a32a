"""`gparity replay` against torch.fx in Python, bit for bit (docs/replay.md).

The sample graphs of samples/replay/ are rebuilt by make_graphs.py (and must equal the checked-in
text), run by torch.fx.Interpreter on the same inputs, every node's tensors hashed through
torch.ops.gparity.hash_tensor (XXH3-64) and by scripts/shard_hash_v2_ref.py (the shard hash,
spec v2: replay's default, --node-hash-spec); `gparity replay` must write the same hashes for
every node, on 1 and 2 ranks (Gloo), with generated inputs (the documented rule, implemented
again here) and with --inputs.

Run by ctest with /usr/bin/python3; GPARITY_TORCHOPS and GPARITY_EXE point at the build.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples", "replay")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, SAMPLES)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gparity  # noqa: E402
import make_graphs  # noqa: E402
import shard_hash_v2_ref  # noqa: E402

EXE = os.environ["GPARITY_EXE"]
M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for c in text.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def generated(name, meta, seed=0):
    """The documented input rule (core/runtime/interpreter/inputs.hpp), for a placeholder."""
    key = splitmix64(seed ^ fnv1a64(name))
    n = 1
    for s in meta.shape:
        n *= s
    xs = [splitmix64((key + (i + 1) * 0x9E3779B97F4A7C15) & M64) for i in range(n)]
    if meta.dtype.is_floating_point:
        values = torch.tensor([(x >> 40) * 2.0 ** -23 - 1.0 for x in xs], dtype=torch.float32).reshape(meta.shape)
        values = values.to(meta.dtype)
    else:
        values = torch.zeros(meta.shape, dtype=meta.dtype)
    out = torch.empty_strided(meta.shape, meta.stride, dtype=meta.dtype)
    out.copy_(values)
    return out


def leaves(value, out):
    if isinstance(value, (tuple, list)):
        for v in value:
            leaves(v, out)
    else:
        out.append(value)
    return out


def shard_v2_hex(v):
    """The whole tensor's shard hash, spec v2, by the plain-Python reference (row-major bytes)."""
    raw = bytes(v.detach().contiguous().reshape(-1).view(torch.uint8).numpy()) if v.numel() else b""
    return "%016x" % shard_hash_v2_ref.shard_hash(raw, v.element_size())


def fx_hashes(gm, inputs):
    """{node name: [(output index, xxh3 hex, shard v2 hex, shape)]} from torch.fx.Interpreter."""
    found = {}

    def note(name, value):
        recs = []
        for k, v in enumerate(leaves(value, [])):
            if isinstance(v, torch.Tensor):
                recs.append((k, "%016x" % (gparity.hash_tensor(v)[0] & M64), shard_v2_hex(v), list(v.shape)))
        if recs:
            found[name] = recs

    class Hashing(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n.op == "output":
                note("output", value)
            else:
                note(n.name, value)
            return value

    Hashing(gm).run(*inputs)
    return found


def replay_hashes(run_dir, rank=0):
    found = {}
    with open(os.path.join(run_dir, "rank-%d.jsonl" % rank)) as f:
        for line in f:
            r = json.loads(line)
            if r["type"] == "node":
                # Replay's node records name their shard hash's spec: v2 by default.
                assert r.get("shard_spec") == 2, r
                found.setdefault(r["node"], []).append((r["output"], r["xxh3"], r["shard"], r["shape"]))
    return found


class ReplayMatchesFx(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        gparity.load_ops()
        cls.graphs = make_graphs.build()

    def replay(self, name, *extra):
        # The graph as this process generated it: AOT autograd 1.13 may order the saved
        # activations differently from one generation to the next.
        out = tempfile.mkdtemp(prefix="replay-")
        graph = os.path.join(out, name + ".txt")
        with open(graph, "w") as f:
            f.write(self.graphs[name][1])
        # Every tensor with both hashes (views too), to compare XXH3 with Python's bit for bit.
        cmd = [EXE, "replay", graph, "--out", os.path.join(out, "run"), "--node-hash", "both", "--hash-views", *extra]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return os.path.join(out, "run")

    def test_checked_in_graphs_are_current(self):
        # The same node lines; the signature and return order of saved activations may vary.
        def body(text):
            return sorted(l for l in text.splitlines() if not l.strip().startswith(("def forward", "return")))
        for name, (_, text, _) in self.graphs.items():
            with open(os.path.join(SAMPLES, name + ".txt")) as f:
                self.assertEqual(body(f.read()), body(text), name + ": rerun samples/replay/make_graphs.py")

    def test_generated_inputs_one_rank(self):
        for name, (gm, _, inputs) in self.graphs.items():
            with self.subTest(graph=name):
                metas = [n.meta["tensor_meta"] for n in gm.graph.nodes if n.op == "placeholder"]
                values = [generated(p, m) for (p, _), m in zip(inputs, metas)]
                want = fx_hashes(gm, values)
                got = replay_hashes(self.replay(name))
                self.assertEqual(sorted(got), sorted(want))
                for node in want:
                    self.assertEqual(got[node], want[node], node)

    def test_inputs_file_two_ranks(self):
        for name, (gm, _, inputs) in self.graphs.items():
            with self.subTest(graph=name):
                want = fx_hashes(gm, [t for _, t in inputs])
                inputs_file = os.path.join(tempfile.mkdtemp(prefix="replay-inputs-"), "inputs.safetensors")
                with open(inputs_file, "wb") as f:
                    f.write(make_graphs.safetensors_bytes(inputs))
                out = self.replay(name, "--inputs", inputs_file, "--nproc", "2")
                for rank in (0, 1):
                    got = replay_hashes(out, rank)
                    self.assertEqual(sorted(got), sorted(want))
                    for node in want:
                        self.assertEqual(got[node], want[node], node)


if __name__ == "__main__":
    unittest.main()
