#!/usr/bin/env python3
"""GPU benchmark of `gparity replay` on a transformer block (issue 12; docs/replay.md).

On one GPU, with the machine's PyTorch (2.11 on the device machine):
  1. compiles a pre-norm transformer block (RMSNorm, causal SDPA attention, GELU MLP; bf16;
     --dim 2048, --seq 1024 by default) with torch.compile through aot_autograd, with TORCH_TRACE
     on, so the trace holds its aot_forward_graph and aot_backward_graph; the backend keeps the
     GraphModules aot_autograd hands it;
  2. per graph, in rounds, side by side in this one process: PyTorch eager running the graph
     (GraphModule.__call__ under inference_mode, the inputs random tensors of the placeholders'
     shapes), `gparity replay --no-hash --repeat N` and `gparity replay --repeat N` (every node
     hashed on the GPU with the defaults of issue 24: the shard-invariant hash, views recorded by
     their base and not hashed), beside `--node-hash both` (XXH3-64 too) and `--node-hash both
     --hash-views` (the behaviour before issue 24: every tensor, both hashes) of the same graph
     from the trace, optionally `--cuda-graph`, and any --variant (other replay arguments, e.g.
     `--node-hash-stream side`);
  3. prints and writes (--out JSON) the medians and the ratios:
       replay / eager          goal <= 1.10
       hashed / replay - 1     goal <= --goal (0.30 at dim 2048; 0.15 at dim 4096, hidden 16384)

Every timed run is synchronised before and after (torch.cuda.synchronize in Python, the device
in gparity). gparity generates its own inputs (docs/replay.md, "Inputs"); the values differ from
Python's but shapes, dtypes and strides are the same, so the kernels are.

  TORCH_TRACE=DIR python3 bench/replay_gpu_bench.py --gparity BUILD/cli/gparity --trace DIR --out OUT.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from transformer_block import Block  # bench/, this script's folder


def capture_graphs(args):
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    saved = {}

    def keep(kind):
        def compiler(gm, example_inputs):
            saved[kind] = gm
            return make_boxed_func(gm.forward)

        return compiler

    torch.manual_seed(0)
    block = Block(args.dim, args.heads, args.hidden).to(device="cuda", dtype=torch.bfloat16)
    x = torch.randn(args.batch, args.seq, args.dim, device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(block, backend=aot_autograd(fw_compiler=keep("fw"), bw_compiler=keep("bw")))
    compiled(x).float().square().mean().backward()
    torch.cuda.synchronize()
    return saved


def placeholder_inputs(gm):
    gen = torch.Generator(device="cuda").manual_seed(1)
    out = []
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        v = n.meta.get("val")
        if not isinstance(v, torch.Tensor):
            raise SystemExit(f"placeholder {n.name} is not a tensor ({type(v).__name__}); the bench needs static shapes")
        t = torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device="cuda")
        if t.is_floating_point():
            t.uniform_(-1, 1, generator=gen)
        else:
            t.zero_()
        out.append(t)
    return out


def time_eager(gm, inputs, runs):
    ms = []
    with torch.inference_mode():
        for _ in range(3):
            gm(*inputs)
        for _ in range(runs):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            gm(*inputs)
            torch.cuda.synchronize()
            ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def time_replay(args, kind, extra, out_dir):
    cmd = [args.gparity, "replay", args.trace, "--graph", kind, "--device", "cuda", "--out", out_dir,
           "--repeat", str(args.runs + 3), "--json"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    # --cuda-graph exits 1 when the captured run's bits differ (a verdict, recorded by the caller).
    if p.returncode != 0 and not (p.returncode == 1 and "--cuda-graph" in extra):
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-4000:]}")
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    if "cuda_graph" in summary:
        return summary["cuda_graph"]["captured"]["ms"][3:], summary
    rep = summary["graphs"][0]["repeat"]
    if extra and "last_run_hashing" in rep:
        print(f"  {kind} {' '.join(extra)}: median {rep['median_ms']:.3f} ms; last run's hashing "
              f"{json.dumps(rep['last_run_hashing'])}", flush=True)
    return rep["ms"][3:], summary  # the first 3: warm-up, as in eager


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gparity", required=True)
    ap.add_argument("--trace", required=True, help="the TORCH_TRACE folder this process writes")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=8192)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cuda-graph", action="store_true", help="also time gparity replay --cuda-graph")
    ap.add_argument("--goal", type=float, default=0.30, help="hashing overhead goal with the defaults")
    ap.add_argument("--spec-v1", action="store_true",
                    help="also time the defaults with --node-hash-spec v1 (the defaults hash with spec v2)")
    ap.add_argument("--no-full", action="store_true", help="skip --node-hash both --hash-views (saves time)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="also time `gparity replay` with these extra arguments (space separated), reported "
                         "as NAME beside the defaults, e.g. 'side8=--node-hash-stream side "
                         "--node-hash-side-share 0.125' (repeatable)")
    args = ap.parse_args()
    variants = []
    for v in args.variant:
        name, sep, extra = v.partition("=")
        if not sep or not name or name in ("eager", "replay", "hashed", "cuda_graph"):
            raise SystemExit(f"--variant {v!r}: expected NAME=ARGS with a new NAME")
        variants.append((name, extra.split()))
    if os.environ.get("TORCH_TRACE") != args.trace:
        raise SystemExit("run with TORCH_TRACE set to --trace")
    graphs = capture_graphs(args)
    result = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
              "shape": {k: getattr(args, k) for k in ("dim", "heads", "hidden", "seq", "batch")},
              "dtype": "bf16", "runs": args.runs, "rounds": args.rounds, "graphs": {}}
    for key, kind in (("fw", "aot_forward_graph"), ("bw", "aot_backward_graph")):
        gm = graphs[key]
        inputs = placeholder_inputs(gm)
        ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
        series = {"eager": [], "replay": [], "hashed": [], "hashed_both": [], "hashed_full": []}
        if args.cuda_graph:
            series["cuda_graph"] = []
        if args.spec_v1:
            series["hashed_v1"] = []
        if args.no_full:
            del series["hashed_full"]
        for name, _ in variants:
            series["variant_" + name] = []
        for r in range(args.rounds):
            series["eager"] += time_eager(gm, inputs, args.runs)
            base = f"{args.out}.runs/{key}-{r}"
            series["replay"] += time_replay(args, kind, ["--no-hash"], base + "-nohash")[0]
            series["hashed"] += time_replay(args, kind, [], base + "-hash")[0]
            if args.spec_v1:
                series["hashed_v1"] += time_replay(args, kind, ["--node-hash-spec", "v1"], base + "-v1")[0]
            series["hashed_both"] += time_replay(args, kind, ["--node-hash", "both"], base + "-both")[0]
            for name, extra in variants:
                series["variant_" + name] += time_replay(args, kind, extra, f"{base}-{name}")[0]
            if not args.no_full:
                series["hashed_full"] += time_replay(args, kind, ["--node-hash", "both", "--hash-views"],
                                                     base + "-full")[0]
            if args.cuda_graph:
                ms, summary = time_replay(args, kind, ["--cuda-graph"], base + "-cg")
                series["cuda_graph"] += ms
                verdicts = result.setdefault("cuda_graph_verdicts", {}).setdefault(kind, [])
                verdicts.append(summary["verdict"]["text"])
        med = {k: statistics.median(v) for k, v in series.items()}
        g = {"ops": ops, "median_ms": med, "ms": series,
             "replay_over_eager": med["replay"] / med["eager"],
             "hashing_overhead": med["hashed"] / med["replay"] - 1,
             "hashing_overhead_both": med["hashed_both"] / med["replay"] - 1,
             "goal": args.goal}
        for name in ("full", "v1"):
            if "hashed_" + name in med:
                g["hashing_overhead_" + name] = med["hashed_" + name] / med["replay"] - 1
        for name, extra in variants:
            g["hashing_overhead_" + name] = med["variant_" + name] / med["replay"] - 1
        if args.cuda_graph:
            g["cuda_graph_over_replay"] = med["cuda_graph"] / med["replay"]
        result["graphs"][kind] = g
        print(f"{kind}: {ops} ops; eager {med['eager']:.3f} ms, replay {med['replay']:.3f} ms, "
              f"hashed (defaults) {med['hashed']:.3f} ms (--node-hash both {med['hashed_both']:.3f} ms" +
              (f", both with --hash-views {med['hashed_full']:.3f} ms" if "hashed_full" in med else "") +
              (f", defaults with spec v1 {med['hashed_v1']:.3f} ms" if "hashed_v1" in med else "") + ")" +
              (f", captured {med['cuda_graph']:.3f} ms" if args.cuda_graph else "") +
              f"; replay/eager {g['replay_over_eager']:.3f} (goal <= 1.10), "
              f"hashing +{100 * g['hashing_overhead']:.1f}% (goal <= {100 * args.goal:.0f}%), "
              f"--node-hash both +{100 * g['hashing_overhead_both']:.1f}%" +
              (f", with --hash-views +{100 * g['hashing_overhead_full']:.1f}%" if "hashed_full" in med else "") +
              (f", spec v1 +{100 * g['hashing_overhead_v1']:.1f}%" if "hashed_v1" in med else ""), flush=True)
        for name, extra in variants:
            print(f"{kind}: {name} ({' '.join(extra)}) {med['variant_' + name]:.3f} ms, "
                  f"+{100 * g['hashing_overhead_' + name]:.1f}%", flush=True)
        # Is the graph deterministic? The same graph twice, uncaptured, on the same inputs.
        p = subprocess.run([args.gparity, "replay", args.trace, "--graph", kind, "--against", args.trace, "--device",
                            "cuda", "--out", f"{args.out}.runs/{key}-twice", "--json"],
                           capture_output=True, text=True, timeout=600)
        twice = json.loads(p.stdout.strip().splitlines()[-1])["verdict"]["text"] if p.returncode in (0, 1) else p.stderr
        g["same_graph_twice"] = twice
        print(f"{kind} twice, uncaptured: {twice}", flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
