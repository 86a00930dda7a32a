"""Saves a DCP checkpoint of a scaled-up copy of the samples' 2-block model (issue 11's hash
benchmark; ../shared/samples/README.md, `torch-2.11-dcp/`): embedding, per block RMSNorm + SiLU
MLP (dim -> hidden -> dim), output head, fp32, seed 7, sharded over the ranks of a CPU/gloo
process group. FSDP2 (`fully_shard` per block and root, on a CPU device mesh) when it works
there, else each parameter sharded by hand as a DTensor row block (Shard(0)): the same chunks
FSDP2 writes. Run under torchrun:

  torchrun --standalone --nproc-per-node 4 scripts/dcp_bench_save.py OUT_DIR [--dim 4096]
      [--hidden 32768] [--vocab 65536]

Defaults give 4.0 GiB (embedding and head 1 GiB each, four MLP weights of 512 MiB)."""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh


class Block(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return x + self.w2(F.silu(self.w1(self.norm(x))))


class Model(nn.Module):
    def __init__(self, vocab, dim, hidden):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim, hidden) for _ in range(2)])
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.tok(tokens)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def fill(local, rank, i):
    g = torch.Generator().manual_seed(7 + 1000 * i + rank)
    with torch.no_grad():
        local.normal_(0.0, 0.02, generator=g)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=32768)
    ap.add_argument("--vocab", type=int, default=65536)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    with torch.device("meta"):
        model = Model(args.vocab, args.dim, args.hidden)
    how = "fsdp2"
    try:
        from torch.distributed.fsdp import fully_shard

        for b in model.blocks:
            fully_shard(b, mesh=mesh)
        fully_shard(model, mesh=mesh)
        model.to_empty(device="cpu")
        for i, p in enumerate(model.parameters()):
            fill(p.to_local(), rank, i)
        state = model.state_dict()
    except Exception as e:  # FSDP2 on CPU/gloo not available: shard by hand, same chunks
        if rank == 0:
            print(f"FSDP2 on CPU failed ({type(e).__name__}: {e}); DTensor Shard(0) by hand", flush=True)
        from torch.distributed.tensor import DTensor, Shard

        how = "dtensor"
        with torch.device("meta"):
            model = Model(args.vocab, args.dim, args.hidden)
        state = {}
        for i, (name, p) in enumerate(model.named_parameters()):
            rows = p.shape[0] // world
            local = torch.empty((rows, *p.shape[1:]), dtype=p.dtype)
            fill(local, rank, i)
            state[name] = DTensor.from_local(local, mesh, [Shard(0)], shape=p.shape, stride=p.stride())
    n = sum(v.numel() * v.element_size() for v in state.values())
    t = time.time()
    dcp.save({"model": state}, checkpoint_id=args.out)
    dist.barrier()
    if rank == 0:
        print(f"saved {how} checkpoint: {len(state)} tensors, {n / 2**30:.2f} GiB, {world} ranks, "
              f"torch {torch.__version__}, {time.time() - t:.1f} s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
