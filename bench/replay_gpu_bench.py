#!/usr/bin/env python3
"""What `gparity replay`'s hashing costs on a transformer block, against the bytes it must read
(issues 12, 24, 33; docs/replay.md, "Issue 33").

Per shape (--quick: dim 2048 / 16 heads / hidden 8192, and dim 4096 / 32 heads / hidden 16384;
seq 1024, batch 2, bf16) and direction (aot_forward_graph, aot_backward_graph), side by side in
one call, medians of --runs timed runs (`gparity replay --repeat`, the first 3 dropped):
  replay   `--no-hash`: the graph alone
  full     `--node-hash shard`: every node hashed with the defaults (the shard hash; views by
           their base). Its hash time (full - replay) is set against its floor:
  floor    bytes hashed (the run's last_run_hashing.bytes) / copy bandwidth, the bandwidth of a
           device-to-device copy of as many bytes timed in this process (bytes read + written per
           second): reading each hashed byte once at the rate the memory moves bytes.
           goal: (full - replay) / floor <= 1.15
  lazy     `--node-hash lazy` (the default of --repeat, --against, --coor): the outputs, the
           collectives' inputs and in-place writes only, what a parity run hashes.
           goal: lazy / replay - 1 <= 0.10
  planted  (--quick: dim 2048 only) a divergence planted in a copy of the graph (plant(): its first elementwise op with a
           float constant takes another): `--against` it with --node-hash lazy and shard must
           name the same first divergent node, cause and exit code (the lazy run's second pass
           hashes every node).
  eager    PyTorch running the same GraphModule (GPU only).
One table on stdout; everything (every timed run, the bytes, the verdicts) in --out JSON.

  python3 bench/replay_gpu_bench.py --quick --gparity BUILD/cli/gparity [--out OUT.json]
      one H100: both shapes, 10 runs a variant, about 3 minutes
  python3 bench/replay_gpu_bench.py --device cpu --quick --gparity BUILD/cli/gparity
      smoke check on the CPU (any torch, 1.13 included): samples/replay's attention graphs
  python3 bench/replay_gpu_bench.py --gparity G --dim 4096 --heads 32 --hidden 16384 [--rounds 3]
      one shape (it sets TORCH_TRACE for itself: --trace, default a temporary folder)

On the GPU the graphs come from torch.compile through aot_autograd with TORCH_TRACE on (the
backend keeps the GraphModules). gparity generates its own inputs (docs/replay.md, "Inputs"):
shapes, dtypes and strides are the graph's, so the kernels are. Every timed run is synchronised.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
QUICK_SHAPES = [(2048, 16, 8192), (4096, 32, 16384)]
FLOOR_GOAL = 1.15
LAZY_GOAL = 0.10
WARMUP = 3  # timed runs dropped (gparity's and eager's)


# ---- the graphs ----

def capture_graphs(args):
    """{key: (kind, GraphModule)} of the compiled block; TORCH_TRACE (set to args.trace) keeps them."""
    import torch
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    sys.path.insert(0, HERE)
    from transformer_block import Block

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
    return {"fw": ("aot_forward_graph", saved["fw"]), "bw": ("aot_backward_graph", saved["bw"])}


def readable(gm):
    """The GraphModule as print_readable text with annotations (what TORCH_TRACE holds)."""
    return gm.print_readable(print_output=False, include_stride=True, include_device=True)


def plant(text):
    """`text` with one planted divergence, or None: the first elementwise op with a float constant
    (`aten.mul/div/add/sub(x, c)`) takes another constant (c * 1.5, c + 1 for add and sub), so
    that both graphs keep their node names; without one, `x_planted = x * 1.5` after the first
    matrix product x, its later uses reading x_planted."""
    lines = text.splitlines()
    scalar = re.compile(r"^(.* = torch\.ops\.aten\.(mul|div|add|sub)\.(?:Tensor|Scalar)\(\w+, )"
                        r"(-?\d+\.\d*(?:e-?\d+)?|-?\d+e-?\d+)(\).*)$")
    for i, line in enumerate(lines):
        m = scalar.match(line)
        if m:
            c = float(m.group(3))
            c = c + 1.0 if m.group(2) in ("add", "sub") else (c * 1.5 if c != 0 else 1.0)
            lines[i] = m.group(1) + repr(c) + m.group(4)
            return "\n".join(lines) + "\n"
    product = re.compile(r'^(\s+)(\w+): ("[^"]+") = torch\.ops\.aten\.(mm|bmm|addmm)\.default\(')
    for i, line in enumerate(lines):
        m = product.match(line)
        if not m:
            continue
        indent, name, ann = m.group(1), m.group(2), m.group(3)
        new = name + "_planted"
        use = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?![\w])")
        later = [use.sub(new, x) for x in lines[i + 1:]]
        planted = f"{indent}{new}: {ann} = torch.ops.aten.mul.Tensor({name}, 1.5)"
        return "\n".join(lines[:i + 1] + [planted] + later) + "\n"
    return None


# ---- timing ----

def run_gparity(args, argv, timeout=600):
    p = subprocess.run([args.gparity, "replay", *argv], capture_output=True, text=True, timeout=timeout)
    summaries = []
    for line in p.stdout.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if isinstance(j, dict) and "rank" in j:
            summaries.append(j)
    return p, summaries


def time_replay(args, source, extra, out_dir):
    """The timed runs (ms, warm-up dropped) and the summary of `gparity replay SOURCE --repeat`."""
    argv = [*source, "--device", args.device, "--out", out_dir, "--repeat", str(args.runs + WARMUP), "--json",
            *extra]
    p, summaries = run_gparity(args, argv)
    # --cuda-graph exits 1 when the captured run's bits differ (a verdict, kept in the JSON).
    if not summaries or (p.returncode != 0 and not (p.returncode == 1 and "--cuda-graph" in extra)):
        raise SystemExit(f"gparity replay {' '.join(argv)}: exit {p.returncode}\n{p.stderr[-4000:]}")
    if "cuda_graph" in summaries[-1]:
        return summaries[-1]["cuda_graph"]["captured"]["ms"][WARMUP:], summaries[-1]
    rep = summaries[-1]["graphs"][0]["repeat"]
    return rep["ms"][WARMUP:], summaries[-1]


def sync(device):
    import torch
    if device == "cuda":
        torch.cuda.synchronize()


def time_eager(gm, device, runs):
    """PyTorch running the GraphModule on random inputs of its placeholders' shapes and strides."""
    import torch
    gen = torch.Generator(device=device).manual_seed(1)
    inputs = []
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        v = n.meta.get("val")
        if not isinstance(v, torch.Tensor):
            return None
        t = torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device=device)
        if t.is_floating_point():
            t.uniform_(-1, 1, generator=gen)
        else:
            t.zero_()
        inputs.append(t)
    ms = []
    with torch.inference_mode():
        for i in range(runs + WARMUP):
            sync(device)
            t0 = time.perf_counter()
            gm(*inputs)
            sync(device)
            if i >= WARMUP:
                ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def copy_bandwidth(nbytes, device, runs):
    """Bytes moved per ms (read + written) by a copy of `nbytes` bytes on `device`, median."""
    import torch
    nbytes = max(int(nbytes), 1 << 20)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    src.fill_(1)
    ms = []
    for i in range(runs + WARMUP):
        sync(device)
        t0 = time.perf_counter()
        dst.copy_(src)
        sync(device)
        if i >= WARMUP:
            ms.append((time.perf_counter() - t0) * 1e3)
    del src, dst
    return 2 * nbytes / statistics.median(ms)


