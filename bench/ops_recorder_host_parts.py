#!/usr/bin/env python3
"""What each part of record_ops costs a compiled step on its own (issue 32; docs/ops.md, "Cost"):
a diagnostic beside bench/ops_recorder_gpu_profile.py, for machines whose host is slow, where the
recorded step is host-bound. Same model and step as bench/ops_recorder_gpu_bench.py, compiled with
Inductor, on one GPU; the modes' steps interleaved in rounds, each synchronized before and after;
median milliseconds (host: until the step's Python returns; total: waited for):

  compiled      the step
  hook          Inductor's launcher wrapped as record_ops wraps it, handing every launch straight on
  unwind        a global sys.monitoring PY_UNWIND callback set before the step and cleared after it
                (what record_ops' batches of hashes do on Python 3.12+)
  cpp_none      record_ops(backend="cpp", hashes="none"): every record, nothing hashed
  cpp_shard     record_ops(backend="cpp"): the default recorder

  GPARITY_TORCHOPS=BUILD/core/torchops/libgparity_torchops.so \\
    python3 bench/ops_recorder_host_parts.py --config 4096,512,2 --out OUT.json
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)
import gparity  # noqa: E402
from gparity.kernel_launches import _KernelHook  # noqa: E402
from ops_recorder_gpu_bench import Net, step  # noqa: E402


class _PassThrough:
    """An owner of the launcher hook that launches and records nothing."""

    @staticmethod
    def _launch(run, autotuner, args, kwargs, caller):
        return run(autotuner, *args, **kwargs)


@contextlib.contextmanager
def hooked():
    owner = _PassThrough()
    _KernelHook.attach(owner)
    try:
        yield
    finally:
        _KernelHook.detach(owner)


_TOOL = 4  # a sys.monitoring tool id of its own (record_ops takes another)


@contextlib.contextmanager
def unwinding():
    m = sys.monitoring
    if m.get_tool(_TOOL) is None:
        m.use_tool_id(_TOOL, "gparity-host-parts")
        m.register_callback(_TOOL, m.events.PY_UNWIND, lambda *a: None)
    m.set_events(_TOOL, m.events.PY_UNWIND)
    try:
        yield
    finally:
        m.set_events(_TOOL, 0)


def timed_step(fn, scope):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with scope():
        fn()
        t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t0) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    gparity.load_ops()
    doc = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": []}
    for c in args.config or ["4096,512,2"]:
        dim, seq, batch = (int(v) for v in c.split(","))
        torch.manual_seed(0)
        model = Net(dim, dim // 128).to(device="cuda", dtype=torch.bfloat16)
        x = torch.randn(batch, seq, dim, device="cuda", dtype=torch.bfloat16)
        compiled = torch.compile(model)
        tmp = tempfile.mkdtemp(prefix="oprec-parts-")
        counter = [0]

        def recorded(hashes):
            rec = gparity.OpRecorder(os.path.join(tmp, hashes), model=model, rank=0, world_size=1,
                                     hashes=hashes, backend="cpp")

            def scope():
                counter[0] += 1
                return rec.record(counter[0])
            return scope

        modes = {"compiled": contextlib.nullcontext, "hook": hooked}
        if hasattr(sys, "monitoring"):
            modes["unwind"] = unwinding
        modes["cpp_none"] = recorded("none")
        modes["cpp_shard"] = recorded("shard")
        run = lambda: step(compiled, x)  # noqa: E731
        for scope in modes.values():  # compile, autotune, warm every mode
            for _ in range(3):
                timed_step(run, scope)
        rows = {name: [] for name in modes}
        for _ in range(args.rounds):
            for name, scope in modes.items():
                rows[name].append(timed_step(run, scope))
        result = {"dim": dim, "seq": seq, "batch": batch, "modes": {}}
        base = statistics.median(t for _, t in rows["compiled"])
        print(f"dim {dim} seq {seq} batch {batch}", flush=True)
        for name, r in rows.items():
            host = statistics.median(h for h, _ in r)
            total = statistics.median(t for _, t in r)
            result["modes"][name] = {"host_ms": host, "total_ms": total, "ratio": total / base}
            print(f"  {name:10s} host {host:6.2f}  total {total:6.2f} ms ({total / base:.2f}x)", flush=True)
        doc["results"].append(result)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
