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
import functools
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ops_recorder_gpu_bench import step, gparity  # noqa: E402  (bench/, this script's folder)
from ops_recorder_gpu_profile import Recorders, compiled_setup, timed_step  # noqa: E402
from gparity.kernel_launches import _KernelHook  # noqa: E402


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    gparity.load_ops()
    doc = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": []}
    for c in args.config or ["4096,512,2"]:
        (dim, seq, batch), model, x, compiled, tmp = compiled_setup(c, "oprec-parts-")
        recorders = Recorders(model, tmp)
        modes = {"compiled": contextlib.nullcontext, "hook": hooked}
        if hasattr(sys, "monitoring"):
            modes["unwind"] = unwinding
        modes["cpp_none"] = recorders.scope("none")
        modes["cpp_shard"] = recorders.scope("shard")
        run = functools.partial(step, compiled, x)
        for scope in modes.values():  # compile, autotune, warm every mode
            for _ in range(3):
                timed_step(run, scope)
        rows = {name: [] for name in modes}
        for _ in range(args.rounds):
            for name, scope in modes.items():
                rows[name].append(timed_step(run, scope))
        result = {"dim": dim, "seq": seq, "batch": batch, "modes": {}}
        base = statistics.median(t["total_ms"] for t in rows["compiled"])
        print(f"dim {dim} seq {seq} batch {batch}", flush=True)
        for name, r in rows.items():
            host = statistics.median(t["host_ms"] for t in r)
            total = statistics.median(t["total_ms"] for t in r)
            result["modes"][name] = {"host_ms": host, "total_ms": total, "ratio": total / base}
            print(f"  {name:10s} host {host:6.2f}  total {total:6.2f} ms ({total / base:.2f}x)", flush=True)
        recorders.close()
        doc["results"].append(result)
        del model, compiled, x
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
