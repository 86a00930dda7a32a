#!/usr/bin/env python3
"""GPU benchmark of gparity's op recorder (issue 23; docs/ops.md, "Performance").

One training step, forward + backward of a 2-layer pre-norm transformer (RMSNorm, causal SDPA
attention, GELU MLP; bf16; loss = mean of the squared output), on one GPU with the machine's
PyTorch, side by side in this one process, in rounds (each mode's steps interleaved with the
others', so clock and thermal drift hit every mode alike):

  plain           the step
  record_ops      the step under gparity.record_ops(backend="python") (every op recorded, outputs
                  and fresh inputs hashed on the GPU with XXH3-64 + the shard-invariant hash,
                  deferred: read back once when the step ends, then the step's records written)
  record_ops_shard  the same with hashes="shard" (the shard-invariant hash alone)
  record_ops_nohash the recorder without hashing (its dispatch and bookkeeping cost alone)
  record_ops_cpp, record_ops_cpp_shard, record_ops_cpp_nohash
                  the same three with backend="cpp" (RecordFunction callbacks in
                  libgparity_torchops: no Python per op)
  debugmode       torch.utils._debug_mode.DebugMode() around the step
  debugmode_hash  DebugMode with log_tensor_hashes(hash_fn="hash_tensor")
  debugmode_norm  DebugMode with log_tensor_hashes(hash_fn="norm")
  compiled        the step compiled with torch.compile (Inductor; compiled in the warmup rounds)
  compiled_record_ops  the compiled step under record_ops(backend="cpp", hashes="shard"): every
                  Triton launch (Inductor's launcher hooked), extern kernel and eager op recorded;
                  the hashes asked for while Inductor's generated code runs go in batches (the
                  default on Python 3.12+)
  compiled_record_ops_unbatched  the same with batch_hashes=False: every hash sent with its record
  compiled_record_ops_python  the same with backend="python"
  compiled_debugmode_hash  DebugMode with log_tensor_hashes(hash_fn="hash_tensor") on the compiled
                  step ([triton] launches with pre- and post-kernel hashes)

Every timed step is synchronized before and after (torch.cuda.synchronize). Prints and writes
(--out JSON) the median milliseconds and each mode's ratio to plain (compiled modes: to compiled); the
goals are record_ops_cpp_shard <= 2x plain and compiled_record_ops <= 1.5x compiled (issue 32).

  GPARITY_TORCHOPS=BUILD/core/torchops/libgparity_torchops.so \\
    python3 bench/ops_recorder_gpu_bench.py --config 2048,2048,4 --config 4096,512,2 --out OUT.json
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import gparity  # noqa: E402
from transformer_block import Block  # noqa: E402  (bench/, this script's folder)


class Net(nn.Module):
    def __init__(self, dim, heads, layers=2):
        super().__init__()
        self.layers = nn.ModuleList(Block(dim, heads) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def step(model, x):
    model(x).float().square().mean().backward()
    for p in model.parameters():
        p.grad = None


class Modes:
    def __init__(self, model, x, tmp):
        self.model, self.x, self.tmp = model, x, tmp
        self.counter = 0
        self.recorders = {}

    def plain(self):
        step(self.model, self.x)

    def _record(self, hashes, backend="python", compiled=False, batch=None):
        key = (hashes, backend, compiled, batch)
        rec = self.recorders.get(key)
        if rec is None:
            name = ("compiled_" if compiled else "") + "ops_" + hashes.replace("+", "_") + \
                ("_cpp" if backend == "cpp" else "") + {None: "", False: "_unbatched", True: "_batch"}[batch]
            rec = gparity.OpRecorder(os.path.join(self.tmp, name), model=self.model,
                                     rank=0, world_size=1, hashes=hashes, backend=backend, batch_hashes=batch)
            if batch and not rec.batch_hashes:
                raise RuntimeError("batches of hashes need the C++ recorder and Python 3.12+")
            self.recorders[key] = rec
        self.counter += 1
        with rec.record(self.counter):
            step(self._compiled() if compiled else self.model, self.x)

    def _compiled(self):
        if getattr(self, "compiled_model", None) is None:
            self.compiled_model = torch.compile(self.model)
        return self.compiled_model

    def compiled(self):
        step(self._compiled(), self.x)

    def compiled_record_ops(self):
        self._record("shard", "cpp", compiled=True)

    def compiled_record_ops_unbatched(self):
        self._record("shard", "cpp", compiled=True, batch=False)

    def compiled_record_ops_python(self):
        self._record("shard", "python", compiled=True)

    def compiled_debugmode_hash(self):
        from torch.utils._debug_mode import DebugMode
        with DebugMode(), DebugMode.log_tensor_hashes(hash_fn="hash_tensor"):
            step(self._compiled(), self.x)

    def record_ops(self):
        self._record("xxh3+shard")

    def record_ops_shard(self):
        self._record("shard")

    def record_ops_cpp(self):
        self._record("xxh3+shard", "cpp")

    def record_ops_cpp_shard(self):
        self._record("shard", "cpp")

    def record_ops_cpp_nohash(self):
        self._record("none", "cpp")

    def _debugmode(self, hash_fn):
        from torch.utils._debug_mode import DebugMode
        if hash_fn is None:
            with DebugMode():
                step(self.model, self.x)
            return
        with DebugMode(), DebugMode.log_tensor_hashes(hash_fn=hash_fn):
            step(self.model, self.x)

    def debugmode(self):
        self._debugmode(None)

    def record_ops_nohash(self):
        self._record("none")

    def debugmode_hash(self):
        self._debugmode("hash_tensor")

    def debugmode_norm(self):
        self._debugmode("norm")


def timed(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


def bench_config(dim, seq, batch, modes, rounds, warmup):
    torch.manual_seed(0)
    model = Net(dim, dim // 128).to(device="cuda", dtype=torch.bfloat16)
    x = torch.randn(batch, seq, dim, device="cuda", dtype=torch.bfloat16)
    tmp = tempfile.mkdtemp(prefix="oprec-bench-")
    m = Modes(model, x, tmp)
    times = {name: [] for name in modes}
    errors = {}
    try:
        for name in modes:
            for _ in range(warmup):
                try:
                    timed(getattr(m, name))
                except Exception as e:  # a DebugMode API this PyTorch lacks: reported, not fatal
                    errors[name] = f"{type(e).__name__}: {e}"
                    break
        for _ in range(rounds):
            for name in modes:
                if name not in errors:
                    times[name].append(timed(getattr(m, name)))
        ops_per_step = {}
        for backend, name in (("python", "ops_shard"), ("cpp", "ops_shard_cpp"),
                              ("compiled python", "compiled_ops_shard"), ("compiled cpp", "compiled_ops_shard_cpp")):
            ops_file = os.path.join(tmp, name, "rank-0.jsonl")
            if os.path.exists(ops_file):
                with open(ops_file, encoding="utf-8") as f:
                    steps, kernels = {}, {}
                    for line in f:
                        rec = json.loads(line)
                        steps[rec["step"]] = steps.get(rec["step"], 0) + 1
                        if rec.get("kind") == "kernel":
                            kernels[rec["step"]] = kernels.get(rec["step"], 0) + 1
                    last = max(steps) if steps else None
                    ops_per_step[backend] = steps[last] if steps else None
                    if backend.startswith("compiled"):
                        ops_per_step[backend + " kernels"] = kernels.get(last, 0)
    finally:
        for rec in m.recorders.values():
            rec.close()
        shutil.rmtree(tmp, ignore_errors=True)
    med = {n: statistics.median(t) for n, t in times.items() if t}
    base = med.get("plain")
    cbase = med.get("compiled")
    ratios = {n: v / base for n, v in med.items() if base and not n.startswith("compiled")}
    ratios.update({n: v / cbase for n, v in med.items() if cbase and n.startswith("compiled")})
    result = {"dim": dim, "seq": seq, "batch": batch, "heads": dim // 128, "layers": 2, "dtype": "bfloat16",
              "rounds": rounds, "median_ms": med, "all_ms": times, "errors": errors,
              "ratio_to_plain": ratios,  # compiled modes: to the compiled step
              "compiled_over_plain": cbase / base if base and cbase else None,
              "recorded_ops_per_step": ops_per_step,
              "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30}
    torch.cuda.reset_peak_memory_stats()
    del model, x
    torch.cuda.empty_cache()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", default=[],
                    help="dim,seq,batch (repeatable; default 2048,2048,4 and 4096,512,2)")
    ap.add_argument("--modes", default="plain,record_ops_cpp_shard,record_ops_cpp_nohash,"
                    "record_ops_cpp,record_ops_shard,record_ops_nohash,debugmode,debugmode_hash")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    gparity.load_ops()
    configs = args.config or ["2048,2048,4", "4096,512,2"]
    modes = args.modes.split(",")
    results = []
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    for c in configs:
        dim, seq, batch = (int(v) for v in c.split(","))
        r = bench_config(dim, seq, batch, modes, args.rounds, args.warmup)
        results.append(r)
        print(f"dim {dim} seq {seq} batch {batch} ({r['recorded_ops_per_step']} ops a step recorded):", flush=True)
        for n in modes:
            if n in r["median_ms"]:
                print(f"  {n:18s} {r['median_ms'][n]:9.2f} ms  {r['ratio_to_plain'].get(n, 0):6.2f}x", flush=True)
            else:
                print(f"  {n:18s} failed: {r['errors'].get(n)}", flush=True)
    doc = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": results,
           "goal": "record_ops_cpp_shard <= 2x plain; compiled_record_ops <= 1.5x compiled"}
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
