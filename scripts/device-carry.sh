#!/usr/bin/env bash
# Assembles a folder to carry to the GPU machine (device tool `run`, option `carry`): a copy of a
# gparity source tree plus a small sysroot of the Debian packages its configure needs that the
# GPU machine's image lacks (xxhash.h, CLI11, Google Benchmark, GoogleTest, nlohmann/json,
# OpenSSL, protobuf, minizip, ...), taken from this machine's installed packages (dpkg -L).
# Run here; then scripts/device-build.sh (carried inside the folder) builds there.
#
#   scripts/device-carry.sh DEST [SRC]
#     DEST  folder to (re)create, e.g. /work/main/.carry-me (must be git-ignored in the checkout
#           that the device tool sends)
#     SRC   source tree to copy (default: the checkout holding this script); its tracked and
#           untracked-but-not-ignored files are copied, build folders are not
#   GPARITY_CARRY_PACKAGES  extra Debian packages to add to the sysroot (space separated)
#   GPARITY_CARRY_FILES     extra files from this machine to add (absolute paths, space separated)
set -euo pipefail

if [ $# -lt 1 ]; then
  sed -n '2,16p' "$0"
  exit 2
fi
dest=$1
src=${2:-$(cd "$(dirname "$0")/.." && pwd)}
[ "$(uname -m)" = x86_64 ] || { echo "device-carry: this machine is $(uname -m); the GPU machine is x86_64" >&2; exit 1; }

packages=(
  libxxhash-dev libcli11-dev libbenchmark-dev libgtest-dev libgmock-dev nlohmann-json3-dev
  libssl-dev libprotobuf-dev
  libminizip-dev zlib1g-dev  # zip archives (.pt2, torch.save records)
  libdeflate-dev           # CRC-32 of DCP zip members read in place
  libexpat1-dev            # NCCL graph XML (gparity nccl-rings)
  xxhash                   # xxhsum: the XXH3 tests compare against it
)
# shellcheck disable=SC2206
packages+=(${GPARITY_CARRY_PACKAGES:-})

rm -rf "$dest"
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
mkdir -p "$dest/src" "$dest/sysroot"

# Source tree: what git would commit (tracked + untracked-not-ignored), nothing built.
(cd "$src" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$src" && xargs -0 cp --parents -a -t "$dest/src" 2>/dev/null || true)
echo "device-carry: source $(du -sh "$dest/src" | cut -f1) from $src"

copy_into_sysroot() {  # path [path...]: copies files and symlinks, following links to their targets
  local f
  for f in "$@"; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    [ -d "$f" ] && [ ! -L "$f" ] && continue
    # Relative to / (cp -a --parents fails on absolute paths in coreutils 9.1).
    (cd / && cp -a --parents "${f#/}" "$dest/sysroot")
    if [ -L "$f" ]; then
      local t
      t=$(readlink -f "$f")
      (cd / && cp -a --parents "${t#/}" "$dest/sysroot")
    fi
  done
}

for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    echo "device-carry: package $p is not installed here (scripts/setup.sh installs it)" >&2
    exit 1
  fi
  mapfile -t files < <(dpkg -L "$p" | grep -vE '^/usr/share/(doc|man|lintian|bug)/|^/\.$')
  copy_into_sysroot "${files[@]}"
done
# shellcheck disable=SC2206
extra=(${GPARITY_CARRY_FILES:-})
copy_into_sysroot "${extra[@]}"
# Shared libraries' sonames come from runtime packages: keep every .so the links point to.
find "$dest/sysroot" -name '*.so' -type l | while read -r l; do
  target=$(readlink -f "/${l#"$dest/sysroot"/}")
  [ -e "$dest/sysroot$target" ] || (cd / && cp -a --parents "${target#/}" "$dest/sysroot")
  # The soname link (e.g. libbenchmark.so.1debian) is what programs load at run time.
  soname=$(objdump -p "$target" 2>/dev/null | awk '/SONAME/ {print $2}')
  if [ -n "$soname" ] && [ -e "$(dirname "$target")/$soname" ]; then
    (cd / && cp -a --parents "$(dirname "${target#/}")/$soname" "$dest/sysroot")
  fi
done

# Absolute links (libexpat.so -> /lib/x86_64-linux-gnu/libexpat.so.1.8.10) would dangle there:
# point each at its copy inside the sysroot instead.
find "$dest/sysroot" -type l | while read -r l; do
  t=$(readlink "$l")
  case $t in
    /*)
      r=$(readlink -f "$t")
      [ -e "$dest/sysroot$r" ] && ln -sfn "$(realpath --relative-to="$(dirname "$l")" "$dest/sysroot$r")" "$l"
      ;;
  esac
done

# Static archives that have a shared twin and that no CMake config names only add weight.
find "$dest/sysroot" -name 'lib*.a' | while read -r a; do
  if [ -e "${a%.a}.so" ] && ! grep -rqs "$(basename "$a")" "$dest/sysroot/usr/lib/x86_64-linux-gnu/cmake" "$dest/sysroot/usr/share/cmake"; then
    rm "$a"
  fi
done

cp "$(dirname "$0")/device-build.sh" "$dest/device-build.sh"
echo "device-carry: sysroot $(du -sh "$dest/sysroot" | cut -f1) (${#packages[@]} packages), total $(du -sh "$dest" | cut -f1)"
