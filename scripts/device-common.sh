# shellcheck shell=bash
# Sourced by the scripts/device-*-run.sh scripts, which run on the GPU machine from CARRY/src/scripts:
# the start, the nccl.h lookup and the build they all begin with.

# device_start CARRY DEFAULT_STEPS [NOTE]: what every run script begins with. Sets carry (absolute),
# out ($OUT, else /tmp/out; created), steps (STEPS, else DEFAULT_STEPS, space separated); puts the
# carried sysroot's tools first on PATH; keeps NVLink multicast off (the lent machines need it so);
# writes the machine (GPUs, topology, PyTorch, CPUs, and NOTE if given) to $out/machine.txt.
device_start() {
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  carry=$(cd "$1" && pwd)
  out=${OUT:-/tmp/out}
  steps=" ${STEPS:-$2} "
  mkdir -p "$out"
  export PATH="$carry/sysroot/usr/bin:$PATH"
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    nvidia-smi topo -m 2>/dev/null | head -6
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())'
    echo "cpus $(nproc)"
    if [ -n "${3:-}" ]; then echo "$3"; fi
  } 2>&1 | tee "$out/machine.txt"
}

# want N: is step N among the picked steps.
want() { [[ $steps == *" $1 "* ]]; }
say() { echo "== $*"; }

# ProcessGroupNCCL.hpp includes <nccl.h>: take it from the CUDA toolkit or the nvidia-nccl wheel.
# Sets nccl_h (empty when not found) and adds its folder to CXXFLAGS.
device_nccl_include() {
  local site
  site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
  nccl_h=$(find /usr/local/cuda/include /usr/include "$site/nvidia" -name nccl.h 2>/dev/null | head -1)
  if [ -n "$nccl_h" ]; then
    CXXFLAGS="${CXXFLAGS:-} -isystem $(dirname "$nccl_h")"
    export CXXFLAGS
  fi
  return 0
}

# device_build CARRY BUILD LOG TARGET...: scripts/device-build.sh into BUILD, going on past targets
# that fail, the log in LOG; then "== build exit N in S s", the log lines matching
# DEVICE_BUILD_SHOW (an extended regex, if set) and the first errors. Returns the build's status.
device_build() {
  local carry=$1 build=$2 log=$3
  shift 3
  local start rc
  start=$(date +%s)
  GPARITY_DEVICE_KEEP_GOING=1 bash "$carry/device-build.sh" "$carry" "$build" "$@" >"$log" 2>&1
  rc=$?
  echo "== build exit $rc in $(($(date +%s) - start)) s"
  if [ -n "${DEVICE_BUILD_SHOW:-}" ]; then grep -E "$DEVICE_BUILD_SHOW" "$log" | head -8; fi
  grep -E "error|FAILED" "$log" | head -20
  return "$rc"
}
