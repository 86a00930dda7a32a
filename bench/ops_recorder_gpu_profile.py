#!/usr/bin/env python3
"""Where a recorded compiled step's time goes (issue 32; docs/ops.md, "Cost"): a diagnostic beside
bench/ops_recorder_gpu_bench.py, which gives the ratios. Same model and step, compiled with
Inductor, on one GPU. Per mode (compiled; record_ops C++ with hashes "shard"; the same with
hashes "none"; the C++ backend's hashes in batches, on Python 3.12+; the Python backend with
"shard"), median of --steps steps, each synchronized
before and after:

  host_ms   the step's Python call returns (kernels enqueued, not waited for)
  exit_ms   leaving record_ops' scope (the step's hashes read back, its records written)
  total_ms  the whole step, waited for
  gpu_ms    the GPU's busy time in the step (torch.profiler: the sum of its kernels' times)
  hash_ms   of which gparity's hash kernels

and, for the C++ recorder's modes, the host time of its parts in a step (GPARITY_OPREC_SECTIONS=1,
core/torchops/op_recorder_sections.hpp: microseconds and calls, median over the steps; a part's
time includes the parts it calls), then a cProfile of --profile-steps recorded steps (C++
backend, "shard"), sorted by own time.

  GPARITY_TORCHOPS=BUILD/core/torchops/libgparity_torchops.so \\
    python3 bench/ops_recorder_gpu_profile.py --config 4096,512,2 --out OUT.json
"""

import argparse
import contextlib
import cProfile
import functools
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ops_recorder_gpu_bench import Net, step, gparity  # noqa: E402  (bench/, this script's folder)


def timed_step(fn, scope):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with scope() as _:
        te = time.perf_counter()
        fn()
        t1 = time.perf_counter()
    t2 = time.perf_counter()
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    return {"host_ms": (t1 - t0) * 1e3, "enter_ms": (te - t0) * 1e3, "exit_ms": (t2 - t1) * 1e3,
            "total_ms": (t3 - t0) * 1e3}


