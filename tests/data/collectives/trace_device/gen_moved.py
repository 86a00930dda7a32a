# TORCH_TRACE logs and Flight Recorder dumps of a step whose compiled graph issues the collectives
# of two process groups, for gparity's eager-vs-compiled schedule check (issue 34). Run under
# torchrun on 2 GPUs:  torchrun --nproc_per_node 2 gen_moved.py CASE DIR   (TORCH_TRACE=DIR/trace)
# Groups: tp and dp, two groups over {0, 1} (as a 1 x 2 mesh would have them on 2 GPUs).
# Each step: h = x @ w all-reduced over tp (the activation), then w all-gathered over dp (the
# weights, as FSDP would), the two independent of each other; loss from both.
# CASE: eager        | the step run eagerly (functional collectives): issue order tp, dp.
#       compiled     | torch.compile (Inductor), no pass: the graph keeps tp before dp.
#       moved        | a post-grad pass (Inductor's post_grad_custom_post_pass) moves the dp
#                    | all-gather before the tp all-reduce on every rank.
#       moved_rank1  | the same pass on rank 1 only (a rank-dependent pass, as compile-on-one-rank
#                    | bugs are): rank 0 issues tp then dp, rank 1 dp then tp.
# Every rank writes its Flight Recorder dump through PyTorch's API at the end: the pickle
# DIR/nccl_trace_api_rank_<r> (beside DIR/trace, a run folder as gparity reads it) and the JSON
# form DIR/fr_json/nccl_trace_json_rank_<r> (apart: two dumps of one rank in one folder are an
# error, not a choice).
import os, sys, datetime, torch, torch.distributed as dist
import torch.distributed._functional_collectives as funcol

case, out = sys.argv[1], sys.argv[2]
os.makedirs(os.path.join(out, "fr_json"), exist_ok=True)
timeout = datetime.timedelta(seconds=int(os.environ.get("FR_TIMEOUT_S", "30")))
# device_id: communicators made eagerly, at init and new_group, so that a rank-dependent order
# meets in the collectives themselves, not in the lazy setup of each group's communicator (there
# rank 1 waited for dp's ncclUniqueId while rank 0 set up tp: a store timeout, no dump).
local = int(os.environ.get("LOCAL_RANK", 0))
torch.cuda.set_device(local)
dist.init_process_group("nccl", timeout=timeout, device_id=torch.device("cuda", local))
rank, world = dist.get_rank(), dist.get_world_size()
tp = dist.new_group(list(range(world)), timeout=timeout, group_desc="tp")
dp = dist.new_group(list(range(world)), timeout=timeout, group_desc="dp")
c10d = torch._C._distributed_c10d
OPS = torch.ops._c10d_functional


def step(x, w):
    h = funcol.all_reduce(torch.mm(x, w), "sum", tp)  # tp: the activation
    wg = funcol.all_gather_tensor(w, 0, dp)             # dp: the weights
    return (h @ wg[: w.shape[0]]).square().mean()


def move_dp_before_tp(graph):
    """Moves the first all_gather_into_tensor before the first all_reduce (a pass bug)."""
    nodes = list(graph.nodes)
    ag = next((n for n in nodes if n.target == OPS.all_gather_into_tensor.default), None)
    ar = next((n for n in nodes if n.target == OPS.all_reduce.default), None)
    if ag is None or ar is None or nodes.index(ag) < nodes.index(ar):
        print(f"rank {rank}: pass found ag={ag} ar={ar}: nothing moved", flush=True)
        return
    ar.prepend(ag)
    print(f"rank {rank}: pass moved {ag.name} before {ar.name}", flush=True)


try:
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class MovePass(CustomGraphPass):
        def __call__(self, graph):
            move_dp_before_tp(graph)

        def uuid(self):
            return f"gparity-move-dp-before-tp-{case}-{rank}"

    the_pass = MovePass()
except ImportError:  # older releases take a plain callable
    the_pass = move_dp_before_tp

if case == "moved" or (case == "moved_rank1" and rank == 1):
    torch._inductor.config.post_grad_custom_post_pass = the_pass
fn = step if case == "eager" else torch.compile(step)
torch.manual_seed(0)
x = torch.randn(64, 64, device="cuda") * (rank + 1)
w = torch.randn(64, 64, device="cuda")
for s in range(1, int(os.environ.get("STEPS", "2")) + 1):
    loss = fn(x, w)
    print(f"rank {rank}: step {s} loss {loss.item():.9g}", flush=True)
    w = w - 0.01 * loss


def dump(kind):
    try:
        if kind == "json" and hasattr(c10d, "_dump_nccl_trace_json"):
            data = c10d._dump_nccl_trace_json(includeCollectives=True, onlyActive=False)
            name = "fr_json/nccl_trace_json_rank_"
        else:
            data = c10d._dump_nccl_trace(includeCollectives=True, includeStackTraces=True, onlyActive=False)
            name = "nccl_trace_api_rank_"
        data = data.encode() if isinstance(data, str) else bytes(data)
        with open(os.path.join(out, f"{name}{rank}"), "wb") as f:
            f.write(data)
        print(f"rank {rank}: wrote {name}{rank} ({len(data)} bytes)", flush=True)
    except Exception as e:
        print(f"rank {rank}: {kind} dump failed: {e!r}", flush=True)


dump("pickle")
dump("json")
dist.destroy_process_group()
