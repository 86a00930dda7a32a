#!/usr/bin/env bash
# Every GPU line of the project, for the GPUs present, in device calls of at most 10 minutes
# (issue 36). Runs the existing scripts/device-*-run.sh scripts (and the one line no script has:
# issue 23's three op-recorder cases beside DebugMode logs on 2 GPUs), each line in its own
# output folder, and writes one summary table (line, GPUs, result, key figure, seconds).
#
#   Here (the CPU machine):   bash scripts/device-suite.sh --prepare CARRY [SRC]
#     CARRY  folder to (re)create inside the checkout, ignored by git (e.g. .carry-suite): runs
#            scripts/device-carry.sh CARRY SRC (SRC: the tree to build, default this checkout; a
#            clone of HEAD keeps edits in progress out), links CARRY/src/tests/data and docs to
#            the checkout's (carried once, with the working tree), copies this script in, and
#            copies the 2x2-mesh samples' traces and Flight Recorder dumps from
#            ${SAMPLES:-../shared/samples} to CARRY/samples (what the replay-mesh line reads).
#   There (device `run`, from the repository root; carry CARRY, and SUITE_RESUME's folder if any):
#                             bash CARRY/src/scripts/device-suite.sh CARRY [LINE...]
#     LINE   line names or globs (`--list` prints them), run in the order named; default: every
#            line whose GPUs are present (nvidia-smi -L), the lines needing the most GPUs first.
#   Resumable: each line's result, figure, seconds and logs go to SUITE_STATE (default
#   /tmp/gparity-suite, kept while the machine stays warm); a line that passed or failed there is
#   skipped on the next call (SUITE_RETRY=1 runs failed ones again, SUITE_FRESH=1 forgets all).
#   A line that does not fit in what is left of SUITE_BUDGET_S (default 540 s a call) waits for
#   the next call; one cut at the budget is "timeout" and runs again next call. SUITE_RESUME=DIR
#   or .tar.gz (the suite-state.tar.gz an earlier call sent back) seeds an empty state (a fresh
#   machine). Back under $OUT: summary.md, suite-state.tar.gz (every line's console and small
#   outputs), suite-runs.tar.gz (this call's lines' runs, while they fit in 16 MiB).
#   SUITE_PREBUILD=0: no combined build of the selected lines' targets before the first line.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# Lines: name, GPUs needed, estimated seconds (about 1.5x what the line took on nvidia-h100-x4 on
# 2026-11-28, where it ran; guesses otherwise), build targets (main build), what it runs.
LINES=(
  "cudagraph-4|4|220|gparity runtime_tests runtime_cuda_graph_tests bench_cuda_graph|device-cudagraph-run.sh 4, steps 1 2 4 5: tests, f32/bf16 eager vs --cuda-graph, planted violation, killed rank"
  "cudagraph-4-time|4|90|gparity|device-cudagraph-run.sh 4, step 3: step time and peak memory at two sizes"
  "rings-4|4|100|gparity gparity-run gparity_torchops|device-rings-run.sh 4, steps 1 2: NCCL dump, gparity run registration vs execution per ring pattern"
  "rings-4-fsdp|4|130|gparity gparity-run gparity_torchops|device-rings-run.sh 4, steps 1 3: FSDP2 under torchrun, own rings and reverse-odd"
  "replay-mesh|2|200|gparity gparity-run|device-replay-run.sh, steps 1 2 3, the 2x2-mesh samples compile and compile_coor (4 ranks)"
  "replay-causal|2|90|gparity gparity-run|device-replay-run.sh, steps 1 2 3, tests/data/replay/causal_trace (4 ranks)"
  "ops-2|2|60|gparity gparity_torchops|issue 23 on 2 GPUs + NCCL: op recorder and DebugMode, eager vs compiled, wrong decomposition on all ranks / rank 1"
  "cudagraph-2|2|220|gparity runtime_tests runtime_cuda_graph_tests bench_cuda_graph|device-cudagraph-run.sh 2, steps 1 2 4 5"
  "cudagraph-2-time|2|90|gparity|device-cudagraph-run.sh 2, step 3"
  "rings-2|2|90|gparity gparity-run gparity_torchops|device-rings-run.sh 2, steps 1 2"
  "rings-2-fsdp|2|130|gparity gparity-run gparity_torchops|device-rings-run.sh 2, steps 1 3"
  "replay-fsdp2|2|450|gparity gparity-run|device-replay-run.sh, steps 1 2 3 5, tests/data/graph compile, compile_rankbug, compile_tp (2 ranks)"
  "runtime-2|2|420|gparity hash_cuda_tests runtime_tests gparity_torchops bench_recorder|device-runtime-run.sh"
  "async-2|2|420|gparity hash_cuda_tests runtime_tests|device-async-run.sh"
  "cudagraph-1|1|220|gparity runtime_tests runtime_cuda_graph_tests bench_cuda_graph|device-cudagraph-run.sh 1, steps 1 2 4 (no rank to kill)"
  "cudagraph-1-time|1|90|gparity|device-cudagraph-run.sh 1, step 3"
  "cudagraph-bench|1|200|gparity bench_cuda_graph|device-cudagraph-run.sh 1, step 6: bench_cuda_graph"
  "cuda-hash|1|400|hash_tests hash_cuda_tests bench_hash_cuda bench_hash|device-cuda-run.sh"
  "oprec-bench|1|480|gparity_torchops|device-oprec-run.sh"
  "recbench|1|480|runtime_tests bench_recorder hash_cuda_tests bench_hash_cuda|device-recbench-run.sh"
  "replaycost|1|540|gparity hash_cuda_tests runtime_tests runtime_replay_tests bench_hash_cuda|device-replaycost-run.sh"
  "replay-bench|1|450|gparity gparity-run bench_replay|device-replay-run.sh, steps 4 6: bench_replay, replay_gpu_bench"
  "replay-hash|1|240|gparity|bench/replay_gpu_bench.py --quick (issue 33): replay alone, every node hashed against its floor, lazy, planted divergence"
  "dcp-bench|1|420||device-dcp-bench.sh (its own build, without LibTorch)"
)
field() { local IFS='|'; read -r -a f <<<"$1"; echo "${f[$2]}"; }
spec_of() { local l; for l in "${LINES[@]}"; do [ "$(field "$l" 0)" = "$1" ] && { echo "$l"; return 0; }; done; return 1; }

