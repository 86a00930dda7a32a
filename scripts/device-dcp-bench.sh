#!/usr/bin/env bash
# One device call for issue 11's checkpoint-hash benchmark (nvidia-h100-x1 is enough: CPU work):
#   1. builds gparity and bench_dcp_hash (no LibTorch, no CUDA) while
#   2. the machine's PyTorch saves a >= 4 GiB DCP checkpoint of the scaled-up sample model over 4
#      ranks (torchrun, gloo, CPU tensors; FSDP2 if it runs on CPU, else DTensor row shards:
#      scripts/dcp_bench_save.py)
#   3. checks `gparity hash` reads it (tensor count, layouts) and that a corrupted copy of one
#      storage byte is refused (the CRC-32 check of the in-place read)
#   4. times `cat > /dev/null` vs `gparity hash --threads 4`, alternating, 5 reps each: page cache
#      dropped before every command when the kernel lets us, then warm; ratio of medians
#   5. bench_dcp_hash BM_SideBySide on the same folder (4 threads)
#   bash CARRY/src/scripts/device-dcp-bench.sh CARRY     (CARRY made by scripts/device-carry.sh)
# Logs and results land in $OUT (bench.txt holds the ratios).
set -uo pipefail
carry=$(cd "$1" && pwd)
out=${OUT:-/tmp/out}
mkdir -p "$out"
export PATH="$carry/sysroot/usr/bin:$PATH"
say() { echo "== $*"; }
src=$carry/src
ckpt=/tmp/dcp-bench/ckpt
build=/tmp/gparity-build
rm -rf /tmp/dcp-bench && mkdir -p /tmp/dcp-bench

{
  nproc
  uname -r
  free -g | head -2
  df -h /tmp | tail -1
  grep -m1 "model name" /proc/cpuinfo
  python3 -c 'import torch; print("torch", torch.__version__)'
} 2>&1 | tee "$out/machine.txt"

start=$(date +%s)
GPARITY_DEVICE_CMAKE_ARGS="-DGPARITY_WITH_TORCH=OFF -DGPARITY_WITH_CUDA=OFF -DGPARITY_BUILD_TESTS=OFF" \
  bash "$carry/device-build.sh" "$carry" "$build" gparity bench_dcp_hash >"$out/build.log" 2>&1 &
build_pid=$!

say "saving the checkpoint (4 ranks, gloo, CPU)"
OMP_NUM_THREADS=2 PYTHONUNBUFFERED=1 timeout 240 torchrun --standalone --nproc-per-node 4 \
  "$src/scripts/dcp_bench_save.py" "$ckpt" >"$out/save.log" 2>&1
echo "save exit $? after $(($(date +%s) - start)) s"
grep -E "saved|failed|Error" "$out/save.log" | head -5
ls -la "$ckpt" 2>&1 | head -8

wait "$build_pid"
say "build exit $? after $(($(date +%s) - start)) s"
grep -E "error|FAILED" "$out/build.log" | head -10
G=$build/cli/gparity
[ -x "$G" ] || { echo "no gparity binary"; exit 1; }

say "gparity hash reads it"
timeout 120 "$G" hash --threads 4 "$ckpt" >"$out/hash.txt" 2>&1
echo "hash exit $?"
head -12 "$out/hash.txt"
# A flipped byte in the middle of the first storage of __1_0.distcp must fail the CRC check.
bad=/tmp/dcp-bench/bad
mkdir -p "$bad" && cp "$ckpt"/.metadata "$bad"/ && for f in "$ckpt"/__*.distcp; do ln -s "$f" "$bad"/; done
rm "$bad/__1_0.distcp" && cp "$ckpt/__1_0.distcp" "$bad/"
python3 - "$bad/__1_0.distcp" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(100 << 20)
    b = f.read(1)
    f.seek(100 << 20)
    f.write(bytes([b[0] ^ 1]))
EOF
timeout 120 "$G" hash --threads 4 "$bad" >"$out/hash-bad.txt" 2>&1
echo "hash of a copy with one flipped byte: exit $? (want 2)"
tail -2 "$out/hash-bad.txt"
rm -rf "$bad"

say "cat vs gparity hash --threads 4, cold cache (dropped before each command)"
DROP_CACHES=1 bash "$src/scripts/dcp-hash-vs-cat.sh" --threads 4 --reps 5 "$G" "$ckpt" 2>&1 | tee "$out/bench.txt"
say "cat vs gparity hash --threads 4, warm cache"
bash "$src/scripts/dcp-hash-vs-cat.sh" --threads 4 --reps 5 "$G" "$ckpt" 2>&1 | tee -a "$out/bench.txt"
say "cat vs gparity hash --threads 2 and 8, warm cache"
bash "$src/scripts/dcp-hash-vs-cat.sh" --threads 2 --reps 3 "$G" "$ckpt" 2>&1 | tail -3 | tee -a "$out/bench.txt"
bash "$src/scripts/dcp-hash-vs-cat.sh" --threads 8 --reps 3 "$G" "$ckpt" 2>&1 | tail -3 | tee -a "$out/bench.txt"

say "bench_dcp_hash (4 threads, warm)"
GPARITY_BENCH_DCP=$ckpt GPARITY_BENCH_THREADS=4 timeout 120 "$build/bench/bench_dcp_hash" \
  --benchmark_color=false 2>&1 | tee "$out/bench_dcp_hash.txt" | grep -E "BM_|ratio"
say "done after $(($(date +%s) - start)) s"
