#!/usr/bin/env bash
# Installs every Debian package that gparity's build and tests need. Idempotent: packages that
# are already installed are reported and skipped. Works as root on a fresh Debian 12 machine
# (uses sudo when not root). Set GPARITY_SETUP_MINIMAL=1 to skip LibTorch and Qt.
set -euo pipefail

core_pkgs=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libxxhash-dev xxhash            # XXH3 library + the reference xxhsum binary the tests compare against
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler
  libminizip-dev zlib1g-dev       # zip archives (.pt2, torch.save records); archives for the static CLI
  libdeflate-dev                  # CRC-32 of DCP zip members read in place
  libexpat1-dev                   # NCCL graph XML (gparity nccl-rings)
  libssl-dev                      # MD5 of TORCH_TRACE payloads (has_payload check)
  clang libclang-rt-14-dev        # libFuzzer targets
)
torch_pkgs=(libtorch-dev libgloo-dev python3-torch)
# qt6-charts-dev needs libqt6opengl6-dev for its CMake config but does not depend on it.
gui_pkgs=(qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl-dev xvfb xauth)

pkgs=("${core_pkgs[@]}")
if [ "${GPARITY_SETUP_MINIMAL:-0}" != 1 ]; then
  pkgs+=("${torch_pkgs[@]}" "${gui_pkgs[@]}")
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${pkgs[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    echo "setup: $p already installed"
  else
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#pkgs[@]} packages present"
  exit 0
fi

echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
