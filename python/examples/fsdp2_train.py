"""A tiny FSDP2 training run recorded with gparity's Python recorder (python/gparity).

    GPARITY_TORCHOPS=build/core/torchops/libgparity_torchops.so \\
    torchrun --standalone --nproc_per_node 2 python/examples/fsdp2_train.py --out runs/a --seed 1
    gparity compare runs/a runs/b

With NCCL_GRAPH_FILE from `gparity nccl-rings` (and NCCL_ALGO=Ring), `--bucket-order registration`
vs `execution` shows on one node what moving bytes inside a reduce-scatter does on many
(docs/ring-orders.md).

A small Llama-like model (embedding, RMSNorm + SiLU-gated MLP blocks, output head) with
fully_shard on every block and on the root, AdamW, gradient clipping, and synthetic tokens that
are a pure function of (seed, rank, step). Every step records the loss, the global grad norm and
the hashes of every weight shard and AdamW state through torch.ops.gparity (on the GPU, where
the tensors live). Needs PyTorch >= 2.6 (torch.distributed.fsdp.fully_shard) and NCCL or Gloo.
"""

import argparse
import os
import sys

# cuBLAS needs this before its first call for deterministic results across streams.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gparity  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class Block(nn.Module):
    # The order backward produces the gradients in: what a pass that packs reduce-scatter
    # payloads in execution order would use instead of registration order.
    EXECUTION_ORDER = ("w2", "w3", "w1", "ffn_norm")

    def __init__(self, dim, hidden, bucket_order="registration"):
        super().__init__()
        self.ffn_norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        if bucket_order == "execution":
            # FSDP2 packs a unit's reduce-scatter in parameter registration order: re-registering
            # the same modules (same initial weights: they were made above, in the usual order)
            # moves their gradients to other byte offsets of the payload, and changes nothing else.
            mods = dict(self._modules)
            self._modules.clear()
            for name in self.EXECUTION_ORDER:
                self._modules[name] = mods[name]

    def forward(self, x):
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class TinyModel(nn.Module):
    def __init__(self, vocab, dim, hidden, layers, bucket_order="registration"):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Block(dim, hidden, bucket_order) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.output(self.norm(h))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="run directory to write (trace v1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--bucket-order", choices=["registration", "execution"], default="registration",
                    help="order of each block's parameters in its reduce-scatter payload (execution: "
                    "w2, w3, w1, ffn_norm, as backward produces them)")
    args = ap.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.use_deterministic_algorithms(True, warn_only=True)

    torch.manual_seed(args.seed)  # the same full initial weights on every rank
    model = TinyModel(args.vocab, args.dim, args.hidden, args.layers, args.bucket_order).to(device)
    if args.dtype == "bf16":
        model = model.to(torch.bfloat16)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)

    rec = gparity.Recorder(args.out)
    rec.params(model)
    # FSDP2 reduce-scatters one group per fully_shard unit: last block first, the root last.
    groups = [[f"layers.{i}.{n}" for n, _ in layer.named_parameters()] for i, layer in enumerate(model.layers)]
    root = [n for n, _ in model.named_parameters() if not n.startswith("layers.")]
    rec.buckets(list(reversed(groups)) + [root], order=args.bucket_order)

    for step in range(1, args.steps + 1):
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + rank * 7_919 + step)
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq_len + 1), generator=g).to(device)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.step(step, loss, grad_norm, model, opt)
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f}", flush=True)
    rec.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
