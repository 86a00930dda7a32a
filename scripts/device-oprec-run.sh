#!/usr/bin/env bash
# One device call for the op recorder's GPU benchmark (issue 23; docs/ops.md, "Performance"):
# builds libgparity_torchops against the machine's pip LibTorch and CUDA, checks the recorder on
# the GPU (every op's hashes read back once a step; a record per op; both backends, C++ and
# Python, on one CUDA step), then runs bench/ops_recorder_gpu_bench.py (plain step vs record_ops
# with each backend vs DebugMode, side by side) on the two shapes of the issue. Everything is
# logged under $OUT (and which Python headers the C++ recorder was built with).
#
#   bash CARRY/src/scripts/device-oprec-run.sh CARRY
#     CARRY  made by scripts/device-carry.sh
#   BENCH_ARGS  extra arguments for the benchmark (e.g. "--rounds 3")
#   SKIP_BENCH=1  the smoke test and the two backends' comparison only
set -uo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,12p' "$0"
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1"
build=/tmp/gparity-build
device_build "$carry" "$build" "$out/build.log" gparity_torchops || exit 1
export GPARITY_TORCHOPS=$build/core/torchops/libgparity_torchops.so
cd "$carry/src" || exit 1
say "python headers: $(python3 -c 'import sys, sysconfig, os; i = sysconfig.get_paths()["include"]; print(sys.version.split()[0], i, os.path.exists(os.path.join(i, "Python.h")))')"
grep -a "gparity_torchops:" "$out/build.log" || true
say "recorder smoke test"
timeout 120 python3 - <<'PY' 2>&1 | tee "$out/smoke.txt"
import json, os, sys, tempfile
sys.path.insert(0, "python")
import torch, gparity
d = tempfile.mkdtemp()
lin = torch.nn.Linear(64, 64).cuda()
x = torch.randn(8, 64, device="cuda")
with gparity.record_ops(d, step=1, model=lin, rank=0, world_size=1):
    lin(x).square().mean().backward()
recs = [json.loads(l) for l in open(os.path.join(d, "rank-0.jsonl"))]
ref = gparity.hash_tensor(lin(x).detach())[0]
print(len(recs), "records;", sorted({r["phase"] for r in recs}), "; addmm output xxh3",
      recs[1]["outs"][0]["xxh3"], "== hash_tensor:", recs[1]["outs"][0]["xxh3"] == format(ref, "016x"))
# Both backends on one CUDA step (autograd's device thread runs the backward): the same records?
sys.path.insert(0, "bench")
from ops_recorder_gpu_bench import Net
by = {}
for backend in ("python", "cpp"):
    torch.manual_seed(0)
    net = Net(256, 2).cuda().bfloat16()
    xb = torch.randn(2, 64, 256, device="cuda", dtype=torch.bfloat16)
    d = tempfile.mkdtemp()
    rec = gparity.OpRecorder(d, model=net, rank=0, world_size=1, backend=backend)
    with rec.record(1):
        net(xb).float().square().mean().backward()
    rec.close()
    by[backend] = [json.loads(l) for l in open(os.path.join(d, "rank-0.jsonl"))]
for backend, recs in by.items():
    print(backend, len(recs), "records", {p: sum(r["phase"] == p for r in recs) for p in ("forward", "backward")},
          "with source", sum("source" in r for r in recs), "with module", sum("module" in r for r in recs))
def outs(recs):
    return sorted(o["shard"] for r in recs for o in r["outs"] if "shard" in o)
print("forward ops equal:", [r["op"] for r in by["python"] if r["phase"] == "forward"] ==
      [r["op"] for r in by["cpp"] if r["phase"] == "forward"])
print("output hash sets equal:", set(outs(by["python"])) == set(outs(by["cpp"])),
      len(set(outs(by["python"])) ^ set(outs(by["cpp"]))), "differ")
print("views:", {b: sum("view" in t for r in recs for t in r["outs"] + r["args"]) for b, recs in by.items()})
for backend, recs in by.items():
    other = set(outs(by["cpp" if backend == "python" else "python"]))
    for r in recs:
        for i, o in enumerate(r["outs"]):
            if "shard" in o and o["shard"] not in other:
                print("only", backend, r["index"], r["phase"], r["op"], "out", i, o["dtype"], o["shape"], o["shard"])
for backend, recs in by.items():
    print(backend, " ".join(r["op"].replace("aten::", "") for r in recs[:40]))
# The attention ops' RNG state and debug outputs: unhashed and marked in both backends (docs/ops.md).
for backend, recs in by.items():
    marked = [(r["op"].replace("aten::", ""), io, i, t["unhashed"], "shard" in t)
              for r in recs for io, ts in (("out", r["outs"]), ("arg", r["args"])) for i, t in enumerate(ts)
              if "unhashed" in t]
    print(backend, "unhashed:", len(marked), marked[:8])
PY
if [ "${SKIP_BENCH:-0}" = 1 ]; then
  say "benchmark skipped (SKIP_BENCH=1)"
  exit 0
fi
say "benchmark"
timeout 420 python3 bench/ops_recorder_gpu_bench.py --out "$out/ops_recorder_gpu_bench.json" \
  ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.txt"
