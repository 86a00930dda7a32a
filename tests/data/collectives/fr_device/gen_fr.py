# Flight Recorder dumps of real NCCL runs with two or three process groups, healthy or hung, for
# gparity's collective-schedule analysis (issue 34). Run under torchrun on 2 or 4 GPUs:
#   TORCH_FR_DUMP_TEMP_FILE=DIR/nccl_trace_rank_ torchrun --nproc_per_node N gen_fr.py CASE DIR
# Groups: world; on 4 ranks a 2x2 mesh, tp = {0,1},{2,3} and dp = {0,2},{1,3}; on 2 ranks tp and
# dp are two more groups over {0,1}. Each step: x all-reduced over tp, then dp, then world (the
# loss), each depending on the one before (so NCCL runs them in that order on every rank).
# CASE: healthy   | every rank the same order; dumps written at the end through PyTorch's API.
#       inversion | in step 2 rank 0 issues the world all-reduce before its tp all-reduce: rank 0
#                 | waits in world for rank 1, rank 1 waits in tp for rank 0 (a cycle); the others
#                 | wait in world behind them. The watchdog's timeout dumps every rank.
#       skip      | in step 2 the last rank skips its dp all-reduce: its dp partner waits for it.
# Besides the watchdog's own dump (DIR/nccl_trace_rank_<r>, a pickle), each rank writes the JSON
# form DIR/nccl_trace_json_rank_<r> from a side thread while it waits (PyTorch's JSON dump API).
import os, sys, time, threading, datetime, torch, torch.distributed as dist

case, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
timeout = datetime.timedelta(seconds=int(os.environ.get("FR_TIMEOUT_S", "20")))
dist.init_process_group("nccl", timeout=timeout)
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
if world == 4:
    tps = [dist.new_group([0, 1], timeout=timeout), dist.new_group([2, 3], timeout=timeout)]
    dps = [dist.new_group([0, 2], timeout=timeout), dist.new_group([1, 3], timeout=timeout)]
    tp, dp = tps[rank // 2], dps[rank % 2]
else:
    tp = dist.new_group(list(range(world)), timeout=timeout)
    dp = dist.new_group(list(range(world)), timeout=timeout)
STEPS = int(os.environ.get("STEPS", "3"))
c10d = torch._C._distributed_c10d


def dump(kind):
    """PyTorch's own dump APIs, pickle and JSON; the file names end in the rank as PyTorch's do."""
    try:
        if kind == "json" and hasattr(c10d, "_dump_nccl_trace_json"):
            data = c10d._dump_nccl_trace_json(includeCollectives=True, onlyActive=False)
            data = data.encode() if isinstance(data, str) else data
            name = "nccl_trace_json_rank_"
        else:
            data = c10d._dump_nccl_trace(includeCollectives=True, includeStackTraces=True, onlyActive=False)
            name = "nccl_trace_api_rank_"
        with open(os.path.join(out, f"{name}{rank}"), "wb") as f:
            f.write(data)
        print(f"rank {rank}: wrote {name}{rank} ({len(data)} bytes)", flush=True)
    except Exception as e:
        print(f"rank {rank}: {kind} dump failed: {e!r}", flush=True)


def side_dump():
    time.sleep(timeout.total_seconds() / 2)
    dump("json")

x = torch.full((1 << 16,), float(rank + 1), device="cuda")
for step in range(1, STEPS + 1):
    if step == 2 and case != "healthy":
        threading.Thread(target=side_dump, daemon=True).start()
    order = [("tp", tp), ("dp", dp), ("world", None)]
    if case == "inversion" and step == 2 and rank == 0:
        order = [("world", None), ("tp", tp), ("dp", dp)]
    if case == "skip" and step == 2 and rank == world - 1:
        order = [o for o in order if o[0] != "dp"]
    for name, group in order:
        dist.all_reduce(x, group=group)
        x.div_(2.0)
    done = torch.cuda.Event()
    done.record()
    deadline = time.time() + 3 * timeout.total_seconds()
    while not done.query():          # poll, so the side thread and the watchdog can run
        if time.time() > deadline:
            print(f"rank {rank}: step {step} still waiting after {3 * timeout}", flush=True)
            os._exit(3)
        time.sleep(0.05)
    print(f"rank {rank}: step {step} done", flush=True)
if case == "healthy":
    dump("json")
    dump("pickle")
dist.destroy_process_group()
