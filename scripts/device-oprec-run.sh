#!/usr/bin/env bash
# One device call for the op recorder's GPU benchmark (issue 23; docs/ops.md, "Performance"):
# builds libgparity_torchops against the machine's pip LibTorch and CUDA, checks the recorder on
# the GPU (every op's hashes read back once a step; a record per op), then runs
# bench/ops_recorder_gpu_bench.py (plain step vs record_ops vs DebugMode, side by side) on the
# two shapes of the issue. Everything is logged under $OUT.
#
#   bash CARRY/src/scripts/device-oprec-run.sh CARRY
#     CARRY  made by scripts/device-carry.sh
#   BENCH_ARGS  extra arguments for the benchmark (e.g. "--rounds 3")
set -uo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,11p' "$0"
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1"
build=/tmp/gparity-build
device_build "$carry" "$build" "$out/build.log" gparity_torchops || exit 1
export GPARITY_TORCHOPS=$build/core/torchops/libgparity_torchops.so
cd "$carry/src" || exit 1
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
PY
say "benchmark"
timeout 420 python3 bench/ops_recorder_gpu_bench.py --out "$out/ops_recorder_gpu_bench.json" \
  ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.txt"
