"""python/gparity against libgparity_torchops and the C++ reader, under Debian's python3-torch.

Run by ctest with /usr/bin/python3; GPARITY_TORCHOPS and GPARITY_EXE point at the build.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import gparity  # noqa: E402

_spec = importlib.util.spec_from_file_location("shard_hash_ref", os.path.join(ROOT, "scripts", "shard_hash_ref.py"))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
EXE = os.environ["GPARITY_EXE"]


def raw(t):
    return bytes(t.contiguous().view(torch.uint8).reshape(-1).tolist())


class HashOps(unittest.TestCase):
    def test_whole_tensor_matches_the_reference(self):
        t = torch.arange(12, dtype=torch.float32).sin().reshape(3, 4)
        _, shard = gparity.hash_tensor(t)
        self.assertEqual(shard, ref.shard_hash(raw(t), 4))

    def test_shards_add_up_and_views_hash_like_copies(self):
        t = torch.arange(20, dtype=torch.float32).cos().reshape(5, 4).to(torch.bfloat16)
        a = gparity.hash_tensor(t[:3], [0, 0], [5, 4])
        b = gparity.hash_tensor(t[3:], [3, 0], [5, 4])
        self.assertEqual((a[1] + b[1]) & ((1 << 64) - 1), gparity.hash_tensor(t)[1])
        self.assertEqual(gparity.hash_tensor(t.t()), gparity.hash_tensor(t.t().contiguous()))


def train(run_dir, lr):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    rec = gparity.Recorder(run_dir, rank=0, world_size=1)
    rec.params(model)
    rec.buckets([[n for n, _ in model.named_parameters()]], order="registration")
    for step in range(1, 4):
        x = torch.randn(6, 8)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        rec.step(step, loss, norm, model, opt, hash_grads=True)
    rec.close()


class RecorderFormat(unittest.TestCase):
    def test_gparity_compare_reads_python_traces(self):
        with tempfile.TemporaryDirectory() as d:
            a, b, c = (os.path.join(d, n) for n in "abc")
            train(a, 1e-2)
            train(b, 1e-2)
            train(c, 2e-2)
            same = subprocess.run([EXE, "compare", a, b], capture_output=True, text=True)
            self.assertEqual(same.returncode, 0, same.stdout + same.stderr)
            diff = subprocess.run([EXE, "compare", a, c, "--json"], capture_output=True, text=True)
            self.assertEqual(diff.returncode, 1, diff.stdout + diff.stderr)
            with open(os.path.join(a, "rank-0.jsonl"), encoding="utf-8") as f:
                lines = f.read().splitlines()
            self.assertEqual([l.split('"type":"')[1].split('"')[0] for l in lines if l.startswith("{")][:2],
                             ["params", "buckets"])
            self.assertIn('"optim.exp_avg.shard"', lines[-1])


class NcclGraphInManifest(unittest.TestCase):
    DUMP = os.path.join(ROOT, "tests", "data", "nccl", "graph-dump-4xh200-ring.xml")

    def _run(self, d, name, env):
        saved = {k: os.environ.get(k) for k in ("NCCL_GRAPH_FILE", "NCCL_ALGO")}
        try:
            for k in saved:
                os.environ.pop(k, None)
            os.environ.update(env)
            train(os.path.join(d, name), 1e-2)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        with open(os.path.join(d, name, "manifest.json"), encoding="utf-8") as f:
            return json.load(f)

    def test_graph_file_and_rings_are_recorded_and_compare_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            rings = os.path.join(d, "rings.xml")
            made = subprocess.run([EXE, "nccl-rings", "--ranks", "4", "--out", rings, "--from", self.DUMP],
                                  capture_output=True, text=True)
            self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
            m = self._run(d, "a", {"NCCL_ALGO": "Ring"})
            self.assertEqual(m["nccl"], {"algo": "Ring", "graph_file": "", "rings": []})
            m = self._run(d, "b", {"NCCL_ALGO": "Ring", "NCCL_GRAPH_FILE": rings})
            self.assertEqual(m["nccl"]["graph_file"], rings)
            self.assertEqual(len(m["nccl"]["rings"]), 12)
            self.assertEqual(m["nccl"]["rings"][1], [0, 3, 2, 1])
            # Same numbers (one process, no NCCL), but the report says the rings differed.
            out = subprocess.run([EXE, "compare", os.path.join(d, "a"), os.path.join(d, "b")],
                                 capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("different NCCL graphs or ring orders", out.stdout)
            # An unreadable graph file is recorded as such, not a crash.
            bad = os.path.join(d, "bad.xml")
            with open(bad, "w", encoding="utf-8") as f:
                f.write("<graphs version='1'><graph")
            m = self._run(d, "c", {"NCCL_GRAPH_FILE": bad})
            self.assertIn("graph_error", m["nccl"])
            self.assertEqual(m["nccl"]["rings"], [])


if __name__ == "__main__":
    unittest.main()
