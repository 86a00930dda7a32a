#!/usr/bin/env bash
# One device call for the asynchronous GPU recorder (nvidia-h200-x2): builds gparity, the CUDA
# hash tests and the runtime tests against the machine's pip LibTorch, CUDA and NCCL, then
#   1. hash_cuda_tests and the runtime tests' CUDA cases (HashBlocks, AsyncRecorder)
#   2. `gparity run --nproc 2 --device cuda` twice with one seed -> `gparity compare` (want 0),
#      and once with --hash-sync -> compare with the first (want 0: same hashes either way)
#   3. recorder overhead, side by side in this one call: for three model sizes, the same run
#      with hashing off (--hash-every 0), every step asynchronously (the default) and every step
#      synchronously (--hash-sync), twice each, interleaved; median step time of rank 0.
#   bash CARRY/src/scripts/device-async-run.sh CARRY     (CARRY made by scripts/device-carry.sh)
# STEPS (space separated numbers, default "1 2 3") picks steps; the build always runs.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1 2 3"
runs=/tmp/gparity-runs
rm -rf "$runs" && mkdir -p "$runs"
device_nccl_include

build=/tmp/gparity-build
DEVICE_BUILD_SHOW="gparity runtime:" device_build "$carry" "$build" "$out/build.log" gparity hash_cuda_tests runtime_tests
G=$build/cli/gparity

if want 1; then
  say "1. CUDA hash and recorder tests"
  timeout 240 "$build/tests/hash/hash_cuda_tests" >"$out/tests.log" 2>&1
  echo "hash_cuda_tests exit $?"
  for filter in 'HashBlock*:HashBlocks*' 'AsyncRecorder*'; do
    timeout 120 "$build/tests/runtime/runtime_tests" --gtest_filter="$filter" >>"$out/tests.log" 2>&1
    echo "runtime_tests $filter exit $?"
  done
  grep -E "^\[ *(FAILED|PASSED|SKIPPED|  OK) |Failure|Expected|Which is|error" "$out/tests.log" | head -60
fi

gp_run() {  # name, extra args...
  local name=$1
  shift
  timeout 200 "$G" run --nproc 2 --device cuda --out "$runs/$name" --timeout 60 "$@" >"$runs/$name.log" 2>&1
  echo "run $name exit $? ($(grep -c '"type":"step"' "$runs/$name/rank-0.jsonl" 2>/dev/null) step lines on rank 0)"
}
compare() {  # a, b
  timeout 60 "$G" compare "$runs/$1" "$runs/$2" >"$runs/compare-$1-$2.txt" 2>&1
  echo "compare $1 $2: exit $?"
  head -12 "$runs/compare-$1-$2.txt"
}

if want 2; then
  say "2. gparity run, NCCL, 2 GPUs: same seed twice (async hashing), and once with --hash-sync"
  gp_run f32-a --steps 10 --seed 7
  tail -3 "$runs/f32-a.log"
  gp_run f32-b --steps 10 --seed 7
  gp_run f32-sync --steps 10 --seed 7 --hash-sync
  compare f32-a f32-b
  compare f32-a f32-sync
  grep -c '"recorder_async":true' "$runs/f32-a/rank-0.jsonl" "$runs/f32-sync/rank-0.jsonl"
fi

if want 3; then
  say "3. recorder overhead: hashing off vs every step async vs every step sync (f32, AdamW)"
  small=(--steps 40)
  medium=(--steps 40 --dim 256 --layers 4 --vocab 2048 --seq-len 64 --batch 4)
  large=(--steps 25 --dim 1024 --layers 8 --vocab 32000 --hidden 2816 --seq-len 512 --batch 8)
  for size in small medium large; do
    declare -n args=$size
    for rep in 1 2; do
      for mode in off async sync; do
        case $mode in
          off) extra=(--hash-every 0) ;;
          async) extra=() ;;
          sync) extra=(--hash-sync) ;;
        esac
        name=ovh-$size-$mode-$rep
        timeout 200 "$G" run --nproc 2 --device cuda --out "$runs/$name" --timeout 60 --json \
          "${args[@]}" "${extra[@]}" >"$runs/$name.log" 2>&1
        echo "$size $mode $rep exit $? $(grep -o '{"mean_recorder_ns.*' "$runs/$name.log" | head -1)"
      done
    done
    unset -n args
  done | tee "$out/overhead.txt"
  python3 - "$runs" <<'EOF' | tee -a "$out/overhead.txt"
import json, re, sys, glob, os, statistics
runs = sys.argv[1]
res = {}
for log in glob.glob(os.path.join(runs, "ovh-*.log")):
    size, mode, rep = os.path.basename(log)[4:-4].split("-")
    for line in open(log):
        m = re.search(r"\{.*\}", line)
        if m and '"rank"' in m.group(0):
            j = json.loads(m.group(0))
            res.setdefault((size, mode), []).append((j["rank"], j["median_step_ns"], j["median_recorder_ns"]))
print("size   mode   median step ms (per rank, both reps)      step/off   recorder ms (host)")
for size in ("small", "medium", "large"):
    off = [s for _, s, _ in res.get((size, "off"), [])]
    base = statistics.median(off) if off else float("nan")
    for mode in ("off", "async", "sync"):
        v = res.get((size, mode), [])
        steps = [s for _, s, _ in v]
        rec = [r for _, _, r in v]
        if not steps:
            print(f"{size:6} {mode:6} no result")
            continue
        med = statistics.median(steps)
        print(f"{size:6} {mode:6} {' '.join(f'{s/1e6:7.2f}' for s in steps):40} {med/base:8.4f}   {statistics.median(rec)/1e6:.3f}")
EOF
fi
# Runs and their logs in one archive (what comes back is limited to 8 files).
tar -C /tmp -czf "$out/runs.tar.gz" gparity-runs 2>/dev/null
ls -la "$out"
