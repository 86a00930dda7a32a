#!/usr/bin/python3
"""Generates the replay sample graphs under samples/replay/ with Debian's python3-torch (1.13):
make_fx and AOT autograd (functorch.compile.aot_function) graphs of a small MLP and of an
attention block, forward and backward, as print_readable() text.

1.13's print_readable() prints no tensor annotations; the graphs here carry them in the 2.x form
(`name: "f32[4, 16][16, 1]cpu" = ...`, annotated signature) from ShapeProp on the real inputs,
so that `gparity replay` can generate inputs from them (docs/replay.md). Next to each graph,
<graph>.inputs.safetensors holds the inputs the graph received while the model ran.

    /usr/bin/python3 samples/replay/make_graphs.py            # writes the samples
    import make_graphs; make_graphs.build()                     # {name: (GraphModule, text, inputs)}
"""
import contextlib
import io
import json
import os
import re
import struct
import sys

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.shape_prop import ShapeProp

HERE = os.path.dirname(os.path.abspath(__file__))
SHORT = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
         torch.int64: "i64", torch.int32: "i32", torch.bool: "b8", torch.uint8: "u8", torch.int8: "i8"}
ST_NAME = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
           torch.int64: "I64", torch.int32: "I32", torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8"}


def mlp_params():
    g = torch.Generator().manual_seed(1)
    return [torch.randn(32, 16, generator=g) * 0.2, torch.randn(32, generator=g) * 0.1,
            torch.randn(8, 32, generator=g) * 0.2, torch.randn(8, generator=g) * 0.1]


def mlp(w1, b1, w2, b2, x):
    h = torch.nn.functional.gelu(torch.nn.functional.linear(x, w1, b1))
    return torch.nn.functional.linear(h, w2, b2).sum(dim=-1)


def attn_params():
    g = torch.Generator().manual_seed(2)
    return [torch.randn(48, 16, generator=g) * 0.2, torch.randn(16, 16, generator=g) * 0.2,
            torch.ones(16), torch.zeros(16)]


def attention(wqkv, wo, ln_w, ln_b, x):
    b, s, d = x.shape
    h = torch.nn.functional.layer_norm(x, (d,), ln_w, ln_b)
    q, k, v = torch.nn.functional.linear(h, wqkv).split(d, dim=-1)
    q = q.view(b, s, 2, d // 2).transpose(1, 2)
    k = k.view(b, s, 2, d // 2).transpose(1, 2)
    v = v.view(b, s, 2, d // 2).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) / (d // 2) ** 0.5
    mask = torch.ones(s, s, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    out = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, d)
    return x + torch.nn.functional.linear(out, wo)


def annotation(t):
    sizes = ", ".join(str(s) for s in t.shape)
    strides = ", ".join(str(s) for s in t.stride())
    return '"%s[%s][%s]%s"' % (SHORT[t.dtype], sizes, strides, t.device.type)


def readable(gm, name):
    """print_readable() text with 2.x-style annotations from ShapeProp's tensor_meta."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        gm.print_readable()
    text = buf.getvalue().replace("class f(torch.nn.Module)", "class %s(torch.nn.Module)" % name, 1)
    text = text.replace("class GraphModule(torch.nn.Module)", "class %s(torch.nn.Module)" % name, 1)
    ann = {}
    for n in gm.graph.nodes:
        tm = n.meta.get("tensor_meta")
        if isinstance(tm, torch.fx.passes.shape_prop.TensorMetadata):
            ann[n.name] = '"%s[%s][%s]cpu"' % (SHORT[tm.dtype], ", ".join(map(str, tm.shape)),
                                               ", ".join(map(str, tm.stride)))
    lines = []
    for line in text.splitlines():
        m = re.match(r"^(\s+)def forward\(self, (.*)\):$", line)
        if m:
            params = [p.strip() for p in m.group(2).split(",")]
            line = "%sdef forward(self, %s):" % (m.group(1), ", ".join(
                "%s: %s" % (p, ann[p]) if p in ann else p for p in params))
        m = re.match(r"^(\s+)(\w+) = (.*)$", line)
        if m and m.group(2) in ann:
            line = "%s%s: %s = %s" % (m.group(1), m.group(2), ann[m.group(2)], m.group(3))
        lines.append(line.rstrip())
    return "\n".join(lines).strip("\n") + "\n"


def safetensors_bytes(tensors):
    """tensors: [(name, tensor)] -> the bytes of a .safetensors file (contiguous copies)."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors:
        data = bytes(t.detach().contiguous().view(torch.uint8).reshape(-1).tolist()) if t.numel() else b""
        header[name] = {"dtype": ST_NAME[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * ((8 - len(head) % 8) % 8)
    return struct.pack("<Q", len(head)) + head + b"".join(blobs)


def placeholders(gm):
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


def traced(fn, args, name):
    gm = make_fx(fn)(*args)
    ShapeProp(gm).propagate(*args)
    return gm, list(args)


def aot(fn, args, name):
    """Forward and backward graphs of fn under AOT autograd, each with the inputs it received."""
    from functorch.compile import aot_function
    graphs = []

    def compiler(gm, _example):
        slot = len(graphs)
        graphs.append(None)

        def run(*inputs):
            out = ShapeProp(gm).propagate(*inputs)
            if graphs[slot] is None:
                graphs[slot] = (gm, [t.detach().clone() for t in inputs])
            return out
        return run

    leaves = [a.detach().clone().requires_grad_(a.is_floating_point()) for a in args[:-1]] + [args[-1]]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = aot_function(fn, fw_compiler=compiler, bw_compiler=compiler)(*leaves)
        out.sum().backward()
    return graphs


def build():
    """{name: (GraphModule, text, [(placeholder, input tensor)])}, deterministically."""
    torch.manual_seed(0)
    x_mlp = torch.randn(4, 16, generator=torch.Generator().manual_seed(3))
    x_att = torch.randn(2, 8, 16, generator=torch.Generator().manual_seed(4))
    out = {}
    cases = [("mlp", mlp, mlp_params() + [x_mlp]), ("attention", attention, attn_params() + [x_att])]
    for base, fn, args in cases:
        gm, inputs = traced(fn, args, base)
        out[base + "_make_fx"] = gm, inputs
        fw, bw = aot(fn, args, base)
        out[base + "_aot_forward"] = fw
        out[base + "_aot_backward"] = bw
    result = {}
    for name, (gm, inputs) in out.items():
        result[name] = gm, readable(gm, name), list(zip(placeholders(gm), inputs))
    return result


def main():
    for name, (gm, text, inputs) in build().items():
        with open(os.path.join(HERE, name + ".txt"), "w") as f:
            f.write(text)
        with open(os.path.join(HERE, name + ".inputs.safetensors"), "wb") as f:
            f.write(safetensors_bytes(inputs))
        print("wrote", name, len(gm.graph.nodes), "nodes")


if __name__ == "__main__":
    sys.exit(main())
