#!/usr/bin/env bash
# One device call for issue 14, ring orders (nvidia-h200-x4; x2 runs the 2-rank half): builds
# gparity, gparity-run and libgparity_torchops against the machine's pip LibTorch, CUDA and
# NCCL, then for each rank count in RANKS, every step bounded and logged under $OUT:
#   1. `gparity nccl-rings` without --from (NCCL dumps its graph during one step of
#      `gparity run --ring-orders`), then --from that dump for each pattern: the rings printed
#   2. `gparity run`, bf16, debug model dim 1024, 30 steps: registration vs execution bucket
#      order with NCCL's own rings and with --ring-orders reverse-odd / rotate / random, plus
#      own rings vs reverse-odd at one bucket order (the ring order alone); `gparity compare
#      --json` of each pair -> one table row: first divergent step, parameters, grad-norm ULP
#   3. python/examples/fsdp2_train.py under torchrun (FSDP2, bf16, dim 1024, 30 steps) with
#      NCCL_GRAPH_FILE from `gparity nccl-rings --from` the dump, registration vs execution
#      (--bucket-order), and the same with NCCL's own rings -> table rows
# The table is $OUT/rings-table.md (the rows for docs/ring-orders.md); runs and logs are in
# $OUT/runs.tar.gz.
#
#   bash CARRY/src/scripts/device-rings-run.sh CARRY [RANKS]   (CARRY made by scripts/device-carry.sh)
#   RANKS  rank counts, space separated (default "2 4"; a count above the GPUs present is skipped)
#   STEPS  which of the steps above to run (default "1 2 3"); the build always runs (and is
#          incremental on a machine that is still warm)
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1 2 3"
rank_counts=${2:-${RANKS:-2 4}}
runs=/tmp/gparity-rings-runs
mkdir -p "$runs"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
device_nccl_include
say "nccl.h: ${nccl_h:-not found}"

build=/tmp/gparity-build
GPARITY_DEVICE_CMAKE_ARGS="-DGPARITY_BUILD_BENCH=OFF" DEVICE_BUILD_SHOW="GPARITY_WITH|LibTorch|CUDA:|gparity runtime:" \
  device_build "$carry" "$build" "$out/build.log" gparity gparity-run gparity_torchops
G=$build/cli/gparity
ops=$build/core/torchops/libgparity_torchops.so
if [ ! -x "$G" ] || [ ! -x "$build/cli/gparity-run" ]; then
  say "no gparity / gparity-run: see build.log"
  tar -C "$out" -czf "$out/build-log.tar.gz" build.log 2>/dev/null
  exit 1
fi