if [ "${1:-}" = --list ] || [ $# -lt 1 ]; then
  [ $# -lt 1 ] && sed -n '2,27p' "$0"
  printf '%-18s %-4s %-6s %s\n' line gpus est_s what
  for l in "${LINES[@]}"; do printf '%-18s %-4s %-6s %s\n' "$(field "$l" 0)" "$(field "$l" 1)" "$(field "$l" 2)" "$(field "$l" 4)"; done
  [ $# -lt 1 ] && exit 2
  exit 0
fi

if [ "$1" = --prepare ]; then
  [ $# -ge 2 ] || { echo "device-suite: --prepare CARRY [SRC]" >&2; exit 2; }
  here=$(cd "$(dirname "$0")/.." && pwd)
  dest=$2
  src=${3:-$here}
  bash "$here/scripts/device-carry.sh" "$dest" "$src" || exit 1
  dest=$(cd "$dest" && pwd)
  # tests/data (14 MB) and docs travel with the working tree already: link them instead of a copy.
  for d in tests/data docs; do
    rm -rf "${dest:?}/src/$d"
    ln -s "$(realpath --relative-to="$(dirname "$dest/src/$d")" "$here/$d")" "$dest/src/$d"
  done
  mkdir -p "$dest/src/scripts" && cp "$0" "$dest/src/scripts/device-suite.sh"
  samples=${SAMPLES:-$here/../shared/samples}
  for s in compile compile_coor; do
    from=$samples/torch-2.11-2x2mesh-mp/$s
    to=$dest/samples/torch-2.11-2x2mesh-mp/$s
    if [ -d "$from/trace" ]; then
      mkdir -p "$to" && cp -a "$from/trace" "$to/" && cp -a "$from"/rank*_flight_recorder.json "$to/"
    else
      echo "device-suite: no $from/trace: the replay-mesh line will fail" >&2
    fi
  done
  echo "device-suite: carry $(du -shL "$dest" 2>/dev/null | cut -f1) with links ($(du -sh "$dest" | cut -f1) itself); working tree + carry must stay under 64 MiB"
  exit 0
fi

# ---- on the GPU machine ----
carry=$(cd "$1" && pwd)
shift
scripts=$carry/src/scripts
state=${SUITE_STATE:-/tmp/gparity-suite}
out=${OUT:-/tmp/out}
budget=${SUITE_BUDGET_S:-540}
t_call=$SECONDS
mkdir -p "$out"
[ "${SUITE_FRESH:-0}" = 1 ] && rm -rf "$state"
mkdir -p "$state"
if [ -n "${SUITE_RESUME:-}" ] && [ -z "$(ls -A "$state" 2>/dev/null)" ]; then
  if [ -d "$SUITE_RESUME" ]; then cp -a "$SUITE_RESUME"/. "$state"/; else tar -C "$state" -xzf "$SUITE_RESUME"; fi
  echo "== resumed from $SUITE_RESUME"
fi
call=$(($(cat "$state/calls" 2>/dev/null || echo 0) + 1))
echo "$call" >"$state/calls"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
{
  echo "call $call: $(date -u '+%Y-%m-%d %H:%M UTC'), $gpus x $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)," \
    "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)," \
    "$(python3 -c 'import torch; print("torch", torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)," \
    "$(nproc) CPUs"
} | tee -a "$state/machines.txt"

# Selected lines: named ones (globs), else every line; those needing more GPUs than present are
# listed in the summary as such.
selected=()
for pat in "${@:-*}"; do  # in the order named
  for l in "${LINES[@]}"; do
    name=$(field "$l" 0)
    # shellcheck disable=SC2053
    [[ $name == $pat ]] && [[ " ${selected[*]} " != *" $name "* ]] && selected+=("$name")
  done
done
[ ${#selected[@]} -gt 0 ] || { echo "device-suite: no line matches $*" >&2; exit 2; }
done_already() {  # passed, or failed and not retried
  local r
  r=$(cat "$state/$1/result" 2>/dev/null) || return 1
  [ "$r" = pass ] || [ "$r" = ran ] || { [ "$r" = fail ] && [ "${SUITE_RETRY:-0}" != 1 ]; }
}
todo=()
for name in "${selected[@]}"; do
  need=$(field "$(spec_of "$name")" 1)
  [ "$need" -le "$gpus" ] || continue
  done_already "$name" && continue
  todo+=("$name")
done
echo "== lines to run: ${todo[*]:-none}"

left() { echo $((budget - (SECONDS - t_call))); }

# The scripts share /tmp/gparity-build. Two of them configure it differently: device-rings-run.sh
# turns the benchmarks off (a later script's bench target would then be unknown), and
# device-dcp-bench.sh builds without LibTorch and CUDA: it gets a build folder of its own,
# swapped in at the same path (CMake build folders cannot move) and out again.
build=/tmp/gparity-build
use_build() {  # main | dcp
  local cur
  cur=$(cat "$build.slot" 2>/dev/null || echo main)
  [ "$cur" = "$1" ] && return 0
  [ -d "$build" ] && mv "$build" "$build.$cur"
  [ -d "$build.$1" ] && mv "$build.$1" "$build"
  echo "$1" >"$build.slot"
}
bench_on() {
  if grep -q '^GPARITY_BUILD_BENCH:BOOL=OFF' "$build/CMakeCache.txt" 2>/dev/null; then
    cmake -B "$build" -DGPARITY_BUILD_BENCH=ON >>"$state/cmake-bench-on.log" 2>&1
  fi
}

if [ ${#todo[@]} -gt 0 ] && [ "${SUITE_PREBUILD:-1}" = 1 ]; then
  targets=()
  for name in "${todo[@]}"; do
    # shellcheck disable=SC2207
    targets+=($(field "$(spec_of "$name")" 3))
  done
  mapfile -t targets < <(printf '%s\n' "${targets[@]}" | sort -u)
  if [ ${#targets[@]} -gt 0 ]; then
    use_build main
    bench_on
    # shellcheck source-path=SCRIPTDIR source=device-common.sh
    source "$scripts/device-common.sh"
    device_nccl_include
    t0=$SECONDS
    GPARITY_DEVICE_KEEP_GOING=1 GPARITY_DEVICE_CMAKE_ARGS="-DGPARITY_BUILD_BENCH=ON" \
      bash "$carry/device-build.sh" "$carry" "$build" "${targets[@]}" >"$state/build-call$call.log" 2>&1
    echo "== build of ${targets[*]}: exit $? in $((SECONDS - t0)) s"
    grep -E "error|FAILED" "$state/build-call$call.log" | head -10
  fi
fi

# ---- the line without a script: issue 23's three cases on 2 GPUs, both readers ----
ops_two_gpus() {  # dir
  local dir=$1 G=$build/cli/gparity ops=$build/core/torchops/libgparity_torchops.so
  if [ ! -x "$G" ] || [ ! -f "$ops" ]; then
    echo "no gparity or libgparity_torchops in $build"
    return 1
  fi
  cat >"$dir/ops2_train.py" <<'PY'
# One rank: tests/python/op_recorder_train.py's model and cases on CUDA with NCCL, each variant
# trained twice from the same seeds in this process: once under gparity.record_ops (C++
# backend), once under DebugMode (hash_tensor, input hashes, stack traces, module paths).
import json, os, sys
src = os.environ["GPARITY_SRC"]
sys.path[:0] = [os.path.join(src, "python"), os.path.join(src, "tests", "python")]
import torch, torch.distributed as dist, torch.nn.functional as F
from torch.utils._debug_mode import DebugMode
import gparity
from op_recorder_train import Net, wrong_gelu, run_fx, aot_module, aten

out = sys.argv[1]
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dev = torch.device("cuda", torch.cuda.current_device())

def train(variant, reader):
    torch.manual_seed(0)
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    net = model
    if variant != "eager":
        wrong = variant == "wrong_all" or (variant == "wrong_rank1" and rank == 1)
        net = aot_module(model, fw_compiler=run_fx, bw_compiler=run_fx,
                         decompositions={aten.gelu.default: wrong_gelu} if wrong else {})
        net(torch.zeros(8, 16, device=dev)).sum().backward()  # compile first
        opt.zero_grad(set_to_none=True)
    gen = torch.Generator().manual_seed(100 + rank)
    run_dir = os.path.join(out, reader, variant)
    os.makedirs(run_dir, exist_ok=True)
    losses = []
    for step in (1, 2):
        x = torch.randn(8, 16, generator=gen).to(dev)
        y = torch.randn(8, 4, generator=gen).to(dev)
        def body():
            loss = F.mse_loss(net(x), y)
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad.div_(world)
            opt.step()
            opt.zero_grad()
            return loss
        if reader == "ops":
            with gparity.record_ops(run_dir, step=step, model=model, backend="cpp"):
                loss = body()
        else:
            with DebugMode(record_output=True, record_stack_trace=True, record_ids=True,
                           record_nn_module=True) as dm, \
                 DebugMode.log_tensor_hashes(hash_fn=["hash_tensor"], hash_inputs=True):
                loss = body()
            with open(os.path.join(run_dir, f"rank{rank}_step{step}.debug.txt"), "w") as f:
                f.write(dm.debug_string(show_stack_trace=True))
        torch.cuda.synchronize()
        losses.append(float(loss).hex())
    return losses

losses = {}
for variant in ("eager", "compiled", "wrong_all", "wrong_rank1"):
    for reader in ("ops", "debugmode"):
        losses[f"{reader}/{variant}"] = train(variant, reader)
        dist.barrier()
json.dump({"rank": rank, "torch": torch.__version__, "losses": losses},
          open(os.path.join(out, f"losses-rank{rank}.json"), "w"), indent=1)
print(f"rank {rank}: " + "; ".join(f"{k} {v}" for k, v in losses.items()), flush=True)
dist.destroy_process_group()
PY
  local t0=$SECONDS
  GPARITY_SRC=$carry/src GPARITY_TORCHOPS=$ops PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8 \
    timeout 300 torchrun --standalone --nproc_per_node 2 "$dir/ops2_train.py" "$dir/runs" >"$dir/train.log" 2>&1
  echo "train (torchrun, 2 ranks, NCCL) exit $? in $((SECONDS - t0)) s"
  grep -E "^rank [01]:|Error|error" "$dir/train.log" | head -6
  local reader v
  for reader in ops debugmode; do
    for v in compiled wrong_all wrong_rank1; do
      timeout 120 "$G" compare "$dir/runs/$reader/eager" "$dir/runs/$reader/$v" >"$dir/compare-$reader-$v.txt" 2>&1
      echo "compare $reader eager vs $v: exit $?"
      grep -E "^(PARITY|DIVERGENCE|INCOMPLETE|NOTHING|BAD)|op-level|rank [0-9]+: " "$dir/compare-$reader-$v.txt" | head -4 | sed 's/^/    /'
      timeout 120 "$G" compare --json "$dir/runs/$reader/eager" "$dir/runs/$reader/$v" >"$dir/compare-$reader-$v.json" 2>/dev/null
    done
  done
  python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
def facts(reader, v):
    try:
        j = json.load(open(os.path.join(d, f"compare-{reader}-{v}.json")))
    except (OSError, ValueError) as e:
        return None, {}
    per, modules = {}, {}
    mods[reader, v] = modules
    for r in (j.get("result") or {}).get("ranks", []):
        fd = r.get("first_divergence")
        if not fd:
            per[r["rank"]] = ("parity",)
            continue
        e = fd.get("eager") or {}
        src = e.get("source") or {}
        per[r["rank"]] = (fd.get("op"), fd.get("step"), fd.get("cause"), tuple(fd.get("from_ranks") or []),
                          f"{os.path.basename(src.get('file') or '?')}:{src.get('line')}")
        modules[r["rank"]] = (e.get("module"), e.get("phase"))
    return j.get("exit_code"), per
mods = {}
want = {"compiled": 0, "wrong_all": 1, "wrong_rank1": 1}
ok = True
agree_all = True
for v in ("compiled", "wrong_all", "wrong_rank1"):
    a, b = facts("ops", v), facts("debugmode", v)
    agree = a == b
    agree_all &= agree
    ok &= a[0] == want[v] and b[0] == want[v]
    if v == "wrong_all":
        ok &= all(f[0] == "aten::gelu" and f[2] == "origin" for f in a[1].values()) and len(a[1]) == 2
    if v == "wrong_rank1":
        r0, r1 = a[1].get(0, ()), a[1].get(1, ())
        ok &= len(r1) > 2 and r1[0] == "aten::gelu" and r1[2] == "origin"
        ok &= len(r0) > 3 and r0[2] == "received" and r0[3] == (1,)
    print(f"{v}: op recorder exit {a[0]} {a[1]}")
    print(f"{v}: DebugMode   exit {b[0]} {b[1]}")
    print(f"{v}: (module, phase) of the first divergent op, op recorder {mods.get(('ops', v))}, "
          f"DebugMode {mods.get(('debugmode', v))}")
    print(f"{v}: readers agree (op, step, cause, from ranks, source line): {'yes' if agree else 'NO'}")
l = {}
for r in (0, 1):
    try:
        l[r] = json.load(open(os.path.join(d, "runs", f"losses-rank{r}.json")))["losses"]
    except (OSError, ValueError):
        pass
same = all(l[r][f"ops/{v}"] == l[r][f"debugmode/{v}"] for r in l for v in want) if len(l) == 2 else False
print(f"losses of the two recorded trainings bitwise equal per variant and rank: {'yes' if same else 'no'}")
print(f"ops-2 verdict: {'pass' if ok and agree_all else 'fail'}")
PY
}

# ---- key figure and verdict of each line, from its console ----
judge() {  # name dir -> result|figure on stdout
  local name=$1 dir=$2 c=$2/console.log
  local fail=0 fig=""
  grep -qE '\[  FAILED  \]|build exit [1-9]' "$c" && fail=1
  case $name in
    cudagraph-[124])
      grep -qE "^compare (f32|bf16)-eager .*exit [^0]|^planted exit [^2]|^killed exit [^2]|tests( StaticInputs)? exit [^0]" "$c" && fail=1
      [ "$(grep -cE '^compare (f32|bf16)-eager .*exit 0' "$c")" -eq 2 ] || fail=1
      fig="f32 $(grep -oE '^compare f32-eager f32-graph: exit [0-9]+' "$c" | grep -oE 'exit [0-9]+'),"
      fig+=" bf16 $(grep -oE '^compare bf16-eager bf16-graph: exit [0-9]+' "$c" | grep -oE 'exit [0-9]+');"
      fig+=" peak reserved graph/eager $(grep -oE 'peak reserved device memory.*: [0-9.]+x' "$c" | grep -oE '[0-9.]+x$' | paste -sd/ -)"
      fig+=" (f32/bf16); planted $(grep -oE '^planted exit [0-9]+' "$c" | cut -d' ' -f2-)"
      grep -q '^killed exit' "$c" && fig+="; killed rank 1: $(grep -oE '^killed exit [0-9]+ after [0-9]+ s' "$c" | cut -d' ' -f2-)"
      fig+="; ctest $(grep -oE 'runtime_cuda_graph_tests exit [0-9]+' "$c" | cut -d' ' -f2-)"
      ;;
    cudagraph-*-time)
      grep -qE '^(small|large) (eager|graph) exit [^0]' "$c" && fail=1
      fig=$(python3 - "$c" <<'PY'
import re, sys
t = {}
for line in open(sys.argv[1]):
    m = re.match(r"(small|large) (eager|graph) exit \d+ median_step_ms per rank: ([\d. ]*) peak_reserved per rank: ([\d ]*)", line)
    if m:
        t[m[1], m[2]] = ([float(x) for x in m[3].split()], [int(x) for x in m[4].split()])
out = []
for s in ("small", "large"):
    if (s, "eager") in t and (s, "graph") in t and t[s, "eager"][0] and t[s, "graph"][0]:
        (me, pe), (mg, pg) = t[s, "eager"], t[s, "graph"]
        r = max(g / e for g, e in zip(pg, pe)) if pe and pg else float("nan")
        out.append(f"{s} {me[0]:.2f}/{mg[0]:.2f} ms rank 0 ({me[0] / mg[0]:.2f}x), peak reserved graph/eager <= {r:.3f}x")
print("; ".join(out) or "no timings")
PY
)
      ;;
    rings-[24] | rings-*-fsdp)
      grep -qE '^(run|fsdp2) .* exit [^0]' "$c" && fail=1
      # Every pair compared (exit 0 or 1: a divergence is a result here), one row or more.
      awk -F'|' '$2 ~ /^ [0-9]+ $/ {n++; if ($5 !~ /^ *[01] *$/) bad++} END {exit (n == 0 || bad > 0)}' \
        "$dir/out/rings-table.md" 2>/dev/null || fail=1
      fig=$(awk -F'|' '$2 ~ /^ [0-9]+ $/ {gsub(/^ +| +$/, "", $3); gsub(/^ +| +$/, "", $6); gsub(/^ +| +$/, "", $7);
        sub(/gparity run, /, "", $3); sub(/ \(bitwise identical\)/, "", $6); printf "%s%s: %s", (n++ ? "; " : ""), $3, ($6 ~ /^none/ ? "identical" : "step " $6 " (" $7 " params)")}' \
        "$dir/out/rings-table.md" 2>/dev/null)
      ;;
    replay-hash)
      # The table's rows: graph, floor ratio, lazy overhead, planted; fail without rows or when
      # the planted divergence's verdicts differ between the modes.
      grep -q '^| dim ' "$dir/out/replay_gpu_bench.txt" 2>/dev/null || fail=1
      grep -q '^planted divergence: lazy and full disagree' "$dir/out/replay_gpu_bench.txt" 2>/dev/null && fail=1
      fig=$(awk -F'|' '/^\| dim / {gsub(/ +/, " "); printf "%s%s%s: %s, lazy %s", (n++ ? "; " : ""), $2, $3, $10, $12}' \
        "$dir/out/replay_gpu_bench.txt" 2>/dev/null)
      ;;
    replay-*)
      local s=$dir/out/summary.txt
      [ -s "$s" ] || fail=1
      grep -qE ' exit (2|12[4-9]|13[0-9]) ' "$s" 2>/dev/null && fail=1
      fig="$(grep -cE ' exit [0-9]+ \(' "$s" 2>/dev/null) replays: $(grep -oE ' exit [0-9]+ \(' "$s" 2>/dev/null | sort | uniq -c | awk '{printf "%s%s x%s", (n++ ? ", " : ""), $2 " " $3, $1}')"
      local safe unsafe
      # The logs are runs/<sample>/coor-<compile id>-<graph>.log, the compile id holding a '/'.
      safe=$(grep -rl --include='*.log' "all ranks: safe" "$dir/out/runs" 2>/dev/null | grep -c '/coor-')
      unsafe=$(grep -rl --include='*.log' "all ranks: unsafe" "$dir/out/runs" 2>/dev/null | grep -c '/coor-')
      [ $((safe + unsafe)) -gt 0 ] && fig+="; --coor all ranks safe on $safe graph(s), unsafe on $unsafe"
      [ "$name" = replay-bench ] && fig=$(grep -hE 'x$|speed|ratio' "$dir"/out/bench_replay.txt "$dir"/out/replay_gpu_bench.txt 2>/dev/null | tail -2 | paste -sd';' -)
      ;;
    ops-2)
      grep -q '^ops-2 verdict: pass' "$c" || fail=1
      fig=$(grep -E 'readers agree|losses of the two' "$c" | sed 's/: readers agree[^:]*: /: readers agree /' | paste -sd';' -)
      fig="$(grep -oE 'compare (ops|debugmode) eager vs [a-z_0-9]+: exit [0-9]' "$c" | sed 's/compare //; s/eager vs //' | paste -sd',' -); $fig"
      ;;
    *)
      grep -qE '(tests|test_recorder\.py|StaticInputs|\*) exit [1-9]' "$c" && fail=1
      fig=$(grep -E 'x faster|[0-9]\.[0-9]+x|GB/s|ratio' "$c" | head -2 | cut -c1-160 | paste -sd';' -)
      ;;
  esac
  if [ "$fail" = 1 ]; then echo "fail|$fig"; elif [[ $name == @(cuda-hash|oprec-bench|recbench|replaycost|dcp-bench|runtime-2|async-2|replay-bench|replay-hash|cudagraph-bench) ]]; then echo "ran|$fig"; else echo "pass|$fig"; fi
}

run_line() {  # name dir limit
  local name=$1 dir=$2 limit=$3
  case $name in
    cudagraph-[124]) STEPS="1 2 4 5" timeout -k 15 "$limit" bash "$scripts/device-cudagraph-run.sh" "$carry" "${name#cudagraph-}" ;;
    cudagraph-*-time) n=${name#cudagraph-} && STEPS=3 timeout -k 15 "$limit" bash "$scripts/device-cudagraph-run.sh" "$carry" "${n%-time}" ;;
    cudagraph-bench) STEPS=6 timeout -k 15 "$limit" bash "$scripts/device-cudagraph-run.sh" "$carry" 1 ;;
    rings-[24]) STEPS="1 2" timeout -k 15 "$limit" bash "$scripts/device-rings-run.sh" "$carry" "${name#rings-}" ;;
    rings-*-fsdp) n=${name#rings-} && STEPS="1 3" timeout -k 15 "$limit" bash "$scripts/device-rings-run.sh" "$carry" "${n%-fsdp}" ;;
    replay-mesh) STEPS="1 2 3" timeout -k 15 "$limit" bash "$scripts/device-replay-run.sh" "$carry" \
      "$carry/samples/torch-2.11-2x2mesh-mp/compile" "$carry/samples/torch-2.11-2x2mesh-mp/compile_coor" ;;
    replay-causal) STEPS="1 2 3" timeout -k 15 "$limit" bash "$scripts/device-replay-run.sh" "$carry" \
      "$carry/src/tests/data/replay/causal_trace" ;;
    replay-fsdp2) STEPS="1 2 3 5" timeout -k 15 "$limit" bash "$scripts/device-replay-run.sh" "$carry" \
      "$carry/src/tests/data/graph/compile" "$carry/src/tests/data/graph/compile_rankbug" "$carry/src/tests/data/graph/compile_tp" ;;
    replay-bench) STEPS="4 6" timeout -k 15 "$limit" bash "$scripts/device-replay-run.sh" "$carry" \
      "$carry/src/tests/data/replay/causal_trace" ;;
    ops-2)
      export -f ops_two_gpus
      # shellcheck disable=SC2016
      build=$build carry=$carry timeout -k 15 "$limit" bash -c 'ops_two_gpus "$0"' "$dir"
      ;;
    runtime-2) timeout -k 15 "$limit" bash "$scripts/device-runtime-run.sh" "$carry" ;;
    async-2) timeout -k 15 "$limit" bash "$scripts/device-async-run.sh" "$carry" ;;
    cuda-hash) timeout -k 15 "$limit" bash "$scripts/device-cuda-run.sh" "$carry" ;;
    oprec-bench) timeout -k 15 "$limit" bash "$scripts/device-oprec-run.sh" "$carry" ;;
    recbench) BUILD=$build timeout -k 15 "$limit" bash "$scripts/device-recbench-run.sh" "$carry" ;;
    replaycost) DEADLINE_S=$((limit - 30)) timeout -k 15 "$limit" bash "$scripts/device-replaycost-run.sh" "$carry" ;;
    replay-hash) CUDA_VISIBLE_DEVICES=0 timeout -k 15 "$limit" python3 "$carry/src/bench/replay_gpu_bench.py" --quick \
      --gparity "$build/cli/gparity" --out "$OUT/replay_gpu_bench.json" 2>&1 | tee "$OUT/replay_gpu_bench.txt" ;;
    dcp-bench) timeout -k 15 "$limit" bash "$scripts/device-dcp-bench.sh" "$carry" ;;
    *) echo "device-suite: unknown line $name" >&2; return 2 ;;
  esac
}

