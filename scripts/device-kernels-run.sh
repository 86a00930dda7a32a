#!/usr/bin/env bash
# One device call for issue 32's kernel records: builds libgparity_torchops against the machine's
# pip LibTorch, then records tests/data/ops/record_kernels' runs (gen_all.sh: 2 ranks, eager and
# Inductor cases, the planted ones, reduce-overhead, both backends), three runs at a time, into
# $OUT/runs; each run's log beside it. BENCH=1 then runs bench/ops_recorder_gpu_bench.py's
# compiled modes (BENCH_ARGS: extra arguments) into $OUT/bench.json; PROFILE=1 runs
# bench/ops_recorder_gpu_profile.py (PROFILE_ARGS) into $OUT/profile.json; BATCH_CHECK=1 runs
# bench/ops_recorder_batch_check.py (BATCH_CHECK_ARGS: records with and without batches of
# hashes, equal) into $OUT/batch_check.json; HOST_PARTS=1 runs bench/ops_recorder_host_parts.py
# (HOST_PARTS_ARGS) into $OUT/host_parts.json. HASH_TESTS=1 first builds and runs hash_cuda_tests
# and runtime_tests' hashing tests (the CUDA hashes against the CPU's) into $OUT/hash_tests.txt.
#
#   bash CARRY/src/scripts/device-kernels-run.sh CARRY [NAME ...]
set -uo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,12p' "$0"
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=device-common.sh
source "$(dirname "$0")/device-common.sh"
device_start "$1" "1"
shift
build=$carry/src/build-device  # kept between calls while the machine stays warm
targets=(gparity_torchops)
[ "${HASH_TESTS:-0}" = 1 ] && targets+=(hash_cuda_tests runtime_tests)
device_build "$carry" "$build" "$out/build.log" "${targets[@]}" || exit 1
if [ "${HASH_TESTS:-0}" = 1 ]; then
  say "hash tests"
  {
    "$build/tests/hash/hash_cuda_tests"
    echo "hash_cuda_tests exit $?"
    "$build/tests/runtime/runtime_tests" --gtest_filter='Hash*:DeferredHashes.*'
    echo "runtime_tests exit $?"
  } >"$out/hash_tests.txt" 2>&1
  grep -E "^\[ +(cuda|FAILED|PASSED|SKIPPED) |exit" "$out/hash_tests.txt" | head -20
fi
export GPARITY_TORCHOPS=$build/core/torchops/libgparity_torchops.so
cd "$carry/src" || exit 1
gen=tests/data/ops/record_kernels/gen_all.sh
names=${*:-eager inductor inductor_repeat inductor_pass1 inductor_nondet inductor_nondet_repeat inductor_ro inductor_python}
if [ "${SKIP_RUNS:-0}" != 1 ]; then
  start=$(date +%s)
  # BATCH (default 3) runs at a time (compilation is CPU-bound; the GPUs are shared).
  set -- $names
  while [ $# -gt 0 ]; do
    batch=("$@")
    batch=("${batch[@]:0:${BATCH:-3}}")
    for n in "${batch[@]}"; do bash "$gen" "$out/runs" "$n" & done
    wait
    shift "${#batch[@]}"
  done
  say "runs in $(($(date +%s) - start)) s"
  for f in "$out"/runs/*/rank*_meta.json; do
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-2], m["rank"], m["backend"], m["pg"], m["losses"], m["records"], m["inductor"])' "$f"
  done
  # One file back (the device returns a limited number of files).
  (cd "$out" && tar czf runs.tar.gz runs && rm -rf runs)
fi
if [ "${BATCH_CHECK:-0}" = 1 ]; then
  say "batch check"
  # shellcheck disable=SC2086
  timeout "${BATCH_CHECK_TIMEOUT:-300}" python3 bench/ops_recorder_batch_check.py --out "$out/batch_check.json" \
    ${BATCH_CHECK_ARGS:-} 2>&1 | tee "$out/batch_check.txt" | grep -v Warning
fi
if [ "${BENCH:-0}" = 1 ]; then
  say "bench"
  # shellcheck disable=SC2086
  timeout "${BENCH_TIMEOUT:-500}" python3 bench/ops_recorder_gpu_bench.py --modes plain,compiled,compiled_record_ops,compiled_record_ops_unbatched,compiled_record_ops_python,compiled_debugmode_hash,record_ops_cpp_shard \
    --out "$out/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.txt" | grep -v Warning
fi
if [ "${PROFILE:-0}" = 1 ]; then
  say "profile"
  # shellcheck disable=SC2086
  timeout "${PROFILE_TIMEOUT:-400}" python3 bench/ops_recorder_gpu_profile.py --out "$out/profile.json" ${PROFILE_ARGS:-} 2>&1 |
    tee "$out/profile.txt" | grep -v Warning
fi
if [ "${HOST_PARTS:-0}" = 1 ]; then
  say "host parts"
  # shellcheck disable=SC2086
  timeout "${HOST_PARTS_TIMEOUT:-400}" python3 bench/ops_recorder_host_parts.py --out "$out/host_parts.json" \
    ${HOST_PARTS_ARGS:-} 2>&1 | tee "$out/host_parts.txt" | grep -v Warning
fi
