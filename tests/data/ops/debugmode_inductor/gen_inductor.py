# DebugMode logs (PyTorch >= 2.10) of a small transformer compiled with Inductor, 2 ranks over
# NCCL, with Inductor's provenance in TORCH_TRACE (set TORCH_TRACE=DIR before running), for
# gparity's kernel-level alignment (issue 32). Run under torchrun:
#   torchrun --nproc_per_node 2 gen_inductor.py MODE OUTDIR
# MODE: eager | inductor | inductor_pass1 (a post-grad pass on rank 1 only rewrites the first
#       forward gelu: its erf, once Inductor has decomposed it, becomes tanh) | inductor_nondet (deterministic algorithms off,
#       SEQ large enough that embedding's backward scatter-adds collide).
# Environment: HASH_FN (comma list, default hash_tensor), STEPS (default 2), SEQ, DIM.
import os, sys, json, torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils._debug_mode import DebugMode

mode, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
dev = "cuda"
deterministic = mode != "inductor_nondet"
torch.use_deterministic_algorithms(deterministic, warn_only=True)
DIM, HEADS, SEQ, LAYERS, VOCAB = (int(os.environ.get(k, d)) for k, d in
                                   (("DIM", 64), ("HEADS", 4), ("SEQ", 32), ("LAYERS", 2), ("VOCAB", 256)))
STEPS = int(os.environ.get("STEPS", 2))

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
                for n in graph.nodes:  # Inductor has decomposed gelu: its erf is what is left
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
    fn = torch.compile(model, backend="inductor")
opt = torch.optim.SGD(model.parameters(), lr=0.05)
hash_fn = os.environ.get("HASH_FN", "hash_tensor").split(",")
losses = []
for step in range(1, STEPS + 1):
    idx = torch.randint(0, VOCAB, (2, SEQ), generator=g).to(dev)
    tgt = torch.randint(0, VOCAB, (2, SEQ), generator=g).to(dev)
    with DebugMode(record_output=True, record_stack_trace=True, record_ids=True) as dm, \
         DebugMode.log_tensor_hashes(hash_fn=hash_fn, hash_inputs=True):
        loss = fn(idx, tgt)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(world)
    opt.step(); opt.zero_grad()
    losses.append(loss.item())
    with open(f"{out}/rank{rank}_step{step}.debug.txt", "w") as f:
        f.write(dm.debug_string(show_stack_trace=True))
json.dump({"mode": mode, "rank": rank, "world": world, "losses": [float.hex(l) for l in losses],
           "torch": torch.__version__, "device": torch.cuda.get_device_name(), "hash_fn": hash_fn,
           "deterministic": deterministic, "seq": SEQ, "inductor": pass_log},
          open(f"{out}/rank{rank}_meta.json", "w"), indent=1)
print(f"rank {rank} {mode} losses {losses} {pass_log}")
dist.destroy_process_group()
