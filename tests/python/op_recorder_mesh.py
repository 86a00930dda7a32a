"""One rank of the op recorder's 2x2 mesh case (tests/python/test_op_recorder.py): 4 ranks over
Gloo, mesh [[0, 1], [2, 3]], TP groups the rows {0, 1} and {2, 3}, DP groups the columns {0, 2}
and {1, 3}. One recorded step: gelu, an all-reduce over the rank's TP group, a scale, an
all-reduce over its DP group, a shift. Runs under OUT:
  eager        every rank computes the exact gelu
  wrong_rank3  rank 3 computes the tanh approximation (the origin); rank 2 receives it through
               the TP all-reduce of {2, 3}; ranks 0 and 1 only through the DP all-reduce.

Usage: op_recorder_mesh.py OUT STORE_FILE RANK
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gparity  # noqa: E402


def main():
    out, store_file, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
    dist.init_process_group("gloo", store=dist.FileStore(store_file, 4), rank=rank, world_size=4)
    # Every rank creates every group (torch 1.13's new_group is collective), in one order.
    tp = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    dp = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    my_tp, my_dp = tp[rank // 2], dp[rank % 2]
    for variant in ("eager", "wrong_rank3"):
        approximate = "tanh" if variant == "wrong_rank3" and rank == 3 else "none"
        x = torch.randn(16, generator=torch.Generator().manual_seed(100 + rank))
        with gparity.record_ops(os.path.join(out, variant), step=1):
            h = F.gelu(x, approximate=approximate)  # GELU LINE
            dist.all_reduce(h, group=my_tp)
            y = h * 2.0
            dist.all_reduce(y, group=my_dp)
            z = y + 1.0
        del z
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
