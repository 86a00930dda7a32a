#!/usr/bin/env bash
# Writes the replay runs the viewer's tests open (tests/gui/views/replay_view_test.cpp), with this
# build's `gparity replay` on CPU ranks (Gloo, LibTorch):
#  - coor_run: `--coor` of causal_trace's compile 1/0 on 4 ranks, rank 1's slice bound wrong:
#    rank 1 the origin, rank 0 received it through the tp group '3' all-reduce, ranks 2 and 3 equal;
#  - against_run: against_a.txt `--against` against_b.txt (the same sum reassociated, its nodes
#    renamed) on 2 ranks: s1 (t1 in b) the origin on both.
# The records are the replay's own; only the manifest's command line and run id are rewritten,
# so that no path or process id of the generating machine is kept.
# Usage (from the repository root, with a build that has LibTorch): tests/data/replay/make_replay_runs.sh [GPARITY]
set -euo pipefail
gparity="${1:-build/cli/gparity}"
d=tests/data/replay

make_run() {  # OUT ARGS...
  local out="$1"
  shift
  rm -rf "$out"
  "$gparity" replay "$@" --timeout 60 --out "$out" || test $? -eq 1
  python3 - "$out/manifest.json" "$(basename "$out")" <<'PY'
import json, sys
p, name = sys.argv[1], sys.argv[2]
m = json.load(open(p))
m["command_line"] = ["gparity"] + m["command_line"][1:]
m["run_id"] = "gparity-replay-" + name
json.dump(m, open(p, "w"), indent=2, sort_keys=True)
open(p, "a").write("\n")
PY
}

make_run "$d/coor_run" "$d/causal_trace" --compile-id 1/0 --nproc 4 --coor
make_run "$d/against_run" "$d/against_a.txt" --against "$d/against_b.txt" --nproc 2
