#!/usr/bin/env bash
# One device call for the recorder's host overhead on one GPU (issue 24, kind nvidia-h200):
# builds runtime_tests and bench_recorder against the machine's pip LibTorch, CUDA and NCCL, then
#   1. the runtime tests that cover the recorder, its CUDA ones included (HashBlock*, HashBlocks*,
#      DeferredHashes*, TraceScalar*, Recorder*, RecorderGraph*, AsyncRecorder*)
#   2. bench_recorder with GPARITY_BENCH_DEVICE=cuda, with GPARITY_RECORDER_PROFILE=1 (the
#      per-phase breakdown of the recorder's host time, on stderr) and without (the profile's own
#      clock reads left out), each for every way of launching the hashes (GPARITY_RECORDER_GRAPH
#      in GRAPH_MODES, default "0 slot staging": direct, one graph per pinned slot, one graph +
#      a staging copy (the recorder's default); core/runtime/recorder_graph.hpp), side by side; ROUNDS (default 1) repeats
#      the runs without the profile
#   3. hash_cuda_tests (the GPU-vs-CPU hash tests, the reused XXH3 scratch and the parameter
#      block capacities included), then bench_hash_cuda's host time of one hash_pairs_cuda_batch
#      call (BM_cuda_hash_pairs_enqueue_host: 1, 24, 56, 200 blocks)
#   bash CARRY/src/scripts/device-recbench-run.sh CARRY     (CARRY made by scripts/device-carry.sh)
# STEPS (space separated numbers, default "1 2 3") picks steps; the build always runs.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1 2 3"
device_nccl_include

build=${BUILD:-/tmp/recbench-build}  # not /tmp/gparity-build: a warm machine may hold another checkout's build there
DEVICE_BUILD_SHOW="gparity runtime:" device_build "$carry" "$build" "$out/build.log" runtime_tests bench_recorder \
  hash_cuda_tests bench_hash_cuda

if want 1; then
  say "1. recorder tests (CUDA ones included)"
  timeout 150 "$build/tests/runtime/runtime_tests" \
    --gtest_filter='HashBlock*:HashBlocks*:DeferredHashes*:TraceScalar*:Recorder*:AsyncRecorder*' >"$out/tests.log" 2>&1
  echo "runtime_tests exit $?"
  grep -E "^\[ *(FAILED|PASSED|SKIPPED|  OK) |Failure|Expected|Which is|error" "$out/tests.log" | head -40
fi

if want 2; then
  say "2. bench_recorder on GPU 0, with the profile, then without, for GRAPH_MODES"
  for mode in ${GRAPH_MODES:-0 slot staging}; do
    GPARITY_RECORDER_GRAPH=$mode GPARITY_BENCH_DEVICE=cuda GPARITY_RECORDER_PROFILE=1 timeout 120 \
      "$build/bench/bench_recorder" --benchmark_color=false >"$out/bench-profile-$mode.log" 2>&1
    echo "bench (profile, GPARITY_RECORDER_GRAPH=$mode) exit $?"
    grep -E "^recorder|gparity recorder profile|^  |gparity recorder:" "$out/bench-profile-$mode.log"
  done
  for round in $(seq "${ROUNDS:-1}"); do
    for mode in ${GRAPH_MODES:-0 slot staging}; do
      GPARITY_RECORDER_GRAPH=$mode GPARITY_BENCH_DEVICE=cuda timeout 120 "$build/bench/bench_recorder" \
        --benchmark_color=false >"$out/bench-$mode-$round.log" 2>&1
      echo "bench (GPARITY_RECORDER_GRAPH=$mode, round $round) exit $?"
      grep -E "^recorder|gparity recorder:" "$out/bench-$mode-$round.log"
    done
  done
fi

if want 3; then
  say "3. hash_cuda_tests, then the host time of one hash_pairs_cuda_batch call"
  timeout 150 "$build/tests/hash/hash_cuda_tests" >"$out/hash-tests.log" 2>&1
  echo "hash_cuda_tests exit $?"
  grep -E "^\[ *(FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|error" "$out/hash-tests.log" | head -40
  timeout 120 "$build/bench/bench_hash_cuda" --benchmark_filter=enqueue_host --benchmark_color=false \
    >"$out/bench-enqueue.log" 2>&1
  echo "bench_hash_cuda exit $?"
  grep -E "enqueue_host" "$out/bench-enqueue.log"
fi
ls -la "$out"