table=$out/rings-table.md
if [ ! -s "$table" ]; then
  {
    echo "| ranks | run | pair | exit | first divergent step | parameters differing there | grad-norm ULP (at step) | loss differs from | report names different rings |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  } >"$table"
fi

# One table row from `gparity compare --json` (rank 0's view).
row() {  # ranks, run, pair, json file
  python3 - "$@" >>"$table" <<'PY'
import json, sys
ranks, run, pair, path = sys.argv[1:5]
try:
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
except (OSError, ValueError) as e:
    print(f"| {ranks} | {run} | {pair} | - | compare gave no JSON ({e}) | | | | |")
    sys.exit()
r0 = next((r for r in d.get("result", {}).get("ranks", []) if r.get("rank") == 0), {})
first = r0.get("first_divergent_step")
p = (r0.get("first_divergence") or {}).get("params") or {}
params = f"{p['count']} of {p['total']}" if p else ("-" if first is not None else "0")
gn = sorted((f for f in d.get("findings", []) if f["kind"] == "grad_norm_mismatch" and f["where"].get("rank") == 0),
            key=lambda f: f["where"].get("step", 0))
ulp = f"{gn[0]['values'].get('ulp')} (step {gn[0]['where'].get('step')})" if gn else "equal"
loss = r0.get("loss_first_divergent_step")
nccl = any(f["kind"] == "nccl_graph_differs" for f in d.get("findings", []))
print(f"| {ranks} | {run} | {pair} | {d.get('exit_code')} | {first if first is not None else 'none (bitwise identical)'} "
      f"| {params} | {ulp} | {loss if loss is not None else '-'} | {'yes' if nccl else 'no'} |")
PY
}

compare() {  # ranks, run label, a, b
  timeout 90 "$G" compare "$runs/$3" "$runs/$4" >"$runs/compare-$3-$4.txt" 2>&1
  echo "compare $3 $4: exit $?"
  grep -E "PARITY|DIVERGENCE|BAD INPUT|diverge|NCCL graphs|differ" "$runs/compare-$3-$4.txt" | head -8
  timeout 90 "$G" compare --json "$runs/$3" "$runs/$4" >"$runs/compare-$3-$4.json" 2>/dev/null
  row "$1" "$2" "$3 vs $4" "$runs/compare-$3-$4.json"
}

model_args=(--dtype bf16 --dim 1024 --heads 8 --hidden 2816 --layers 2 --vocab 512 --seq-len 64 --batch 4
  --steps 30 --seed 7 --hash-grads)
gp_run() {  # ranks, name, extra args...
  local n=$1 name=$2
  shift 2
  rm -rf "${runs:?}/$name"
  timeout 180 "$G" run --nproc "$n" --device cuda --out "$runs/$name" --timeout 90 "${model_args[@]}" "$@" \
    >"$runs/$name.log" 2>&1
  echo "run $name exit $? ($(grep -c '"type":"step"' "$runs/$name/rank-0.jsonl" 2>/dev/null) steps on rank 0)"
  grep -E "error|ring" "$runs/$name.log" | head -4
  tail -1 "$runs/$name.log"
}

for n in $rank_counts; do
  if [ "$gpus" -lt "$n" ]; then
    say "$n ranks: skipped, this machine has $gpus GPUs"
    continue
  fi
  dump=$runs/rings-$n.xml.dump/nccl-graph-dump.xml
  if want 1; then
    say "1. $n ranks: NCCL's graph dump and the rewritten rings"
    rm -rf "$runs/rings-$n.xml" "$runs/rings-$n.xml.dump"
    timeout 180 "$G" nccl-rings --ranks "$n" --out "$runs/rings-$n.xml" --pattern reverse-odd \
      >"$runs/nccl-rings-$n.txt" 2>"$runs/nccl-rings-$n.err"
    echo "nccl-rings (dump on the GPUs) exit $?"
    cat "$runs/nccl-rings-$n.txt"
    tail -5 "$runs/nccl-rings-$n.err"
    [ -f "$dump" ] && cp "$dump" "$out/graph-dump-${n}gpu-ring.xml"
    for p in rotate random; do
      timeout 30 "$G" nccl-rings --ranks "$n" --from "$dump" --out "$runs/rings-$n-$p.xml" --pattern "$p" --seed 1
      echo "nccl-rings --from --pattern $p exit $?"
    done
  fi
  if want 2; then
    say "2. $n ranks, gparity run, bf16 dim 1024, 30 steps: registration vs execution per ring setting"
    for rings in default reverse-odd rotate random; do
      extra=()
      [ "$rings" != default ] && extra=(--ring-orders "$rings" --ring-seed 1)
      [ "$rings" = default ] && export NCCL_ALGO=Ring  # the same algorithm as the patterns use
      gp_run "$n" "n$n-$rings-reg" --bucket-order registration "${extra[@]}"
      gp_run "$n" "n$n-$rings-exe" --bucket-order execution "${extra[@]}"
      unset NCCL_ALGO
      grep -ho '"ring_pattern":"[a-z-]*"\|"algo":"[A-Za-z]*"' "$runs/n$n-$rings-reg/manifest.json" | tr '\n' ' '
      echo
      compare "$n" "gparity run, rings $rings" "n$n-$rings-reg" "n$n-$rings-exe"
    done
    say "2b. $n ranks: the ring order alone (registration order both)"
    compare "$n" "gparity run, own rings vs reverse-odd" "n$n-default-reg" "n$n-reverse-odd-reg"
  fi
  if want 3; then
    say "3. $n ranks, FSDP2 under torchrun, bf16 dim 1024, 30 steps"
    export GPARITY_TORCHOPS=$ops PYTHONUNBUFFERED=1
    graph=$runs/fsdp-rings-$n.xml
    if [ -f "$dump" ]; then
      timeout 30 "$G" nccl-rings --ranks "$n" --from "$dump" --out "$graph" --pattern reverse-odd | head -4
    fi
    fsdp() {  # name, bucket order, graph file or ""
      rm -rf "${runs:?}/$1"
      env NCCL_ALGO=Ring ${3:+NCCL_GRAPH_FILE=$3} timeout 200 torchrun --standalone --nproc_per_node "$n" \
        "$carry/src/python/examples/fsdp2_train.py" --out "$runs/$1" --seed 1 --steps 30 --dtype bf16 \
        --dim 1024 --hidden 2816 --layers 2 --bucket-order "$2" >"$runs/$1.log" 2>&1
      echo "fsdp2 $1 exit $?"
      grep -E "step 30 |Error|error" "$runs/$1.log" | head -5
    }
    fsdp "f$n-default-reg" registration ""
    fsdp "f$n-default-exe" execution ""
    compare "$n" "FSDP2 torchrun, own rings" "f$n-default-reg" "f$n-default-exe"
    if [ -f "$graph" ]; then
      fsdp "f$n-reverse-odd-reg" registration "$graph"
      fsdp "f$n-reverse-odd-exe" execution "$graph"
      grep -o '"graph_file": "[^"]*"' "$runs/f$n-reverse-odd-reg/manifest.json"
      compare "$n" "FSDP2 torchrun, reverse-odd (NCCL_GRAPH_FILE)" "f$n-reverse-odd-reg" "f$n-reverse-odd-exe"
    else
      say "no NCCL dump for $n ranks (step 1 failed or did not run): FSDP2 with NCCL_GRAPH_FILE skipped"
    fi
  fi
done

say "table ($table)"
cat "$table"
# Runs and their logs in one archive (what comes back is limited in count).
tar -C /tmp -czf "$out/runs.tar.gz" gparity-rings-runs 2>/dev/null
ls -la "$out"
