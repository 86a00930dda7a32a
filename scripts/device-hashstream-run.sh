#!/usr/bin/env bash
# One device call for issue 24's side-stream hashing (docs/replay.md, "Hashing beside the graph"):
# builds gparity and the CUDA tests there, runs the tests that compare GPU hashes with the CPU's
# (capped grids, side-stream DeferredHashes, replay records on both streams), then
# bench/replay_gpu_bench.py at dim 2048 and at dim 4096 / hidden 16384 (--goal 0.15), one round,
# the defaults (same stream), --node-hash both and the side stream at two caps side by side.
# Everything is bounded by DEADLINE_S (default 520) from the start; logs under $OUT.
#
#   bash CARRY/src/scripts/device-hashstream-run.sh CARRY
#   SIDE_CAPS  shares of the GPU for the side stream's kernels (default "0.125 0.25")
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
device_build "$carry" "$build" "$out/build.log" gparity gparity-run hash_cuda_tests runtime_tests runtime_replay_tests
G=$build/cli/gparity

if want 1; then
  say "1. CUDA tests ($(left) s left)"
  timeout 60 "$build/tests/hash/hash_cuda_tests" >"$out/hash_cuda_tests.txt" 2>&1
  timeout 60 "$build/tests/runtime/runtime_tests" --gtest_filter='DeferredHashes*:HashBlocks*:AsyncRecorder*' \
    >"$out/runtime_tests.txt" 2>&1
  timeout 120 "$build/tests/runtime/runtime_replay_tests" \
    --gtest_filter='Replay.Cuda*:Replay.GraphOutputs*:Replay.WritesNodeRecords*:Replay.NodeHash*' \
    >"$out/runtime_replay_tests.txt" 2>&1
  grep -hE "^\[  (PASSED|FAILED|SKIPPED) |Failure" "$out"/hash_cuda_tests.txt "$out"/runtime_tests.txt \
    "$out"/runtime_replay_tests.txt | head -30
fi

variants=()
for cap in ${SIDE_CAPS:-0.125 0.25}; do
  variants+=(--variant "side${cap}=--node-hash-stream side --node-hash-side-share $cap")
done
bench() {  # name args...
  local name=$1
  shift
  local t
  t=$(left)
  [ "$t" -gt 30 ] || { say "no time left for $name"; return; }
  say "bench $name ($t s left)"
  rm -rf /tmp/gparity-bench-trace
  TORCH_TRACE=/tmp/gparity-bench-trace CUDA_VISIBLE_DEVICES=0 timeout "$t" python3 "$carry/src/bench/replay_gpu_bench.py" \
    --gparity "$G" --trace /tmp/gparity-bench-trace --out "/tmp/hashstream/bench_$name.json" --rounds 1 --no-full \
    "${variants[@]}" "$@" 2>&1 | tee "$out/bench_$name.txt" | grep -vE "^\s*$" | tail -20
  cp "/tmp/hashstream/bench_$name.json" "$out/" 2>/dev/null  # not the run folders beside it
}
mkdir -p /tmp/hashstream
if want 2; then bench dim2048; fi
if want 3; then bench dim4096 --dim 4096 --heads 32 --hidden 16384 --goal 0.15; fi
say "done ($(left) s left)"
