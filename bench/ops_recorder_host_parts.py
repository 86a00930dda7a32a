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
  modules       global module forward pre- and post-hooks set around the step, each calling the C++
                recorder's module push / pop through ctypes (what record_ops' C++ backend sets)
  rf_bare       a global RecordFunction callback that does nothing (RecordFunction's own cost for
                every operator call once any global callback is set)
  rf_io         the same asking for every call's inputs and outputs, as record_ops' callback asks
  cpp_none      record_ops(backend="cpp", hashes="none"): every record, nothing hashed
  cpp_ops       cpp_none with the launcher hook handed back after the step's start: the operator
                records alone, no kernel record
  cpp_shard     record_ops(backend="cpp"): the default recorder
  cpp_none_pyhook, cpp_shard_pyhook
                cpp_none and cpp_shard with every launch through the Python launch hook
                (kernel_launches._KernelHook.fast False), as before the builtin hook

--sections prints the C++ recorder's parts (GPARITY_OPREC_SECTIONS) per step of each cpp mode;
--cprofile MODE[,MODE...] runs a few steps of each MODE under cProfile and prints where Python's time went;
--launch-parts times each launch record's parts in cpp_none_pyhook steps (the Python hook, Inductor's run, the
begin and end builtins, the rest), and Inductor's run a launch with no step recorded. Every
mode's line gives the scope's enter and exit (ms, median) beside host and total.

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
from ops_recorder_gpu_profile import Recorders, compiled_setup, sections, timed_step  # noqa: E402
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


@contextlib.contextmanager
def module_hooks():
    from gparity import op_recorder, step_hooks
    # As record_ops' C++ backend sets them (modules named by their class here).
    step_hooks._ModuleHooks.attach(*op_recorder._cpp_module_hooks(op_recorder._cpp_library(), {}))
    try:
        yield
    finally:
        step_hooks._ModuleHooks.detach()


def probe_callbacks(mode):
    """A scope with gparity_oprec_probe_callbacks(mode) set (the library's diagnostic)."""
    from gparity import op_recorder
    lib = op_recorder._cpp_library()

    @contextlib.contextmanager
    def scope():
        if lib.gparity_oprec_probe_callbacks(mode) != 0:
            raise RuntimeError("gparity_oprec_probe_callbacks failed")
        try:
            yield
        finally:
            lib.gparity_oprec_probe_callbacks(0)
    return scope


def ops_only(scope):
    """`scope` (a record_ops step) with Inductor's launches handed straight on: no kernel records."""
    @contextlib.contextmanager
    def ops():
        with scope() as rec:
            _KernelHook.detach(rec)
            yield rec
    return ops


def python_hook(scope):
    """`scope` (a record_ops step) with every launch through the Python launch hook, as before the
    builtin one (kernel_launches._KernelHook.fast False)."""
    @contextlib.contextmanager
    def python():
        _KernelHook.fast = False
        try:
            with scope() as rec:
                yield rec
        finally:
            _KernelHook.fast = True
    return python


def cprofiled(run, scope, steps=5):
    import cProfile
    import io
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        timed_step(run, scope)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(30)
    print(text.getvalue(), flush=True)


def hook_run_time(run, steps=30):
    """Inductor's run a launch, in us, under the pass-through hook (no step recorded): what
    launch_parts' "run" is without a recorder."""
    import time
    pc = time.perf_counter_ns
    acc = [0, 0]

    class Timed(_PassThrough):
        @staticmethod
        def _launch(run_, autotuner, args, kwargs, caller):
            t = pc()
            try:
                return run_(autotuner, *args, **kwargs)
            finally:
                acc[0] += pc() - t
                acc[1] += 1

    owner = Timed()

    @contextlib.contextmanager
    def scope():
        _KernelHook.attach(owner)
        try:
            yield
        finally:
            _KernelHook.detach(owner)
    for _ in range(steps):
        timed_step(run, scope)
    us = acc[0] / max(acc[1], 1) / 1e3
    print(f"  Inductor's run a launch, no step recorded: {us:.1f} us", flush=True)
    return us


