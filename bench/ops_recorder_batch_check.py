#!/usr/bin/env python3
"""Hashes in batches on a GPU (docs/ops.md, "Hashes in batches"): the same compiled step recorded
with batch_hashes off and on gives the same records. Four recordings of one step, each with its
own recorder (ids from 0, step 1): off, on, off, on. The records must have the same ops, ids and
arguments; a hash must be equal in all four wherever the two recordings without batches agree
(what differs between them is the program's own non-determinism, no batch's). Then one step of
each under torch.profiler: the hash kernels launched. Modes: Inductor's default, and
mode="reduce-overhead" (CUDA graphs: the captured step is recorded without hashes inside the
capture; the replayed one as usual). A fifth recording without batches sends every launch through
the Python launch hook (kernel_launches._KernelHook.fast False) and is compared with the last three
the same way: the builtin launch hook records what the Python one does. Exit 0: every check held; 1: a difference (printed); 2: no
batches here (Python 3.12+ and the C++ recorder are needed).

  GPARITY_TORCHOPS=BUILD/core/torchops/libgparity_torchops.so \\
    python3 bench/ops_recorder_batch_check.py --config 1024,256,2 --out OUT.json
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ops_recorder_gpu_bench import Net, step, gparity  # noqa: E402  (bench/, this script's folder)
from ops_recorder_gpu_profile import gpu_times  # noqa: E402


def record_once(tmp, name, model, run, batch, python_hook=False):
    from gparity.kernel_launches import _KernelHook
    _KernelHook.fast = not python_hook
    try:
        return _record_once(tmp, name, model, run, batch)
    finally:
        _KernelHook.fast = True


def _record_once(tmp, name, model, run, batch):
    rec = gparity.OpRecorder(os.path.join(tmp, name), model=model, rank=0, world_size=1, hashes="shard",
                             backend="cpp", batch_hashes=batch)
    if batch and not rec.batch_hashes:
        rec.close()
        return None
    with rec.record(1):
        run()
    torch.cuda.synchronize()
    rec.close()
    with open(os.path.join(tmp, name, "rank-0.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def without_hashes(rec):
    strip = lambda ts: [{k: v for k, v in t.items() if k not in ("shard", "xxh3")} for t in ts]  # noqa: E731
    return {**rec, "args": strip(rec["args"]), "outs": strip(rec["outs"])}


def hashes(rec):
    return [(side, i, t.get("shard")) for side in ("args", "outs") for i, t in enumerate(rec[side])]


def compare(runs):
    """{'records', 'hashes', 'deterministic', 'problems'} over runs [off, on, off, on]."""
    off1, on1, off2, on2 = runs
    problems = []
    if not (len(off1) == len(on1) == len(off2) == len(on2)):
        problems.append(f"record counts differ: {[len(r) for r in runs]}")
        return {"records": len(off1), "problems": problems}
    compared = deterministic = 0
    for i, recs in enumerate(zip(off1, on1, off2, on2)):
        shapes = [without_hashes(r) for r in recs]
        if any(s != shapes[0] for s in shapes[1:]):
            problems.append(f"record {i} ({recs[0]['op']}) differs beyond its hashes")
            continue
        for (side, k, a), (_, _, b), (_, _, c), (_, _, d) in zip(*(hashes(r) for r in recs)):
            if a is None and c is None:
                if b is not None or d is not None:
                    problems.append(f"record {i} ({recs[0]['op']}) {side}[{k}]: hashed only with batches")
                continue
            compared += 1
            if a != c:
                continue  # the program's own non-determinism
            deterministic += 1
            if b != a or d != a:
                problems.append(f"record {i} ({recs[0]['op']}) {side}[{k}]: {a} without batches, {b} / {d} with")
    return {"records": len(off1), "hashes": compared, "deterministic": deterministic, "problems": problems}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not hasattr(sys, "monitoring"):
        print("batches of hashes need Python 3.12+", file=sys.stderr)
        return 2
    results, failed = [], False
    for c in args.config or ["1024,256,2"]:
        dim, seq, batch = (int(v) for v in c.split(","))
        for mode in ("default", "reduce-overhead"):
            torch.manual_seed(0)
            model = Net(dim, dim // 128).to(device="cuda", dtype=torch.bfloat16)
            x = torch.randn(batch, seq, dim, device="cuda", dtype=torch.bfloat16)
            compiled = torch.compile(model, mode=mode)
            run = lambda: step(compiled, x)  # noqa: E731
            for _ in range(3):  # compile, autotune (and for CUDA graphs: warm up, capture)
                run()
            tmp = tempfile.mkdtemp(prefix="oprec-batch-")
            try:
                runs = [record_once(tmp, f"r{i}", model, run, batch=bool(i % 2)) for i in range(4)]
                if runs[1] is None:
                    print("no batches with this recorder", file=sys.stderr)
                    return 2
                result = {"dim": dim, "seq": seq, "batch": batch, "mode": mode, **compare(runs)}
                # A fifth, without batches, every launch through the Python launch hook: the
                # same records as the builtin hook's (the recordings after the first go there).
                python = compare([record_once(tmp, "r4", model, run, batch=False, python_hook=True)] + runs[1:])
                result["python_hook"] = python
                result["problems"] += ["python hook: " + p for p in python["problems"]]

                def scope(batched):
                    rec = gparity.OpRecorder(os.path.join(tmp, f"p{int(batched)}"), model=model, rank=0,
                                             world_size=1, backend="cpp", batch_hashes=batched)
                    return lambda: rec.record(1)
                for batched in (False, True):
                    t = gpu_times(run, scope(batched))
                    result["on" if batched else "off"] = {k: t[k] for k in ("gpu_ms", "hash_ms", "hash_launches")}
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            failed = failed or bool(result["problems"])
            results.append(result)
            print(f"dim {dim} seq {seq} batch {batch} {mode}: {result['records']} records, "
                  f"{result.get('hashes', 0)} hashes ({result.get('deterministic', 0)} deterministic), "
                  f"{len(result['problems'])} problems; hash launches {result['off']['hash_launches']} -> "
                  f"{result['on']['hash_launches']}, hash ms {result['off']['hash_ms']:.3f} -> "
                  f"{result['on']['hash_ms']:.3f}", flush=True)
            for p in result["problems"][:20]:
                print("  " + p, flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"torch": torch.__version__, "python": sys.version.split()[0], "results": results}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