def planted_check(args, a_text, name, work):
    """--against a planted copy, lazy and hashing every node: the verdicts side by side."""
    b_text = plant(a_text)
    if b_text is None:
        return {"skipped": "no matrix product to plant after"}
    a_path, b_path = os.path.join(work, name + ".txt"), os.path.join(work, name + "_planted.txt")
    for path, text in ((a_path, a_text), (b_path, b_text)):
        with open(path, "w") as f:
            f.write(text)
    out = {}
    for mode in ("lazy", "shard"):
        p, s = run_gparity(args, [a_path, "--against", b_path, "--device", args.device, "--node-hash", mode, "--json",
                                  "--out", os.path.join(work, f"{name}-planted-{mode}")])
        v = s[-1]["verdict"] if s else {}
        out[mode] = {"exit": p.returncode, "first_divergent": v.get("first_divergent"), "cause": v.get("cause"),
                     "text": v.get("text", p.stderr[-400:]), "node_hash": s[-1].get("node_hash") if s else None}
    lz, full = out["lazy"], out["shard"]
    out["same"] = (lz["exit"] == full["exit"] == 1 and lz["first_divergent"] == full["first_divergent"]
                   and lz["cause"] == full["cause"] and lz["text"] == full["text"])
    return out


def median(xs):
    return statistics.median(xs) if xs else None


