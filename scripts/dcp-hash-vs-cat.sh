#!/usr/bin/env bash
# `cat > /dev/null` of DCP checkpoints' files vs `gparity hash --threads N` of the folders, side by
# side: the two alternate, REPS times each, and the ratio of their median times is the hash's
# speed as a fraction of cat's (issue 11's goal: >= 0.70). Several folders go to one cat and one
# gparity command, as a user hashes the checkpoints of a run.
#
#   scripts/dcp-hash-vs-cat.sh [--threads N=2] [--reps N=5] GPARITY DIR...
#   DROP_CACHES=1  drop the page cache before every timed command (root only; else warm runs)
#
# Prints one line per run and a summary; the last line is `ratio R`.
set -uo pipefail
threads=2
reps=5
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  sed -n '2,10p' "$0"
  exit 2
fi
gparity=$1
shift
dirs=("$@")
files=()
for dir in "${dirs[@]}"; do
  [ -f "$dir/.metadata" ] || { echo "dcp-hash-vs-cat: $dir has no .metadata" >&2; exit 2; }
  files+=("$dir"/.metadata "$dir"/*)
done
bytes=$(cat "${files[@]}" | wc -c)

mode=warm
if [ "${DROP_CACHES:-0}" = 1 ]; then
  if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    mode=cold
  else
    echo "dcp-hash-vs-cat: cannot drop the page cache here; warm runs instead"
  fi
fi
drop() { [ $mode = cold ] && sync && echo 3 >/proc/sys/vm/drop_caches; }
[ $mode = warm ] && cat "${files[@]}" >/dev/null  # both sides start from a warm cache

# stamp VAR: the time in seconds, from bash's own clock where it has one (5.0+): a `date`
# process (or a $(...) subshell) started to read the end time would add its own start-up, about
# a millisecond, to both sides and pull the ratio towards 1.
stamp() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    printf -v "$1" '%s' "${EPOCHREALTIME/,/.}"
  else
    printf -v "$1" '%s' "$(date +%s.%N)"
  fi
}
calc() { awk "BEGIN {print $1}"; }
cat_t=() hash_t=()
for ((i = 1; i <= reps; ++i)); do
  drop
  stamp t0
  cat "${files[@]}" >/dev/null
  stamp t1
  drop
  stamp t2
  "$gparity" hash --threads "$threads" "${dirs[@]}" >/dev/null || { echo "gparity hash failed" >&2; exit 1; }
  stamp t3
  c=$(calc "$t1 - $t0")
  h=$(calc "$t3 - $t2")
  cat_t+=("$c")
  hash_t+=("$h")
  printf 'run %d: cat %.4f s  hash %.4f s  ratio %.3f\n' "$i" "$c" "$h" "$(calc "$c / $h")"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
mc=$(median "${cat_t[@]}")
mh=$(median "${hash_t[@]}")
gib=$(calc "$bytes / 1073741824")
printf '%s: %.3f GiB in %d files, %s page cache, %d reps, load %s\n' "${dirs[*]}" "$gib" "${#files[@]}" "$mode" \
  "$reps" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'cat  median %.4f s (%.2f GiB/s)\n' "$mc" "$(calc "$gib / $mc")"
printf 'hash median %.4f s (%.2f GiB/s, --threads %d)\n' "$mh" "$(calc "$gib / $mh")" "$threads"
printf 'ratio %.3f\n' "$(calc "$mc / $mh")"
