#!/usr/bin/python3
"""Test-data script: converts the pickled Flight Recorder dumps here (fr_rank<r>.pkl, PyTorch
2.11, FSDP2 over 4 ranks, from /work/shared/samples/torch-2.11-dcp/fsdp4) into the JSON form
(json/rank<r>_flight_recorder.json), independently of gparity: Python's own unpickler on our own
test data (product code never unpickles). Tuples become lists, None becomes null, as json does."""
import glob, json, os, pickle, re

here = os.path.dirname(os.path.abspath(__file__))
for path in sorted(glob.glob(os.path.join(here, "fr_rank*.pkl"))):
    rank = int(re.search(r"rank(\d+)", os.path.basename(path)).group(1))
    with open(path, "rb") as f:
        dump = pickle.load(f)
    with open(os.path.join(here, "json", f"rank{rank}_flight_recorder.json"), "w") as f:
        json.dump(dump, f, separators=(",", ":"))