def bench_graph(args, key, kind, source, gm, text, work):
    """One graph: every variant's runs in --rounds rounds, side by side; the floor; the planted check."""
    series = {"replay": [], "full": [], "lazy": []}
    if args.both:
        series["both"] = []
    if args.cuda_graph:
        series["cuda_graph"] = []
    variants = [(name, extra if "--node-hash" in extra else ["--node-hash", "shard", *extra])
                for name, extra in args.variants]
    for name, _ in variants:
        series["variant_" + name] = []
    series["eager"] = [] if gm is not None else None
    runs = [("replay", ["--no-hash"]), ("full", ["--node-hash", "shard"]), ("lazy", ["--node-hash", "lazy"])]
    if args.both:
        runs.append(("both", ["--node-hash", "both"]))
    if args.cuda_graph:
        runs.append(("cuda_graph", ["--cuda-graph"]))
    runs += [("variant_" + name, extra) for name, extra in variants]
    summaries = {}
    for r in range(args.rounds):
        base = os.path.join(work, f"{key}-{r}")
        if series["eager"] is not None:
            series["eager"] += time_eager(gm, args.device, args.runs) or []
        for name, extra in runs:
            ms, summaries[name] = time_replay(args, source, extra, f"{base}-{name}")
            series[name] += ms
    med = {k: median(v) for k, v in series.items() if v}
    hashing = summaries["full"]["graphs"][0]["repeat"]["last_run_hashing"]
    lazy_hashing = summaries["lazy"]["graphs"][0]["repeat"]["last_run_hashing"]
    nbytes = hashing["bytes"]
    bw = copy_bandwidth(nbytes, args.device, max(args.runs, 10))
    floor = nbytes / bw
    g = {"kind": kind, "median_ms": med, "ms": series, "bytes_hashed": nbytes, "tensors_hashed": hashing["tensors"],
         "lazy_bytes_hashed": lazy_hashing["bytes"], "lazy_tensors_hashed": lazy_hashing["tensors"],
         "copy_gb_per_s": bw / 1e6, "floor_ms": floor, "hash_ms": med["full"] - med["replay"],
         "floor_ratio": (med["full"] - med["replay"]) / floor if floor > 0 else None, "floor_goal": FLOOR_GOAL,
         "lazy_overhead": med["lazy"] / med["replay"] - 1, "lazy_goal": LAZY_GOAL,
         "full_overhead": med["full"] / med["replay"] - 1}
    for name in med:
        if name.startswith("variant_") or name in ("both", "cuda_graph"):
            g[name + "_overhead"] = med[name] / med["replay"] - 1
    if "cuda_graph" in summaries:
        g["cuda_graph_verdict"] = summaries["cuda_graph"].get("verdict", {}).get("text")
    if args.planted:
        g["planted"] = planted_check(args, text, key, work)
    return g


# ---- one shape, the table ----

def run_shape(args):
    """One shape on the GPU (TORCH_TRACE = args.trace), or the CPU samples: {key: graph result}."""
    work = args.work or tempfile.mkdtemp(prefix="replay-bench-")
    os.makedirs(work, exist_ok=True)
    if args.device == "cuda":
        import torch
        graphs = {}
        for key, (kind, gm) in capture_graphs(args).items():
            graphs[key] = (kind, [args.trace, "--graph", kind], gm, readable(gm))
        meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
                "shape": {k: getattr(args, k) for k in ("dim", "heads", "hidden", "seq", "batch")}, "dtype": "bf16"}
    else:
        import torch
        samples = os.path.join(HERE, "..", "samples", "replay")
        graphs = {}
        for key, name in (("fw", "attention_aot_forward"), ("bw", "attention_aot_backward")):
            path = os.path.join(samples, name + ".txt")
            with open(path) as f:
                graphs[key] = (name, [path], None, f.read())
        meta = {"torch": torch.__version__, "gpu": None, "shape": {"graphs": "samples/replay attention (CPU smoke)"},
                "dtype": "f32"}
    result = dict(meta, runs=args.runs, rounds=args.rounds, device=args.device, graphs={})
    for key, (kind, source, gm, text) in graphs.items():
        result["graphs"][kind] = bench_graph(args, key, kind, source, gm, text, work)
    return result


