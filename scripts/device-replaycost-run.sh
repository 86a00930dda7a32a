#!/usr/bin/env bash
# One device call for issue 24's replay cost (docs/replay.md, "XXH3's chains on the host"): builds
# gparity and the CUDA tests there, runs the tests that compare GPU hashes with the CPU's (step 1),
# and bench_hash_cuda's XXH3 chain figures, then bench/replay_gpu_bench.py at dim 2048 (step 2) and at dim 4096 / hidden 16384 (--goal 0.15;
# step 3), one round: the defaults beside XXH3's chains on the device, --node-hash-batch at each of
# BATCHES MiB and any EXTRA variant; keeps the bench's TORCH_TRACE (the graphs) under $OUT.
# Bounded by DEADLINE_S (default 520).
#
#   bash CARRY/src/scripts/device-replaycost-run.sh CARRY
#   BATCHES   MiB a batch on the graph's stream to time beside the defaults (default "16 64")
#   EXTRA     more bench --variant arguments, '|' separated NAME=ARGS
set -uo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,10p' "$0"
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1 2 3"
deadline=$((SECONDS + ${DEADLINE_S:-520}))
left() { echo $((deadline - SECONDS)); }
device_nccl_include
build=/tmp/gparity-build
device_build "$carry" "$build" "$out/build.log" gparity hash_cuda_tests runtime_tests runtime_replay_tests bench_hash_cuda
G=$build/cli/gparity

if want 1; then
  say "1. CUDA tests ($(left) s left)"
  timeout 120 "$build/tests/hash/hash_cuda_tests" >"$out/hash_cuda_tests.txt" 2>&1
  timeout 60 "$build/tests/runtime/runtime_tests" --gtest_filter='DeferredHashes*:HashBlocks*' \
    >"$out/runtime_tests.txt" 2>&1
  timeout 120 "$build/tests/runtime/runtime_replay_tests" \
    --gtest_filter='Replay.Cuda*:Replay.GraphOutputs*:Replay.WritesNodeRecords*:Replay.NodeHash*' \
    >"$out/runtime_replay_tests.txt" 2>&1
  grep -hE "^\[  (PASSED|FAILED|SKIPPED) |Failure|^\[  FAILED" "$out"/hash_cuda_tests.txt "$out"/runtime_tests.txt \
    "$out"/runtime_replay_tests.txt | head -30
  say "XXH3 of one buffer, the chain on the device and on the host, and the copy of its block sums"
  GPARITY_BENCH_CUDA_MAX_MIB=256 timeout 120 "$build/bench/bench_hash_cuda" --benchmark_filter='chain|d2h' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_color=false 2>&1 |
    tee "$out/bench_hash_cuda_chains.txt" | grep -E "median"
fi

variants=(--variant "devchains=--node-hash-xxh3-chains device"
  --variant "bothdev=--node-hash both --node-hash-xxh3-chains device")
for mib in ${BATCHES:-16 64}; do variants+=(--variant "b${mib}=--node-hash-batch $mib"); done
IFS='|' read -r -a extra <<<"${EXTRA:-}"
for v in "${extra[@]}"; do [ -n "$v" ] && variants+=(--variant "$v"); done
bench() {  # name args...
  local name=$1
  shift
  local t
  t=$(left)
  [ "$t" -gt 30 ] || { say "no time left for $name"; return; }
  say "bench $name ($t s left)"
  rm -rf "/tmp/trace-$name"
  TORCH_TRACE="/tmp/trace-$name" CUDA_VISIBLE_DEVICES=0 timeout "$t" python3 "$carry/src/bench/replay_gpu_bench.py" \
    --gparity "$G" --trace "/tmp/trace-$name" --out "/tmp/replaycost/bench_$name.json" --rounds 1 --no-full \
    "${variants[@]}" "$@" 2>&1 | tee "$out/bench_$name.txt" | grep -vE "^\s*$" | tail -24
  cp "/tmp/replaycost/bench_$name.json" "$out/" 2>/dev/null
  mkdir -p "$out/trace-$name" && cp -r "/tmp/trace-$name/." "$out/trace-$name/" 2>/dev/null
}
mkdir -p /tmp/replaycost
if want 2; then bench dim2048; fi
if want 2 && command -v ncu >/dev/null && [ "$(left)" -gt 60 ]; then
  say "the hash kernels of one run of each dim 2048 graph, one at a time (ncu: gpu__time_duration, DRAM bytes)"
  for g in aot_forward_graph aot_backward_graph; do
    timeout 60 ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
      -k regex:'block_sums|gather_tails|chain_kernel|rows_kernel|strided_kernel|runs_kernel|dense' "$G" replay \
      /tmp/trace-dim2048 --graph "$g" --device cuda --out "/tmp/replaycost/ncu-$g" >"$out/ncu_$g.csv" 2>/dev/null
    python3 - "$out/ncu_$g.csv" "$g" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((r for r in rows if r and r[0] == "ID"), None)
if hdr is None:
    sys.exit(f"{sys.argv[2]}: ncu wrote no kernel table")
kernels = {}
for r in rows:
    if len(r) != len(hdr) or r[0] == "ID":
        continue
    d = dict(zip(hdr, r))
    kernels.setdefault((d["ID"], d["Kernel Name"].split("(")[0][-40:]), {})[d["Metric Name"]] = float(d["Metric Value"].replace(",", ""))
total = sum(m.get("gpu__time_duration.sum", 0) for m in kernels.values()) / 1e3
print(f"{sys.argv[2]}: {len(kernels)} hash kernels, {total:.1f} us")
for (i, name), m in kernels.items():
    t, b = m.get("gpu__time_duration.sum", 0) / 1e3, m.get("dram__bytes_read.sum", 0)
    print(f"  {name:40s} {t:8.1f} us {b / 1e6:8.1f} MB {b / t / 1e6 if t else 0:6.2f} TB/s")
PY
  done
fi
if want 3; then bench dim4096 --dim 4096 --heads 32 --hidden 16384 --goal 0.15; fi
say "done ($(left) s left)"
