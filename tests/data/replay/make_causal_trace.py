#!/usr/bin/env python3
"""Writes tests/data/replay/causal_trace/: a 4-rank TORCH_TRACE of a 2x2 mesh (issue 22).

Each rank's log holds four aot forward graphs that slice the input, scale the slice, all-reduce
it on the rank's tp group ('3' = ranks 0, 1; '4' = ranks 2, 3), scale the sum by a half and add
the input's first 32 elements. Only a slice bound or that last scale differs between the ranks:

  0/0  every rank slices [0, 32)                     (all correct)
  1/0  rank 1 slices [32, 64), the others [0, 32)    (one buggy rank in tp group '3')
  2/0  ranks 1 and 3 slice [32, 64)                  (one buggy rank in each tp group)
  3/0  rank 3 slices [32, 64), and rank 2 scales the sum by a quarter (rank 2 receives rank 3's
       damage, and has a bug of its own that only that damage reaches)
  4/0  another graph (two_slices): it slices the input twice with the same bound, the first slice
       kept for the output, the second all-reduced; rank 1 slices both at [32, 64). Rank 1 has two
       origins, and the one that reaches the all-reduce is the second (issue 36: rank 0's received
       finding names rank 1's first origin and the second as the way it came)
  5/0  two_slices, every rank slices [0, 32) (all correct: 4/0's baseline for `gparity compare`)

Beside the logs, each rank's Flight Recorder dump names its process groups (pg_config with the
mesh descriptions), as a 2.x run writes them; `gparity replay` finds them beside the source.

The logs are data: torch 1.13 (the CI machines' torch) has neither TORCH_TRACE nor functional
collectives, so this writes them in the format torch 2.x does (envelope lines with the payload's
MD5, tab-indented payload), like tests/data/replay/coor_trace. Run from anywhere:
    python3 tests/data/replay/make_causal_trace.py
"""

import hashlib
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "causal_trace")
WORLD = 4
TP = {0: "3", 1: "3", 2: "4", 3: "4"}
DP = {0: "1", 1: "2", 2: "1", 3: "2"}
GROUPS = {
    "0": ("default_pg", [0, 1, 2, 3]),
    "1": ("mesh_dp", [0, 2]),
    "2": ("mesh_dp", [1, 3]),
    "3": ("mesh_tp", [0, 1]),
    "4": ("mesh_tp", [2, 3]),
}
# compile (frame) id -> {rank: (start of the slice, scale of the sum)}
BUGGY = {0: {}, 1: {1: (32, 0.5)}, 2: {1: (32, 0.5), 3: (32, 0.5)}, 3: {3: (32, 0.5), 2: (0, 0.25)},
         4: {1: (32, 0.5)}, 5: {}}


def graph(rank, lo, scale):
    d = f"cuda:{rank}"
    g = TP[rank]
    return f"""class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[64][1]{d}"):
         # File: /workspace/causal.py:20 in forward, code: s = x[lo : lo + 32]
        slice_1: "f32[32][1]{d}" = torch.ops.aten.slice.Tensor(arg0_1, 0, {lo}, {lo + 32})
         # File: /workspace/causal.py:21 in forward, code: s = s * 2
        mul: "f32[32][1]{d}" = torch.ops.aten.mul.Tensor(slice_1, 2);  slice_1 = None
         # File: /workspace/causal.py:22 in forward, code: y = funcol.all_reduce(s, "sum", tp_group)
        all_reduce: "f32[32][1]{d}" = torch.ops._c10d_functional.all_reduce.default(mul, 'sum', '{g}');  mul = None
        wait_tensor: "f32[32][1]{d}" = torch.ops._c10d_functional.wait_tensor.default(all_reduce);  all_reduce = None
         # File: /workspace/causal.py:23 in forward, code: y = y * scale
        mul_1: "f32[32][1]{d}" = torch.ops.aten.mul.Tensor(wait_tensor, {scale});  wait_tensor = None
         # File: /workspace/causal.py:24 in forward, code: return y + x[:32]
        slice_2: "f32[32][1]{d}" = torch.ops.aten.slice.Tensor(arg0_1, 0, 0, 32);  arg0_1 = None
        add: "f32[32][1]{d}" = torch.ops.aten.add.Tensor(mul_1, slice_2);  mul_1 = slice_2 = None
        return (add,)"""


def two_slices(rank, lo, scale):
    d = f"cuda:{rank}"
    g = TP[rank]
    return f"""class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[64][1]{d}"):
         # File: /workspace/causal.py:30 in forward, code: a = x[lo : lo + 32]
        slice_1: "f32[32][1]{d}" = torch.ops.aten.slice.Tensor(arg0_1, 0, {lo}, {lo + 32})
         # File: /workspace/causal.py:31 in forward, code: a = a * 3
        mul: "f32[32][1]{d}" = torch.ops.aten.mul.Tensor(slice_1, 3);  slice_1 = None
         # File: /workspace/causal.py:32 in forward, code: s = x[lo : lo + 32]
        slice_2: "f32[32][1]{d}" = torch.ops.aten.slice.Tensor(arg0_1, 0, {lo}, {lo + 32});  arg0_1 = None
         # File: /workspace/causal.py:33 in forward, code: s = s * 2
        mul_1: "f32[32][1]{d}" = torch.ops.aten.mul.Tensor(slice_2, 2);  slice_2 = None
         # File: /workspace/causal.py:34 in forward, code: y = funcol.all_reduce(s, "sum", tp_group)
        all_reduce: "f32[32][1]{d}" = torch.ops._c10d_functional.all_reduce.default(mul_1, 'sum', '{g}');  mul_1 = None
        wait_tensor: "f32[32][1]{d}" = torch.ops._c10d_functional.wait_tensor.default(all_reduce);  all_reduce = None
         # File: /workspace/causal.py:35 in forward, code: y = y * scale
        mul_2: "f32[32][1]{d}" = torch.ops.aten.mul.Tensor(wait_tensor, {scale});  wait_tensor = None
         # File: /workspace/causal.py:36 in forward, code: return y + a
        add: "f32[32][1]{d}" = torch.ops.aten.add.Tensor(mul_2, mul);  mul_2 = mul = None
        return (add,)"""


GRAPHS = {4: two_slices, 5: two_slices}  # compile (frame) id -> its graph, when not graph()


def envelope(rank, frame, payload):
    md5 = hashlib.md5(payload.encode()).hexdigest()
    head = {"aot_forward_graph": {}, "rank": rank, "frame_id": frame, "frame_compile_id": 0, "attempt": 0,
            "has_payload": md5}
    return ("V1122 19:00:00.000000 100 torch/_functorch/_aot_autograd/graph_compile.py:1708] " +
            json.dumps(head) + "\n" + "".join("\t" + line + "\n" for line in payload.split("\n")))


def main():
    os.makedirs(OUT, exist_ok=True)
    for rank in range(WORLD):
        text = "".join(envelope(rank, frame, GRAPHS.get(frame, graph)(rank, *buggy.get(rank, (0, 0.5))))
                       for frame, buggy in sorted(BUGGY.items()))
        with open(os.path.join(OUT, f"dedicated_log_torch_trace_rank_{rank}_causal.log"), "w") as f:
            f.write(text)
        pg_config = {name: {"name": name, "desc": desc, "ranks": str(ranks)}
                     for name, (desc, ranks) in GROUPS.items() if rank in ranks}
        with open(os.path.join(OUT, f"rank{rank}_flight_recorder.json"), "w") as f:
            json.dump({"version": "2.10", "pg_config": pg_config, "entries": []}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
