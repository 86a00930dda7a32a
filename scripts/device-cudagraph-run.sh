#!/usr/bin/env bash
# One device call for CUDA-graph mode (issue 13; docs/cuda-graphs.md): builds gparity, the runtime
# tests and bench_cuda_graph against the machine's pip LibTorch, CUDA and NCCL, then runs, each step
# bounded in time and logged under $OUT:
#   1. runtime_tests (static-input bookkeeping) and runtime_cuda_graph_tests (parity, planted
#      violation, killed rank; GPU cases)
#   2. per dtype (f32, bf16), 20 steps on NRANKS ranks: `gparity run --device cuda` without and with
#      --cuda-graph --cuda-graph-check, grads and AdamW state hashed -> `gparity compare` (want exit 0)
#      and its peak reserved memory ratio (goal <= 1.10)
#   3. step time without / with capture at two model sizes (median_step_ns of each rank, --json)
#   4. the planted static-input violation (want exit 2, the input named)
#   5. NRANKS >= 2: rank 1 killed at step 5 while the graphs replay (want exit 2 naming rank 1, no hang)
#   6. bench_cuda_graph (one rank, two sizes, side by side)
#   bash CARRY/src/scripts/device-cudagraph-run.sh CARRY [NRANKS]   (CARRY made by scripts/device-carry.sh;
#   NRANKS 1, 2 or 4, default 2). STEPS (space separated numbers, default "1 2 3 4 5 6") picks steps.
set -uo pipefail
n=${2:-2}
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1 2 3 4 5 6" "ranks $n"
runs=/tmp/gparity-cg-runs
rm -rf "$runs" && mkdir -p "$runs"
device_nccl_include

build=/tmp/gparity-build
device_build "$carry" "$build" "$out/build.log" gparity runtime_tests runtime_cuda_graph_tests bench_cuda_graph
G=$build/cli/gparity

if want 1; then
  say "1. tests"
  timeout 60 "$build/tests/runtime/runtime_tests" --gtest_filter='StaticInputs*' >"$out/tests.log" 2>&1
  echo "runtime_tests StaticInputs exit $?"
  timeout 300 "$build/tests/runtime/runtime_cuda_graph_tests" >>"$out/tests.log" 2>&1
  echo "runtime_cuda_graph_tests exit $?"
  grep -E "^\[ *(FAILED|PASSED|SKIPPED|  OK) |Failure|Expected|Which is|error" "$out/tests.log" | head -30
fi

gp_run() {  # name, extra args...
  local name=$1
  shift
  timeout 240 "$G" run --nproc "$n" --device cuda --out "$runs/$name" --timeout 60 "$@" >"$runs/$name.log" 2>&1
  local rc=$?
  echo "run $name exit $rc ($(grep -c '"type":"step"' "$runs/$name/rank-0.jsonl" 2>/dev/null) steps on rank 0)"
  [ $rc -ne 0 ] && tail -5 "$runs/$name.log"
  return $rc
}
compare() {  # a, b
  timeout 60 "$G" compare "$runs/$1" "$runs/$2" >"$runs/compare-$1-$2.txt" 2>&1
  echo "compare $1 $2: exit $? (want 0)"
  grep -E "PARITY|DIVERGENCE|BAD INPUT|peak reserved|identical|diverge" "$runs/compare-$1-$2.txt" | head -8
}

if want 2; then
  say "2. eager vs --cuda-graph, 20 steps, $n ranks"
  for dtype in f32 bf16; do
    gp_run "$dtype-eager" --steps 20 --dtype "$dtype" --seed 7 --hash-grads --hash-optim
    gp_run "$dtype-graph" --steps 20 --dtype "$dtype" --seed 7 --hash-grads --hash-optim --cuda-graph --cuda-graph-check
    compare "$dtype-eager" "$dtype-graph"
    grep -h '"kind":"device_memory"' "$runs/$dtype-graph/rank-0.jsonl" | head -1
  done
fi

if want 3; then
  say "3. step time without / with capture (median over 20 steps, --json; ms)"
  sizes=("small:--dim 64 --layers 2 --heads 4 --hidden 128 --seq-len 32 --batch 4 --vocab 256"
    "large:--dim 1024 --layers 8 --heads 16 --hidden 2816 --seq-len 512 --batch 4 --vocab 32000")
  for s in "${sizes[@]}"; do
    name=${s%%:*}
    # shellcheck disable=SC2086
    for mode in eager graph; do
      extra=()
      [ "$mode" = graph ] && extra=(--cuda-graph)
      timeout 240 "$G" run --nproc "$n" --device cuda --out "$runs/time-$name-$mode" --steps 20 --hash-every 0 \
        --json ${s#*:} "${extra[@]}" >"$runs/time-$name-$mode.log" 2>&1
      echo "$name $mode exit $? median_step_ms per rank: $(grep -o '"median_step_ns":[0-9.e+]*' "$runs/time-$name-$mode.log" |
        cut -d: -f2 | awk '{printf "%.3f ", $1 / 1e6}') peak_reserved per rank: $(grep -o '"peak_reserved":[0-9]*' \
        "$runs/time-$name-$mode.log" | cut -d: -f2 | tr '\n' ' ')"
    done
  done
fi

if want 4; then
  say "4. planted static-input violation (want exit 2 naming the input)"
  timeout 240 "$G" run --nproc "$n" --device cuda --out "$runs/planted" --steps 8 --cuda-graph --cuda-graph-check \
    --cuda-graph-plant-violation 5 >"$runs/planted.log" 2>&1
  echo "planted exit $?"
  grep -m2 -E "CUDA graph check failed|run failed" "$runs/planted.log"
fi

if want 5 && [ "$n" -ge 2 ]; then
  say "5. rank 1 killed at step 5 while the graphs replay (want exit 2 naming rank 1, no hang)"
  t0=$(date +%s)
  timeout 240 "$G" run --nproc "$n" --device cuda --out "$runs/killed" --steps 10 --cuda-graph --timeout 20 \
    --inject-fault kill:1:5 >"$runs/killed.log" 2>&1
  echo "killed exit $? after $(($(date +%s) - t0)) s"
  grep -m3 -E "run failed|dead or not responding|error" "$runs/killed.log"
fi

if want 6; then
  say "6. bench_cuda_graph"
  timeout 300 "$build/bench/bench_cuda_graph" --benchmark_color=false >"$out/bench.log" 2>&1
  echo "bench exit $?"
  grep -E "^cuda-graph|BM_" "$out/bench.log"
fi
tar -C /tmp -czf "$out/runs.tar.gz" gparity-cg-runs 2>/dev/null
ls -la "$out"
