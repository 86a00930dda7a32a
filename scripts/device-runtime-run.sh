#!/usr/bin/env bash
# One device call for the runtime on GPUs (issue 6, nvidia-h200-x2): builds gparity, the CUDA
# hash tests, the runtime tests, libgparity_torchops and bench_recorder against the machine's
# pip LibTorch, CUDA and NCCL, then runs, each step bounded and logged under $OUT:
#   1. hash_cuda_tests (CUDA shard hash + XXH3 vs the CPU) and the runtime tests' CUDA cases
#   2. `gparity run --nproc 2 --device cuda` twice with one seed -> `gparity compare` (want 0)
#   3. 20 bf16 steps, registration vs execution bucket order -> `gparity compare` (either way)
#   4. python/examples/fsdp2_train.py under torchrun (2 ranks, FSDP2, python/gparity recorder
#      through torch.ops.gparity) twice -> compare (want 0), and a third run with another seed
#      (want 1); tests/python/test_recorder.py under the machine's PyTorch
#   5. bench_recorder with GPARITY_BENCH_DEVICE=cuda
#   bash CARRY/src/scripts/device-runtime-run.sh CARRY     (CARRY made by scripts/device-carry.sh)
# STEPS (space separated numbers, default "1 2 3 4 5") picks steps; the build always runs.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1 2 3 4 5"
runs=/tmp/gparity-runs
rm -rf "$runs" && mkdir -p "$runs"
device_nccl_include
say "nccl.h: ${nccl_h:-not found}"

build=/tmp/gparity-build
DEVICE_BUILD_SHOW="GPARITY_WITH|LibTorch|CUDA:|gparity runtime:" \
  device_build "$carry" "$build" "$out/build.log" gparity hash_cuda_tests runtime_tests gparity_torchops bench_recorder
G=$build/cli/gparity
ops=$build/core/torchops/libgparity_torchops.so

if want 1; then
  say "1. CUDA hash tests"
  timeout 240 "$build/tests/hash/hash_cuda_tests" >"$out/tests.log" 2>&1
  echo "hash_cuda_tests exit $?"
  grep -E "^\[ *(FAILED|PASSED|SKIPPED) |cuda \]|Failure|Expected|Which is" "$out/tests.log" | head -20
  timeout 120 "$build/tests/runtime/runtime_tests" --gtest_filter='HashBlock*:HashBlocks*:Recorder*' >>"$out/tests.log" 2>&1
  rc=$?
  echo "runtime_tests (hash/recorder cases) exit $rc"
  if [ $rc -ge 128 ] && command -v cuda-gdb >/dev/null; then  # a crash: where (no gdb there)
    timeout 120 cuda-gdb -batch -ex run -ex bt --args "$build/tests/runtime/runtime_tests" \
      --gtest_filter='HashBlock*:HashBlocks*:Recorder*' >"$runs/runtime_tests.gdb.txt" 2>&1
    grep -E "^#[0-9]+ " "$runs/runtime_tests.gdb.txt" | head -15
  fi
  grep -E "^\[ *(FAILED|PASSED|SKIPPED) |Failure|Expected|Which is" "$out/tests.log" | tail -8
fi

gp_run() {  # name, extra args...
  local name=$1
  shift
  timeout 150 "$G" run --nproc 2 --device cuda --out "$runs/$name" --timeout 60 "$@" >"$runs/$name.log" 2>&1
  echo "run $name exit $? ($(grep -c '"type":"step"' "$runs/$name/rank-0.jsonl" 2>/dev/null) steps on rank 0)"
  tail -2 "$runs/$name.log"
}
compare() {  # a, b
  timeout 60 "$G" compare "$runs/$1" "$runs/$2" >"$runs/compare-$1-$2.txt" 2>&1
  echo "compare $1 $2: exit $?"
  head -30 "$runs/compare-$1-$2.txt"
}

if want 2; then
  say "2. gparity run, NCCL, 2 GPUs, same seed twice"
  gp_run f32-a --steps 10 --seed 7
  gp_run f32-b --steps 10 --seed 7
  compare f32-a f32-b
fi
if want 3; then
  say "3. 20 bf16 steps: registration vs execution bucket order"
  gp_run bf16-reg --steps 20 --dtype bf16 --seed 7 --bucket-order registration --hash-grads --hash-optim
  gp_run bf16-exe --steps 20 --dtype bf16 --seed 7 --bucket-order execution --hash-grads --hash-optim
  compare bf16-reg bf16-exe
  grep -o '"order":"[a-z]*"' "$runs/bf16-reg/rank-0.jsonl" "$runs/bf16-exe/rank-0.jsonl"
fi
if want 4; then
  say "4. FSDP2 under torchrun, python/gparity recorder"
  export GPARITY_TORCHOPS=$ops PYTHONUNBUFFERED=1
  fsdp() {  # name, seed
    timeout 150 torchrun --standalone --nproc_per_node 2 "$carry/src/python/examples/fsdp2_train.py" \
      --out "$runs/$1" --seed "$2" --steps 10 >"$runs/$1.log" 2>&1
    echo "fsdp2 $1 exit $?"
    grep -E "step 10 |Error|error" "$runs/$1.log" | head -5
  }
  fsdp fsdp2-a 1
  fsdp fsdp2-b 1
  fsdp fsdp2-c 2
  compare fsdp2-a fsdp2-b
  compare fsdp2-a fsdp2-c
  GPARITY_EXE=$G timeout 120 python3 "$carry/src/tests/python/test_recorder.py" >"$runs/test_recorder.log" 2>&1
  echo "tests/python/test_recorder.py exit $?"
  tail -4 "$runs/test_recorder.log"
fi
if want 5; then
  say "5. bench_recorder on GPU 0"
  GPARITY_BENCH_DEVICE=cuda timeout 240 "$build/bench/bench_recorder" --benchmark_color=false >"$out/bench.log" 2>&1
  rc=$?
  echo "bench exit $rc"
  grep -E "BM_|params|^recorder" "$out/bench.log"
  if [ $rc -ge 128 ] && command -v cuda-gdb >/dev/null; then
    GPARITY_BENCH_DEVICE=cuda timeout 120 cuda-gdb -batch -ex run -ex bt --args "$build/bench/bench_recorder" \
      --benchmark_filter=Small >"$runs/bench.gdb.txt" 2>&1
    grep -E "^#[0-9]+ " "$runs/bench.gdb.txt" | head -15
  fi
fi
# Runs and their logs in one archive (what comes back is limited to 8 files).
tar -C /tmp -czf "$out/runs.tar.gz" gparity-runs 2>/dev/null
ls -la "$out"