def launch_parts(run, scope, steps=30):
    """Per launch of Inductor's kernels under `scope` (a record_ops step, C++ backend), in us:
    the whole hook, Inductor's run inside it, the begin and end builtins, and the rest (the hook's
    Python, with this measurement's four wrappers). What the launch records cost outside C++."""
    import time
    from gparity import op_recorder
    pc = time.perf_counter_ns
    acc = {"total": 0, "run": 0, "begin": 0, "end": 0, "n": 0}
    original = op_recorder.OpRecorder._launch

    def timed(total_key, fn):
        def call(*a, **k):
            t = pc()
            try:
                return fn(*a, **k)
            finally:
                acc[total_key] += pc() - t
        return call

    def launch(self, run_, autotuner, args, kwargs, caller):
        begin, end = self._cpp.launch
        self._cpp.launch = (timed("begin", begin), timed("end", end))
        t = pc()
        try:
            return original(self, timed("run", run_), autotuner, args, kwargs, caller)
        finally:
            acc["total"] += pc() - t
            acc["n"] += 1
            self._cpp.launch = (begin, end)

    op_recorder.OpRecorder._launch = launch
    try:
        for _ in range(steps):
            timed_step(run, scope)
    finally:
        op_recorder.OpRecorder._launch = original
    n = max(acc["n"], 1)
    parts = {k: acc[k] / n / 1e3 for k in ("total", "run", "begin", "end")}
    parts["rest"] = parts["total"] - parts["run"] - parts["begin"] - parts["end"]
    parts["launches_a_step"] = acc["n"] / steps
    print("  launch parts (us a launch): " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()), flush=True)
    return parts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default="")
    ap.add_argument("--sections", action="store_true")
    ap.add_argument("--cprofile", default="")
    ap.add_argument("--launch-parts", action="store_true")
    args = ap.parse_args()
    if args.sections:
        os.environ["GPARITY_OPREC_SECTIONS"] = "1"  # read when the library first times a part
    gparity.load_ops()
    doc = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": []}
    for c in args.config or ["4096,512,2"]:
        (dim, seq, batch), model, x, compiled, tmp = compiled_setup(c, "oprec-parts-")
        recorders = Recorders(model, tmp)
        modes = {"compiled": contextlib.nullcontext, "hook": hooked}
        if hasattr(sys, "monitoring"):
            modes["unwind"] = unwinding
        modes["modules"] = module_hooks
        lib = gparity.op_recorder._cpp_library()
        if lib is not None and hasattr(lib, "gparity_oprec_probe_callbacks"):
            modes["rf_bare"] = probe_callbacks(1)
            modes["rf_io"] = probe_callbacks(2)
        modes["cpp_none"] = recorders.scope("none")
        modes["cpp_ops"] = ops_only(recorders.scope("none"))
        modes["cpp_shard"] = recorders.scope("shard")
        modes["cpp_none_pyhook"] = python_hook(recorders.scope("none"))
        modes["cpp_shard_pyhook"] = python_hook(recorders.scope("shard"))
        run = functools.partial(step, compiled, x)
        from torch._dynamo.utils import counters
        for name, scope in modes.items():  # compile, autotune, warm every mode
            before = dict(counters["stats"])
            for _ in range(3):
                timed_step(run, scope)
            # A mode that makes Dynamo compile anew (a guard it fails) runs another program.
            grew = {k: v - before.get(k, 0) for k, v in counters["stats"].items() if v != before.get(k, 0)}
            if grew:
                print(f"  {name}: dynamo {grew}", flush=True)
        for name in filter(None, args.cprofile.split(",")):
            print(f"  cProfile of {name}:", flush=True)
            cprofiled(run, modes[name])
        launch_times = None
        if args.launch_parts:
            hook_run = hook_run_time(run)
            launch_times = launch_parts(run, modes["cpp_none_pyhook"])
            launch_times["run_unrecorded"] = hook_run
        rows = {name: [] for name in modes}
        parts = {name: {} for name in modes}
        sections()
        for _ in range(args.rounds):
            for name, scope in modes.items():
                rows[name].append(timed_step(run, scope))
                for part, (us, calls) in sections().items():
                    total = parts[name].setdefault(part, [0.0, 0])
                    total[0] += us / args.rounds
                    total[1] += calls / args.rounds
        result = {"dim": dim, "seq": seq, "batch": batch, "modes": {}}
        if launch_times:
            result["launch_parts_us"] = launch_times
        base = statistics.median(t["total_ms"] for t in rows["compiled"])
        print(f"dim {dim} seq {seq} batch {batch}", flush=True)
        for name, r in rows.items():
            host = statistics.median(t["host_ms"] for t in r)
            total = statistics.median(t["total_ms"] for t in r)
            enter, leave = (statistics.median(t[k] for t in r) for k in ("enter_ms", "exit_ms"))
            result["modes"][name] = {"host_ms": host, "total_ms": total, "ratio": total / base,
                                     "enter_ms": enter, "exit_ms": leave}
            print(f"  {name:10s} host {host:6.2f}  total {total:6.2f} ms ({total / base:.2f}x)"
                  f"  enter {enter:.3f}  exit {leave:.3f}", flush=True)
            if args.sections and any(us for us, _ in parts[name].values()):
                result["modes"][name]["sections"] = parts[name]
                print("    " + ", ".join(f"{p} {us:.0f} us/{calls:.0f}" for p, (us, calls) in parts[name].items()
                                         if calls), flush=True)
        recorders.close()
        doc["results"].append(result)
        del model, compiled, x
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
