"""One rank of the op recorder's CI training (tests/python/test_op_recorder.py): a small pre-norm
MLP block trained 2 steps with a gradient all-reduce over Gloo, eager and compiled with
aot_autograd (functorch.compile.aot_module, a compiler that runs the FX graph as it is), with
gparity.record_ops on every step. Runs, each a trace directory of op records under OUT:
  eager        eager PyTorch
  compiled     aot_module, no decomposition
  wrong_all    aot_module with a wrong gelu decomposition (the tanh approximation) on every rank
  wrong_rank1  the same on rank 1 only
recorded by each backend of BACKENDS (python: the TorchDispatchMode; cpp: libgparity_torchops'
RecordFunction callbacks) under OUT/<backend>/<run>, and, for the gate, step traces
(gparity.Recorder: loss and weight hashes) of each run in OUT/steps_<run> (the first backend's).

Usage: op_recorder_train.py OUT STORE_FILE RANK WORLD_SIZE [BACKENDS, default python,cpp]
"""

import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from functorch.compile import aot_module, make_boxed_func  # noqa: E402

import gparity  # noqa: E402

aten = torch.ops.aten


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x):
        h = self.fc1(x)
        h = F.gelu(h)  # GELU LINE
        return self.fc2(h)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.mlp = Mlp()
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        x = x + self.mlp(self.norm(x))
        return self.head(x)


def wrong_gelu(x, approximate="none"):
    # The tanh approximation where eager computes the exact (erf) gelu: a wrong decomposition.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def run_fx(gm, example_inputs):
    return make_boxed_func(gm.forward)


def train(out, variant, rank, world, backend, steps_dir=None):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    net = model
    if variant != "eager":
        wrong = variant == "wrong_all" or (variant == "wrong_rank1" and rank == 1)
        decompositions = {aten.gelu.default: wrong_gelu} if wrong else {}
        net = aot_module(model, fw_compiler=run_fx, bw_compiler=run_fx, decompositions=decompositions)
        # Compile first (aot_autograd traces on the first call): the recorder records what runs,
        # not the tracing. The warm-up's gradients are dropped.
        net(torch.zeros(8, 16)).sum().backward()
        opt.zero_grad(set_to_none=True)
    gen = torch.Generator().manual_seed(100 + rank)
    run_dir = os.path.join(out, backend, variant)
    steps = gparity.Recorder(steps_dir) if steps_dir else None
    for step in (1, 2):
        x = torch.randn(8, 16, generator=gen)
        y = torch.randn(8, 4, generator=gen)
        with gparity.record_ops(run_dir, step=step, model=model, backend=backend):
            loss = F.mse_loss(net(x), y)
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad.div_(world)
            opt.step()
            opt.zero_grad()
        if steps:
            steps.step(step, loss, model=model)
    if steps:
        steps.close()


def main():
    out, store_file, rank, world = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    backends = (sys.argv[5] if len(sys.argv) > 5 else "python,cpp").split(",")
    store = dist.FileStore(store_file, world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    for i, backend in enumerate(backends):
        for variant in ("eager", "compiled", "wrong_all", "wrong_rank1"):
            train(out, variant, rank, world, backend, os.path.join(out, "steps_" + variant) if i == 0 else None)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
