#!/usr/bin/env bash
# Writes tests/data/replay/coor_run: `gparity replay --coor` of causal_trace's compile 1/0 on 4
# CPU ranks (Gloo, this build's LibTorch), rank 1's slice bound wrong: rank 1 the origin, rank 0
# received it through the tp group '3' all-reduce, ranks 2 and 3 equal. The records are the
# replay's own; only the manifest's command line is rewritten to name the executable and the
# output folder relative to the repository, so no path of the generating machine is kept.
# Usage (from the repository root, with a build that has LibTorch): tests/data/replay/make_coor_run.sh [GPARITY]
set -euo pipefail
gparity="${1:-build/cli/gparity}"
out=tests/data/replay/coor_run
rm -rf "$out"
"$gparity" replay tests/data/replay/causal_trace --compile-id 1/0 --nproc 4 --coor --timeout 60 --out "$out" || test $? -eq 1
python3 - "$out/manifest.json" <<'PY'
import json, os, sys
p = sys.argv[1]
m = json.load(open(p))
m["command_line"] = ["gparity"] + [a for a in m["command_line"][1:]]
m["run_id"] = "gparity-replay-coor-run"
json.dump(m, open(p, "w"), indent=2, sort_keys=True)
open(p, "a").write("\n")
PY
