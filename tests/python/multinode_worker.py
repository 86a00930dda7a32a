"""One rank of a small data-parallel run recorded by python/gparity, for test_multinode.py:
started by torchrun on each of two "nodes" (two torchrun launches on localhost, Gloo, CPU).

    multinode_worker.py RUN_DIR STEPS [HANG_RANK HANG_STEP]

Gradients are all-reduced by hand (sum, then divided by the world size), so every rank holds the
same weights. With HANG_RANK / HANG_STEP that rank stops at the start of that step (sleeping,
alive): the test kills its node there, after every rank recorded the step before. A rank that
sees a collective fail records a failure event, as a training script should, and exits 1.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gparity  # noqa: E402


def main():
    run_dir, steps = sys.argv[1], int(sys.argv[2])
    hang_rank, hang_step = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (-1, -1)
    gparity.distributed_env()  # a no-op under torchrun; under srun it sets RANK, MASTER_ADDR, ...
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"gparity-test: rank {rank} on node {os.environ.get('GROUP_RANK')}", flush=True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = gparity.Recorder(run_dir, steps=steps)
    rec.params(model)
    step = 0
    try:
        for step in range(1, steps + 1):
            if rank == hang_rank and step == hang_step:
                time.sleep(120)
            g = torch.Generator().manual_seed(1000 * step + rank)
            x = torch.randn(6, 8, generator=g)
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            rec.step(step, loss, norm, model, opt)
    except RuntimeError as e:
        rec.event("failure", f"rank {rank}: step {step}: {str(e).splitlines()[0]}", step=step)
        rec.close()
        sys.exit(1)
    rec.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
