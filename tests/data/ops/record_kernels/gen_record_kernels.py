# gparity.record_ops records (trace v1 op records with kernel launches) of the small transformer of
# ../debugmode_inductor/gen_inductor.py, compiled with Inductor, 2 ranks, with Inductor's
# provenance in TORCH_TRACE (TORCH_TRACE=OUTDIR/trace), for gparity's kernel-level comparison
# (issue 32). The same program and planted cases as the DebugMode logs there:
#   torchrun --nproc_per_node 2 gen_record_kernels.py MODE OUTDIR
# MODE: eager | inductor | inductor_pass1 (a post-grad pass on rank 1 only rewrites the first
#       forward gelu's erf as tanh) | inductor_nondet (deterministic algorithms off, SEQ large
#       enough that embedding's backward scatter-adds collide) | inductor_ro (torch.compile
#       mode="reduce-overhead": step 1 captures the CUDA graphs, step 2 replays them).
# One unrecorded step first (compilation, autotuning; forward and backward, no update), then
# STEPS recorded steps: forward, backward, the gradient all-reduce and the optimizer.
# Environment: STEPS (default 2), SEQ, DIM, BACKEND (record_ops backend: cpp | python; default
# cpp), PG (nccl | gloo; default nccl, gloo when the ranks share one GPU), GPARITY_TORCHOPS.
import json, os, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(here, "..", "..", "..", "..", "python")))
import gparity  # noqa: E402

mode, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
local = int(os.environ.get("LOCAL_RANK", 0))
gpus = torch.cuda.device_count()
pg = os.environ.get("PG") or ("nccl" if gpus >= int(os.environ.get("WORLD_SIZE", 1)) else "gloo")
dist.init_process_group(pg)
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(local % gpus)
dev = "cuda"
deterministic = mode != "inductor_nondet"
torch.use_deterministic_algorithms(deterministic, warn_only=True)
DIM, HEADS, SEQ, LAYERS, VOCAB = (int(os.environ.get(k, d)) for k, d in
                                   (("DIM", 64), ("HEADS", 4), ("SEQ", 32), ("LAYERS", 2), ("VOCAB", 256)))
STEPS = int(os.environ.get("STEPS", 2))
BACKEND = os.environ.get("BACKEND", "cpp")


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.n1, s.n2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        s.qkv, s.o = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        s.w1, s.w2 = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)

    def forward(s, x):
        b, t, _ = x.shape
        q, k, v = s.qkv(s.n1(x)).view(b, t, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + s.o(a.transpose(1, 2).reshape(b, t, DIM))
        return x + s.w2(F.gelu(s.w1(s.n2(x))))


class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.tok = nn.Embedding(VOCAB, DIM)
        s.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        s.norm, s.head = nn.LayerNorm(DIM), nn.Linear(DIM, VOCAB)

    def forward(s, idx, tgt):
        x = s.tok(idx)
        for l in s.layers:
            x = l(x)
        return F.cross_entropy(s.head(s.norm(x)).flatten(0, 1), tgt.flatten())


torch.manual_seed(7)
model = Net().to(dev)
g = torch.Generator().manual_seed(100 + rank)
fn = model
pass_log = []
if mode.startswith("inductor"):
    import torch._inductor.config as icfg
    for attr, val in (("provenance_tracking_level", 1), ("provenance_tracking", True)):
        if hasattr(icfg.trace, attr):
            setattr(icfg.trace, attr, val)
            pass_log.append(f"trace.{attr}={val}")
            break
    if mode == "inductor_pass1" and rank == 1:
        from torch._inductor.custom_graph_pass import CustomGraphPass

        class GeluAsTanh(CustomGraphPass):
            """The planted bug: the first gelu of the forward graph (its erf) computed with tanh."""
            def __call__(self, graph):
                if any(n.op == "placeholder" and n.name.startswith("tangents") for n in graph.nodes):
                    return  # the backward graph: left alone
                for n in graph.nodes:
                    if n.op == "call_function" and n.target is torch.ops.aten.gelu.default:
                        n.kwargs = {**n.kwargs, "approximate": "tanh"}
                        pass_log.append(f"rewrote {n.name} (gelu, approximate=tanh)")
                        return
                    if n.op == "call_function" and n.target is torch.ops.aten.erf.default:
                        n.target = torch.ops.aten.tanh.default
                        pass_log.append(f"rewrote {n.name} (erf as tanh)")
                        return

            def uuid(self):
                return "gparity-gelu-as-tanh-rank1"
        icfg.post_grad_custom_post_pass = GeluAsTanh()
    fn = torch.compile(model, backend="inductor", mode="reduce-overhead" if mode == "inductor_ro" else None)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
losses, seconds, kernels = [], [], []


def one_step(update=True):
    if mode == "inductor_ro":
        torch.compiler.cudagraph_mark_step_begin()
    idx = torch.randint(0, VOCAB, (2, SEQ), generator=g).to(dev)
    tgt = torch.randint(0, VOCAB, (2, SEQ), generator=g).to(dev)
    loss = fn(idx, tgt)
    loss.backward()
    if update:
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(world)
        opt.step()
    opt.zero_grad()
    return loss.detach().clone()


# Step 0: compilation and autotuning, not recorded; the weights are left as they were, so that
# every run's step 1 starts from the same ones (a planted bug in it would otherwise have changed
# them already, and the recorded steps would only show its consequence).
losses.append(one_step(update=False).item())
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    with gparity.record_ops(out, step=step, model=model, backend=BACKEND):
        loss = one_step()
    seconds.append(time.perf_counter() - t0)
    losses.append(loss.item())
recs = [json.loads(l) for l in open(os.path.join(out, f"rank-{rank}.jsonl"))]
kinds = {}
for r in recs:
    kinds[(r["step"], r.get("kind", "op"))] = kinds.get((r["step"], r.get("kind", "op")), 0) + 1
json.dump({"mode": mode, "rank": rank, "world": world, "pg": pg, "backend": BACKEND,
           "losses": [float.hex(l) for l in losses], "torch": torch.__version__,
           "device": torch.cuda.get_device_name(), "gpus": gpus, "deterministic": deterministic, "seq": SEQ,
           "inductor": pass_log, "recorded_seconds": seconds,
           "records": {f"step{s} {k}": n for (s, k), n in sorted(kinds.items())}},
          open(f"{out}/rank{rank}_meta.json", "w"), indent=1)
print(f"rank {rank} {mode} {BACKEND} losses {losses} records {kinds} {pass_log}")
dist.destroy_process_group()