def shape_name(r):
    s = r["shape"]
    return f"dim {s['dim']}/h{s['hidden']}" if "dim" in s else "samples"


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(results):
    rows = ["| shape | graph | eager ms | replay ms | full ms | MB hashed | copy GB/s | floor ms | "
            "(full-replay)/floor (goal <= 1.15) | lazy ms | lazy over replay (goal <= +10%) | lazy MB | planted: lazy = full |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        for kind, g in r["graphs"].items():
            med = g["median_ms"]
            planted = g.get("planted")
            p = "-" if planted is None else ("skipped" if "skipped" in planted else
                                             ("yes: " if planted["same"] else "NO: ") +
                                             str((planted["lazy"]["first_divergent"] or {}).get("node")) + ", " +
                                             str(planted["lazy"]["cause"]))
            rows.append(
                f"| {shape_name(r)} | {kind} | {fmt(med.get('eager'), '.3f')} | {med['replay']:.3f} | "
                f"{med['full']:.3f} (+{100 * g['full_overhead']:.1f}%) | {g['bytes_hashed'] / 1e6:.4g} | "
                f"{g['copy_gb_per_s']:.0f} | {g['floor_ms']:.3f} | {fmt(g['floor_ratio'], '.2f')}x | {med['lazy']:.3f} | "
                f"{100 * g['lazy_overhead']:+.1f}% | {g['lazy_bytes_hashed'] / 1e6:.4g} | {p} |")
    return "\n".join(rows)


def child_args(args, shape, trace, out, planted):
    dim, heads, hidden = shape
    argv = [sys.executable, os.path.abspath(__file__), "--gparity", args.gparity, "--device", args.device,
            "--dim", str(dim), "--heads", str(heads), "--hidden", str(hidden), "--seq", str(args.seq),
            "--batch", str(args.batch), "--runs", str(args.runs), "--rounds", str(args.rounds), "--trace", trace,
            "--out", out, "--no-table"]
    if planted:
        argv.append("--planted")
    if args.both:
        argv.append("--both")
    if args.cuda_graph:
        argv.append("--cuda-graph")
    for name, extra in args.variants:
        argv += ["--variant", name + "=" + " ".join(extra)]
    return argv


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gparity", default=os.environ.get("GPARITY_EXE"), help="the gparity binary ($GPARITY_EXE)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--quick", action="store_true",
                    help="both shapes (GPU) or the CPU samples, --runs 10, one round, the planted check "
                         "(on the GPU in the first shape)")
    ap.add_argument("--out", help="JSON to write (default: $OUT/replay_gpu_bench.json, else ./replay_gpu_bench.json)")
    ap.add_argument("--trace", help="TORCH_TRACE folder of one shape (default: a temporary folder)")
    ap.add_argument("--work", help="folder for the replays' run directories (default: a temporary folder)")
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=8192)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--planted", action="store_true", help="the planted divergence check (on with --quick)")
    ap.add_argument("--both", action="store_true", help="also time --node-hash both (XXH3-64 beside the shard hash)")
    ap.add_argument("--cuda-graph", action="store_true", help="also time gparity replay --cuda-graph (GPU)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="also time `gparity replay` with these arguments (after --node-hash shard unless they "
                         "name --node-hash), e.g. 'b64=--node-hash-batch 64' (repeatable)")
    ap.add_argument("--no-table", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-full", action="store_true", help=argparse.SUPPRESS)  # older command lines
    ap.add_argument("--goal", type=float, help=argparse.SUPPRESS)              # older command lines
    args = ap.parse_args()
    if not args.gparity or not os.access(args.gparity, os.X_OK):
        raise SystemExit(f"--gparity {args.gparity!r}: not an executable (give the build's cli/gparity)")
    args.gparity = os.path.abspath(args.gparity)
    args.variants = []
    for v in args.variant:
        name, sep, extra = v.partition("=")
        if not sep or not name or name in ("replay", "full", "lazy", "both", "eager", "cuda_graph"):
            raise SystemExit(f"--variant {v!r}: expected NAME=ARGS with a new NAME")
        args.variants.append((name, extra.split()))
    if args.quick:
        args.runs, args.rounds, args.planted = min(args.runs, 10), 1, True
    out = args.out or os.path.join(os.environ.get("OUT", "."), "replay_gpu_bench.json")
    t0 = time.time()
    if args.device == "cuda" and (args.quick or os.environ.get("TORCH_TRACE") != args.trace):
        # Each shape in a process of its own, TORCH_TRACE set before torch starts.
        top = tempfile.mkdtemp(prefix="replay-bench-")
        shapes = QUICK_SHAPES if args.quick else [(args.dim, args.heads, args.hidden)]
        results = []
        for i, shape in enumerate(shapes):
            trace = args.trace if (args.trace and not args.quick) else os.path.join(top, f"trace-{i}")
            child_out = os.path.join(top, f"shape-{i}.json")
            env = dict(os.environ, TORCH_TRACE=trace)
            # --quick plants its divergence in the first shape only (the GPU time is short).
            planted = args.planted and not (args.quick and i > 0)
            p = subprocess.run(child_args(args, shape, trace, child_out, planted), env=env)
            if p.returncode != 0:
                raise SystemExit(f"shape {shape}: exit {p.returncode}")
            with open(child_out) as f:
                results.append(json.load(f))
    else:
        results = [run_shape(args)]
    doc = {"shapes": results, "seconds": time.time() - t0, "goals": {"floor_ratio": FLOOR_GOAL, "lazy_overhead": LAZY_GOAL}}
    if args.no_table:
        doc = results[0]
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, out)
    if not args.no_table:
        print(table(results))
        print(f"({time.time() - t0:.0f} s; JSON: {out})")
        planted_bad = [k for r in results for k, g in r["graphs"].items()
                       if g.get("planted") and not g["planted"].get("same", True) and "skipped" not in g["planted"]]
        if planted_bad:
            print("planted divergence: lazy and full disagree on " + ", ".join(planted_bad))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
