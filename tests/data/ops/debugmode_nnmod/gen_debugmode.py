# DebugMode logs (PyTorch >= 2.10) of a small transformer, one file per rank, for gparity's
# per-op eager-vs-compiled alignment. Run under torchrun (or alone: one rank, gloo).
#   python gen_debugmode.py MODE OUTDIR
# MODE: eager | eager_repeat | compile (aot_eager) | compile_gelu (a wrong gelu decomposition)
#       | compile_inductor (Inductor: [triton] kernel launches on a GPU).
# Environment: HASH_FN (comma list, default hash_tensor), NN_MODULE=1 (record_nn_module),
# BUG_RANKS (comma list of ranks that get the wrong decomposition; default every rank),
# PG (process group backend; default nccl on GPU, gloo on CPU), STEPS (default 2).
# Each rank runs STEPS (default 2) training steps (forward, backward, grad all-reduce, SGD) under
# DebugMode(record_output, record_stack_trace, record_ids) + log_tensor_hashes(HASH_FN, inputs).
import os, sys, json, math, torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils._debug_mode import DebugMode

mode, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
dev = "cuda" if torch.cuda.is_available() else "cpu"
if "RANK" in os.environ:
    dist.init_process_group(os.environ.get("PG", "nccl" if dev == "cuda" else "gloo"))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1
if dev == "cuda":
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
torch.use_deterministic_algorithms(True, warn_only=True)
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
bug = mode.split("_", 1)[1] if mode.startswith("compile_") else None
if bug == "inductor":
    bug = None
bug_ranks = os.environ.get("BUG_RANKS")
if bug is not None and bug_ranks and str(rank) not in bug_ranks.split(","):
    bug = "none"  # this rank compiles without the wrong decomposition
if mode.startswith("compile"):
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.debugging import get_nop_func
    decomps = {}
    if bug == "gelu":      # forward: exact gelu decomposed as the tanh approximation
        decomps[torch.ops.aten.gelu.default] = (lambda x, approximate="none": 0.5 * x * (1 + torch.tanh(
            math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x))))
    backend = "inductor" if mode == "compile_inductor" else "aot_eager" if bug is None else aot_autograd(
        fw_compiler=get_nop_func(), bw_compiler=get_nop_func(),
        decompositions=decomps)
    fn = torch.compile(model, backend=backend)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
hash_fn = os.environ.get("HASH_FN", "hash_tensor").split(",")
losses = []
for step in range(1, STEPS + 1):
    idx = torch.randint(0, VOCAB, (2, SEQ), generator=g).to(dev)
    tgt = torch.randint(0, VOCAB, (2, SEQ), generator=g).to(dev)
    with DebugMode(record_output=True, record_stack_trace=True, record_ids=True,
                   record_nn_module=os.environ.get("NN_MODULE") == "1") as dm, \
         DebugMode.log_tensor_hashes(hash_fn=hash_fn, hash_inputs=True):
        loss = fn(idx, tgt)
        loss.backward()
        if world > 1:
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad.div_(world)
    opt.step(); opt.zero_grad()
    losses.append(loss.item())
    with open(f"{out}/rank{rank}_step{step}.debug.txt", "w") as f:
        f.write(dm.debug_string(show_stack_trace=True))
    for name in ("save_logs", "dump_logs", "to_json"):
        if hasattr(dm, name):
            try:
                getattr(dm, name)(f"{out}/rank{rank}_step{step}.{name}.json")
            except Exception as e:
                print(f"rank {rank}: {name} failed: {e!r}")
json.dump({"mode": mode, "rank": rank, "world": world, "losses": [float.hex(l) for l in losses],
           "torch": torch.__version__, "device": dev, "hash_fn": hash_fn,
           "dm_methods": sorted(m for m in dir(DebugMode) if not m.startswith("__"))},
          open(f"{out}/rank{rank}_meta.json", "w"), indent=1)
print(f"rank {rank} {mode} losses {losses}")
if world > 1:
    dist.destroy_process_group()
