#!/usr/bin/env python3
"""Writes a multi-rank TORCH_TRACE directory for `gparity graph ranks` at scale (docs/scale.md).

Each rank's log holds one aot_joint_graph payload of about NODES nodes: blocks of mm / slice /
full / add / sin nodes, chained, each with a `# File:` line. Every rank runs on its own device
(cuda:<rank> in annotations, and in a device literal every 50 blocks); 16 blocks carry slice bounds 32*rank and
32*rank + 32 (rank parameters); one rank (ranks // 2 + 5) has a planted constant. The payload's
has_payload MD5 is the one torch writes (payload lines joined by newlines).

Usage: make_rank_traces.py DIR RANKS NODES
"""

import hashlib
import os
import sys


def payload_lines(rank, ranks, nodes):
    d = f"cuda:{rank}"
    lines = [
        "class inner_f(torch.nn.Module):",
        f'    def forward(self, x: "f32[8, 64][64, 1]{d}", w: "f32[64, 64][64, 1]{d}"):',
    ]
    blocks = max(1, nodes // 5)
    params = {blocks * k // 18 for k in range(1, 17)}
    planted = blocks // 2 + 3
    prev = "x"
    device = f", device = device(type='cuda', index={rank})"
    for b in range(blocks):
        lo, hi = (32 * rank, 32 * rank + 32) if b in params else (0, 16)
        c = 1000 + 32 * rank if (rank == ranks // 2 + 5 and b == planted) else 1
        lines += [
            f"        # File: /work/model.py:{10 + b % 50} in forward, code: y = layer{b % 7}(x)",
            f'        mm_{b}: "f32[8, 64][64, 1]{d}" = torch.ops.aten.mm.default({prev}, w)',
            f'        slice_{b}: "f32[8, 16][64, 1]{d}" = torch.ops.aten.slice.Tensor(mm_{b}, 1, {lo}, {hi})',
            f'        full_{b}: "f32[8, 16][16, 1]{d}" = torch.ops.aten.full.default([8, 16], {c}, '
            f"dtype = torch.float32{device if b % 50 == 0 else ''})",
            f'        add_{b}: "f32[8, 16][16, 1]{d}" = torch.ops.aten.add.Tensor(slice_{b}, full_{b})',
            f'        sin_{b}: "f32[8, 64][64, 1]{d}" = torch.ops.aten.sin.default(mm_{b})',
        ]
        prev = f"sin_{b}"
    lines.append(f"        return ({prev},)")
    return lines


def main():
    out, ranks, nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    for rank in range(ranks):
        lines = payload_lines(rank, ranks, nodes)
        md5 = hashlib.md5("\n".join(lines).encode()).hexdigest()
        envelope = (
            "V1121 04:50:38.805000 735 torch/_functorch/_aot_autograd/graph_compile.py:1619] "
            f'{{"aot_joint_graph": {{}}, "rank": {rank}, "frame_id": 0, "frame_compile_id": 0, '
            f'"attempt": 0, "has_payload": "{md5}"}}'
        )
        path = os.path.join(out, f"dedicated_log_torch_trace_rank_{rank}_scale.log")
        with open(path + ".tmp", "w") as f:
            f.write(envelope + "\n")
            f.write("".join("\t" + line + "\n" for line in lines))
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
