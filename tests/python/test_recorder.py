"""python/gparity against libgparity_torchops and the C++ reader, under Debian's python3-torch.

Run by ctest with /usr/bin/python3; GPARITY_TORCHOPS and GPARITY_EXE point at the build.
"""

import importlib.util
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


if __name__ == "__main__":
    unittest.main()
