#!/usr/bin/env bash
# One device call for the CUDA hash (issue 2): build with the carried sysroot, run the CUDA and
# CPU hash tests, a memcheck pass over the CUDA tests, and the GPU benchmark. Logs go to $OUT.
#   bash CARRY/src/scripts/device-cuda-run.sh CARRY     (CARRY made by scripts/device-carry.sh)
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
carry=$1
out=${OUT:-/tmp/out}
mkdir -p "$out"
export PATH="$carry/sysroot/usr/bin:$PATH"  # carried xxhsum
targets=(hash_tests hash_cuda_tests bench_hash_cuda bench_hash)

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  lscpu | grep -E 'Model name|^CPU\(s\)'
  uname -m
} 2>&1 | tee "$out/machine.txt"

build=/tmp/gparity-build
if ! bash "$carry/device-build.sh" "$carry" "$build" "${targets[@]}" >"$out/build.log" 2>&1; then
  echo "== build with LibTorch auto-detection failed; tail:"
  tail -15 "$out/build.log"
  build=/tmp/gparity-build-notorch
  GPARITY_DEVICE_CMAKE_ARGS=-DGPARITY_WITH_TORCH=OFF \
    bash "$carry/device-build.sh" "$carry" "$build" "${targets[@]}" >"$out/build-notorch.log" 2>&1 ||
    { echo "== build without LibTorch failed too"; tail -30 "$out/build-notorch.log"; build=""; }
fi
if [ -z "$build" ] && [ -d "$carry/prebuilt" ]; then
  # Binaries built on the CPU machine (same x86-64), linked against the carried sysroot.
  echo "== using prebuilt binaries from $carry/prebuilt"
  build=/tmp/gparity-prebuilt
  mkdir -p "$build/tests/hash" "$build/bench"
  cp "$carry/prebuilt/hash_cuda_tests" "$build/tests/hash/"
  cp "$carry/prebuilt/bench_hash_cuda" "$build/bench/"
  export LD_LIBRARY_PATH="$carry/sysroot/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
grep -E "gparity configuration|GPARITY_WITH|LibTorch|CUDA:|device-build" "$out/build.log" | head -12

echo "== CUDA vs CPU tests"
"$build/tests/hash/hash_cuda_tests" 2>&1 | tee "$out/hash_cuda_tests.log" | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED|  FAILED) |cuda \]|Failure|Expected|Which is" | head -40
echo "== CPU hash tests"
"$build/tests/hash/hash_tests" >"$out/hash_tests.log" 2>&1
grep -E "^\[  (PASSED|FAILED) " "$out/hash_tests.log"
echo "== memcheck (compute-sanitizer) over the CUDA tests, large test excluded"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/hash/hash_cuda_tests" \
  --gtest_filter='ShardHashCuda.*:-*Large*' >"$out/memcheck.log" 2>&1
echo "memcheck exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck.log" | head -5
echo "== GPU benchmark"
GPARITY_BENCH_CUDA_MAX_MIB=${GPARITY_BENCH_CUDA_MAX_MIB:-4096} timeout 240 "$build/bench/bench_hash_cuda" \
  --benchmark_color=false >"$out/bench_hash_cuda.log" 2>&1
echo "bench exit $?"; grep -E "agreement" "$out/bench_hash_cuda.log"; sed -n '/^medians/,$p' "$out/bench_hash_cuda.log"
echo "== CPU benchmark on the device's CPU (shard hash vs read-sum, single thread)"
GPARITY_BENCH_MAX_MIB=256 timeout 200 "$build/bench/bench_hash" --benchmark_color=false \
  --benchmark_filter='xxh3|shard_hash<|shard_hash_v2<|read_sum' >"$out/bench_hash_cpu.log" 2>&1
echo "cpu bench exit $?"; sed -n '/^ratios/,$p' "$out/bench_hash_cpu.log"
