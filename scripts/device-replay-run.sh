#!/usr/bin/env bash
# One device call for `gparity replay` on GPUs (issue 12; nvidia-h200-x4 for the 2x2 mesh):
# builds gparity, gparity-run and bench_replay against the machine's pip LibTorch, CUDA and NCCL,
# then, for every TORCH_TRACE sample folder given, each step bounded and logged under $OUT:
#   1. replays every aot_forward/backward/joint graph and every inductor_post_grad_graph of
#      every compile id on all ranks of the trace (--nproc = its ranks, --device cuda)
#   2. --against: before_post_grad_graph vs inductor_post_grad_graph of each compile id
#   3. --coor: rank 0's forward/backward/joint graphs, hoisted (model::hoist_graph: devices, and
#      process-group names through the sample's rank<r>_flight_recorder.json pg_config, passed as
#      --flight-recorder), beside each rank's own
#   4. bench_replay (CPU dispatch cost vs torch.fx.Interpreter under the machine's PyTorch)
#   5. --cuda-graph: every forward/backward/joint graph captured as a CUDA graph and replayed
#      beside the uncaptured run (--cuda-graph-check, 3 runs each); verdict per graph
#   6. bench/replay_gpu_bench.py: a transformer block (dim 2048, seq 1024, bf16) compiled under
#      TORCH_TRACE on one GPU; eager vs replay without / with hashing (and --cuda-graph), side by side;
#      BENCH_ARGS (e.g. "--dim 4096 --heads 32 --hidden 16384 --rounds 2"): a second shape after it
#
#   bash CARRY/src/scripts/device-replay-run.sh CARRY SAMPLE_DIR...
#     CARRY        made by scripts/device-carry.sh
#     SAMPLE_DIR   a run folder holding trace/ (and rank<r>_flight_recorder.json), e.g. the
#                  carried torch-2.11-fsdp2-2rank/{compile,compile_rankbug}, compile_tp,
#                  torch-2.11-2x2mesh-mp/{compile,compile_coor}, or src/tests/data/replay/causal_trace
#                  (logs and dumps in the folder itself: --coor names origin and received ranks)
# STEPS (space separated numbers, default "1 2 3 4 5 6") picks steps; the build always runs.
# Every replay writes a run directory under $OUT/runs/<sample>/<what>, and one line per replay
# goes to $OUT/summary.txt: sample, graph, compile id, what, exit code (0 equal/ran, 1 diverges,
# 2 bad input) and the verdict lines.
set -uo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,21p' "$0"
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1 2 3 4 5 6"
shift
mkdir -p "$out/runs"
device_nccl_include

build=/tmp/gparity-build
device_build "$carry" "$build" "$out/build.log" gparity gparity-run bench_replay
G=$build/cli/gparity

# Graph list of a trace as "rank compile_id kind index" lines.
graphs_of() {
  "$G" graph list "$1" --json 2>/dev/null | python3 -c '
import json, sys
for g in json.load(sys.stdin)["graphs"]:
    print(g["rank"], g["compile_id"], g["kind"], g["index"])'
}

replay() {  # sample-name what trace nproc args...
  local name=$1 what=$2 trace=$3 nproc=$4
  shift 4
  local dir="$out/runs/$name/$what"
  mkdir -p "$(dirname "$dir")"
  local start=$SECONDS
  timeout 300 "$G" replay "$trace" --nproc "$nproc" --device cuda --out "$dir" --timeout 120 "$@" \
    >"$dir.log" 2>&1
  local rc=$?
  {
    echo "$name $what exit $rc ($((SECONDS - start)) s)"
    grep -E "safe|unsafe|received|bitwise|differ|error|hoisting left|captured as" "$dir.log" | head -12 | sed 's/^/    /'
  } | tee -a "$out/summary.txt"
}

for sample in "$@"; do
  sample=$(cd "$sample" && pwd)
  name=$(basename "$(dirname "$sample")")-$(basename "$sample")
  trace=$sample/trace
  [ -d "$trace" ] || trace=$sample
  nproc=$(graphs_of "$trace" | awk '{print $1}' | sort -u | wc -l)
  [ "$nproc" -ge 1 ] || nproc=1
  say "$name: $nproc ranks"
  fr=()
  for f in "$sample"/rank*_flight_recorder.json; do [ -f "$f" ] && fr+=(--flight-recorder "$f"); done
  # No Flight Recorder dump (compile_tp/trace): group "0" is the default group, every rank.
  [ ${#fr[@]} -eq 0 ] && fr=(--group "0=$(seq -s, 0 $((nproc - 1)))")
  # Rank 0's graphs name the (compile id, kind, index) triples every rank replays.
  mapfile -t triples < <(graphs_of "$trace" | awk '$1 == 0 || $1 == -1 {print $2, $3, $4}' | sort -u)
  for t in "${triples[@]}"; do
    read -r cid kind idx <<<"$t"
    case $kind in
      aot_forward_graph | aot_backward_graph | aot_joint_graph | inductor_post_grad_graph) ;;
      *) continue ;;
    esac
    sel=(--compile-id "$cid" --graph "$kind" --index "$idx" "${fr[@]}")
    want 1 && replay "$name" "run-$cid-$kind-$idx" "$trace" "$nproc" "${sel[@]}"
    if want 5 && [ "$kind" != inductor_post_grad_graph ]; then
      replay "$name" "cudagraph-$cid-$kind-$idx" "$trace" "$nproc" "${sel[@]}" --cuda-graph --cuda-graph-check \
        --repeat 3
    fi
    if want 3 && [ "$kind" != inductor_post_grad_graph ]; then
      replay "$name" "coor-$cid-$kind-$idx" "$trace" "$nproc" "${sel[@]}" --coor
    fi
    if want 2 && [ "$kind" = inductor_post_grad_graph ]; then
      replay "$name" "against-$cid-$idx" "$trace" "$nproc" --compile-id "$cid" --graph before_post_grad_graph \
        --index "$idx" --against "$trace" --against-graph inductor_post_grad_graph "${fr[@]}"
    fi
  done
done

if want 4; then
  say "4. bench_replay (CPU)"
  GPARITY_TORCHOPS='' GPARITY_PYTHON=python3 timeout 300 "$build/bench/bench_replay" 1000 2>&1 | tee "$out/bench_replay.txt"
fi
if want 6; then
  say "6. replay_gpu_bench (transformer block, one GPU)"
  rm -rf /tmp/gparity-bench-trace
  TORCH_TRACE=/tmp/gparity-bench-trace CUDA_VISIBLE_DEVICES=0 timeout 400 python3 "$carry/src/bench/replay_gpu_bench.py" \
    --gparity "$G" --trace /tmp/gparity-bench-trace --out "$out/replay_gpu_bench.json" --cuda-graph \
    2>&1 | tail -20 | tee "$out/replay_gpu_bench.txt"
  if [ -n "${BENCH_ARGS:-}" ]; then
    say "6. replay_gpu_bench, second shape: $BENCH_ARGS"
    rm -rf /tmp/gparity-bench-trace
    # shellcheck disable=SC2086
    TORCH_TRACE=/tmp/gparity-bench-trace CUDA_VISIBLE_DEVICES=0 timeout 400 python3 "$carry/src/bench/replay_gpu_bench.py" \
      --gparity "$G" --trace /tmp/gparity-bench-trace --out "$out/replay_gpu_bench_2.json" $BENCH_ARGS \
      2>&1 | tail -20 | tee "$out/replay_gpu_bench_2.txt"
  fi
fi
say "summary"
cat "$out/summary.txt"
