"""The pre-norm transformer block the GPU benchmarks time (RMSNorm, causal SDPA attention, GELU
MLP): bench/ops_recorder_gpu_bench.py (records its ops) and bench/replay_gpu_bench.py (replays its
compiled graphs). Both run as scripts from bench/, which Python puts first on sys.path."""

import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, heads, hidden=None):
        super().__init__()
        hidden = 4 * dim if hidden is None else hidden
        self.heads = heads
        self.norm1 = nn.RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.norm2 = nn.RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.w2(F.gelu(self.w1(self.norm2(x))))
