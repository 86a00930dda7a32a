#!/usr/bin/env bash
# Configures and builds gparity on the GPU machine from a folder made by scripts/device-carry.sh.
# Run there (inside a device `run` command), from anywhere:
#
#   bash .carry-x/device-build.sh CARRY BUILD_DIR TARGET...
#     CARRY      the carried folder (holds src/ and sysroot/)
#     BUILD_DIR  build folder to create (e.g. /tmp/build; the device keeps nothing between
#                machines, so a fresh one each time)
#     TARGET...  targets to build (e.g. hash_cuda_tests bench_hash_cuda); none: everything
#   GPARITY_DEVICE_CMAKE_ARGS  extra configure arguments (e.g. -DGPARITY_WITH_TORCH=OFF)
#   GPARITY_DEVICE_KEEP_GOING  1: keep building the other targets when one fails (ninja -k 0)
#
# The carried sysroot comes first on CMAKE_PREFIX_PATH; LibTorch is the pip wheel's (found by
# cmake/Dependencies.cmake through python3), CUDA is /usr/local/cuda, the GUI is off. Exports the
# NCCL/PyTorch multicast switches the device's rules require, for the build and what it runs.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,15p' "$0"
  exit 2
fi
carry=$(cd "$1" && pwd)
build=$2
shift 2

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
sysroot=$carry/sysroot
# Headers, libraries and CMake configs are found through the prefix path; programs find the
# sysroot's shared libraries through the build RPATH. (Not LIBRARY_PATH/CPATH: CMake takes their
# folders for implicit ones and leaves them out of the RPATH.)
export CMAKE_PREFIX_PATH="$sysroot/usr:$sysroot/usr/lib/x86_64-linux-gnu/cmake:$sysroot/usr/share/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
# Carried tools (xxhsum, which the XXH3 tests run) for what runs after the build.
echo "device-build: for the carried tools and libraries: export PATH=$sysroot/usr/bin:\$PATH"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
echo "device-build: cmake $(cmake --version | head -1 | cut -d' ' -f3), nvcc $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none), $(nproc) cores"
# shellcheck disable=SC2086
cmake -S "$carry/src" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPARITY_WITH_GUI=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DXXHASH_INCLUDE_DIR="$sysroot/usr/include" \
  -DCMAKE_BUILD_RPATH="$sysroot/usr/lib/x86_64-linux-gnu" \
  ${GPARITY_DEVICE_CMAKE_ARGS:-}
keep_going=()
# GPARITY_DEVICE_KEEP_GOING=1: build every target that can be built even if one fails (one
# device call then shows every compile error, and runs what did build).
[ "${GPARITY_DEVICE_KEEP_GOING:-0}" = 1 ] && [ ${#generator[@]} -gt 0 ] && keep_going=(-- -k 0)
if [ $# -gt 0 ]; then
  cmake --build "$build" -j "$(nproc)" --target "$@" "${keep_going[@]}"
else
  cmake --build "$build" -j "$(nproc)" "${keep_going[@]}"
fi
echo "device-build: built ${*:-everything} in $build"