ran_now=()
for name in "${todo[@]}"; do
  spec=$(spec_of "$name")
  est=$(field "$spec" 2)
  rem=$(left)
  if [ "$rem" -lt "$est" ] && [ ${#ran_now[@]} -gt 0 ]; then
    echo "== $name: needs about $est s, $rem s left in this call: next call"
    continue
  fi
  [ "$rem" -ge 60 ] || { echo "== $name: $rem s left: next call"; continue; }
  dir=$state/$name
  rm -rf "$dir" && mkdir -p "$dir/out"
  if [ "$name" = dcp-bench ]; then use_build dcp; else use_build main; bench_on; fi
  echo "== $name ($(field "$spec" 4)); at most $rem s"
  t0=$SECONDS
  OUT=$dir/out run_line "$name" "$dir" "$rem" >"$dir/console.log" 2>&1
  rc=$?
  secs=$((SECONDS - t0))
  IFS='|' read -r result figure < <(judge "$name" "$dir")
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && result=timeout
  echo "$result" >"$dir/result"
  echo "$figure" >"$dir/figure"
  echo "$secs" >"$dir/seconds"
  echo "$call" >"$dir/call"
  echo "== $name: $result in $secs s (exit $rc): $figure"
  ran_now+=("$name")
done
use_build main

# ---- summary of every line, from the state ----
{
  echo "# gparity device suite"
  echo
  sed 's/^/- /' "$state/machines.txt"
  echo
  echo "| line | GPUs | result | key figure | seconds | call |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for l in "${LINES[@]}"; do
    name=$(field "$l" 0)
    need=$(field "$l" 1)
    d=$state/$name
    if [ -f "$d/result" ]; then
      echo "| $name | $need | $(cat "$d/result") | $(tr '|' '/' <"$d/figure") | $(cat "$d/seconds") | $(cat "$d/call") |"
    elif [ "$need" -gt "$gpus" ]; then
      echo "| $name | $need | not run: $gpus GPU(s) here | | | |"
    else
      echo "| $name | $need | not run yet | | | |"
    fi
  done
} >"$state/summary.md"
cp "$state/summary.md" "$out/summary.md"
cat "$out/summary.md"
# Consoles, logs and small outputs of every line; the runs (records, traces) of this call's lines
# apart, while they fit in what comes back (16 MiB a file).
(cd "$state" && find . -type f ! -name '*.tar.gz' \( ! -path '*/runs/*' -o -name '*.log' -o -name '*.txt' \) -print0 |
  tar --null -czf "$out/suite-state.tar.gz" -T -)
archives=()
for name in "${ran_now[@]}"; do
  for f in "$name/out/runs.tar.gz" "$name/runs" "$name/out/runs"; do [ -e "$state/$f" ] && archives+=("$f"); done
done
if [ ${#archives[@]} -gt 0 ]; then
  tar -C "$state" -czf "$out/suite-runs.tar.gz" "${archives[@]}" 2>/dev/null
  if [ "$(stat -c %s "$out/suite-runs.tar.gz")" -ge 16000000 ]; then
    rm -f "$out/suite-runs.tar.gz"
    echo "== runs of this call over 16 MB: left on the machine ($state)"
  fi
fi
echo "== call $call took $((SECONDS - t_call)) s"