def compiled_setup(config, prefix):
    """("dim,seq,batch" as ints, the bench's bf16 model, its input, the model compiled with Inductor,
    a scratch folder named `prefix`...)."""
    dim, seq, batch = (int(v) for v in config.split(","))
    torch.manual_seed(0)
    model = Net(dim, dim // 128).to(device="cuda", dtype=torch.bfloat16)
    x = torch.randn(batch, seq, dim, device="cuda", dtype=torch.bfloat16)
    return (dim, seq, batch), model, x, torch.compile(model), tempfile.mkdtemp(prefix=prefix)


class Recorders:
    """Step scopes of record_ops on one model: a recorder per (hashes, backend, batch_hashes), in
    `tmp`, the steps of all of them numbered in turn."""

    def __init__(self, model, tmp):
        self.model, self.tmp, self.recorders, self.counter = model, tmp, {}, 0

    def scope(self, hashes, backend="cpp", batch=None):
        key = (hashes, backend, batch)
        if key not in self.recorders:
            self.recorders[key] = gparity.OpRecorder(os.path.join(self.tmp, f"{backend}_{hashes}_{batch}"),
                                                     model=self.model, rank=0, world_size=1, hashes=hashes,
                                                     backend=backend, batch_hashes=batch)
        rec = self.recorders[key]

        def scope():
            self.counter += 1
            return rec.record(self.counter)
        return scope

    def close(self):
        for r in self.recorders.values():
            r.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def sections():
    """{section: (us, calls)} of the C++ recorder since the last call (zeros when off)."""
    import ctypes
    from gparity import op_recorder
    lib = op_recorder._cpp_library()
    if lib is None or not hasattr(lib, "gparity_oprec_sections"):
        return {}
    lib.gparity_oprec_section_name.restype = ctypes.c_char_p
    out = (ctypes.c_int64 * 128)()
    n = lib.gparity_oprec_sections(out, 64)
    return {lib.gparity_oprec_section_name(i).decode(): (out[2 * i] / 1e3, out[2 * i + 1]) for i in range(n)}


def gpu_times(fn, scope):
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        with scope():
            fn()
        torch.cuda.synchronize()
    gpu = hashed = 0.0
    kernels = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = e.device_time if hasattr(e, "device_time") else e.cuda_time
        gpu += us
        if "hash" in e.name or "rows_kernel" in e.name or "strided_kernel" in e.name or "runs_kernel" in e.name \
                or "dense_kernel" in e.name:
            hashed += us
            name = e.name.replace("(anonymous namespace)::", "").split("<")[0].split("(")[0].replace("void ", "").split("::")[-1]
            n, t = kernels.get(name, (0, 0.0))
            kernels[name] = (n + 1, t + us / 1e3)
    return {"gpu_ms": gpu / 1e3, "hash_ms": hashed / 1e3, "hash_launches": sum(n for n, _ in kernels.values()),
            "hash_kernels": {k: {"launches": n, "ms": round(t, 3)} for k, (n, t) in kernels.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--profile-steps", type=int, default=5)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    os.environ.setdefault("GPARITY_OPREC_SECTIONS", "1")  # read when the library first times a part
    gparity.load_ops()
    doc = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": []}
    for c in args.config or ["4096,512,2"]:
        (dim, seq, batch), model, x, compiled, tmp = compiled_setup(c, "oprec-profile-")
        recorders = Recorders(model, tmp)
        recorded = recorders.scope
        modes = {"compiled": contextlib.nullcontext, "cpp_shard": recorded("shard", "cpp"),
                 "cpp_none": recorded("none", "cpp"), "python_shard": recorded("shard", "python")}
        if hasattr(sys, "monitoring"):  # cpp_shard sends hashes in batches (Python 3.12+): without
            modes["cpp_shard_unbatched"] = recorded("shard", "cpp", batch=False)
        run = functools.partial(step, compiled, x)
        for scope in modes.values():  # compile, autotune, warm every mode
            for _ in range(3):
                timed_step(run, scope)
        result = {"dim": dim, "seq": seq, "batch": batch, "modes": {}}
        rows = {name: [] for name in modes}
        parts = {name: [] for name in modes}
        sections()
        for _ in range(args.steps):
            for name, scope in modes.items():
                rows[name].append(timed_step(run, scope))
                parts[name].append(sections())
        for name, scope in modes.items():
            med = {k: statistics.median(r[k] for r in rows[name]) for k in rows[name][0]}
            if parts[name] and any(c for _, c in parts[name][0].values()):
                med["sections"] = {k: {"us": statistics.median(p[k][0] for p in parts[name]),
                                       "calls": statistics.median(p[k][1] for p in parts[name])}
                                   for k in parts[name][0]}
            med.update(gpu_times(run, scope))
            result["modes"][name] = med
        base = result["modes"]["compiled"]["total_ms"]
        print(f"dim {dim} seq {seq} batch {batch}", flush=True)
        for name, m in result["modes"].items():
            print(f"  {name:13s} host {m['host_ms']:7.2f}  exit {m['exit_ms']:6.2f}  total {m['total_ms']:7.2f} "
                  f"({m['total_ms'] / base:4.2f}x)  gpu {m['gpu_ms']:7.2f}  hash {m['hash_ms']:6.2f} "
                  f"({m['hash_launches']} launches)", flush=True)
            for k, v in sorted(m["hash_kernels"].items(), key=lambda kv: -kv[1]["ms"]):
                print(f"      {k:28s} {v['launches']:4d} launches {v['ms']:7.3f} ms", flush=True)
            for k, v in m.get("sections", {}).items():
                print(f"      host {k:23s} {v['us']:8.1f} us {v['calls']:6.0f} calls", flush=True)
        prof = cProfile.Profile()
        scope = modes["cpp_shard"]
        for _ in range(args.profile_steps):
            torch.cuda.synchronize()
            prof.enable()
            with scope():
                run()
            torch.cuda.synchronize()
            prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(30)
        result["cprofile_tottime"] = text.getvalue()
        print(text.getvalue(), flush=True)
        recorders.close()
        doc["results"].append(result)
        del model, compiled, x
        torch.cuda.empty_cache()
    if args.out:
        with open(args.out + ".tmp", "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
