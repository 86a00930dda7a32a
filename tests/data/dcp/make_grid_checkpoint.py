#!/usr/bin/python3
"""Writes tests/data/dcp/grid/: a small DCP-format checkpoint whose chunks are NOT row blocks
(a 2x2 grid of a [6, 10] tensor, column blocks of a [4, 6] bfloat16 tensor, one chunk saved
with transposed strides, a 0-d tensor, a bytes entry), plus grid.safetensors holding the same
full tensors. Run once by hand; the output is committed test data. Needs torch (any 1.13+) for
torch.save only; the .metadata pickle is built from stand-in classes named like DCP's, the way
torch.distributed.checkpoint pickles its dataclasses (NEWOBJ + BUILD of the field dict)."""
import io, json, os, struct, sys, types
from collections import OrderedDict
import torch

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grid")
os.makedirs(out, exist_ok=True)

# Stand-ins registered under DCP's module names so that pickle writes those references.
meta = types.ModuleType("torch.distributed.checkpoint.metadata")
fsm = types.ModuleType("torch.distributed.checkpoint.filesystem")
sys.modules[meta.__name__] = meta
sys.modules[fsm.__name__] = fsm

def dataclass(mod, name, fields):
    def init(self, **kw):
        for f in fields:
            setattr(self, f, kw.get(f))
    cls = type(name, (), {"__init__": init, "__module__": mod.__name__})
    cls.__qualname__ = name
    setattr(mod, name, cls)
    return cls

Metadata = dataclass(meta, "Metadata", ["state_dict_metadata", "planner_data", "storage_data", "storage_meta", "version"])
TSM = dataclass(meta, "TensorStorageMetadata", ["properties", "size", "chunks"])
BSM = dataclass(meta, "BytesStorageMetadata", [])
Chunk = dataclass(meta, "ChunkStorageMetadata", ["offsets", "sizes"])
Index = dataclass(meta, "MetadataIndex", ["fqn", "offset", "index"])
Info = dataclass(fsm, "_StorageInfo", ["relative_path", "offset", "length"])

class TensorProperties:
    def __init__(self, dtype):
        self.dtype = dtype
    def __getstate__(self):  # as DCP does: a tuple, dtype first
        return (self.dtype, torch.strided, False, None, False)
    def __setstate__(self, s):
        self.dtype = s[0]
TensorProperties.__module__ = meta.__name__
meta.TensorProperties = TensorProperties

g = torch.Generator().manual_seed(11)
full = OrderedDict()
full["grid.weight"] = torch.randn(6, 10, generator=g)
full["cols.weight"] = torch.randn(4, 6, generator=g).to(torch.bfloat16)
full["scalar"] = torch.tensor(3.25, dtype=torch.float64)
full["vec"] = torch.arange(7, dtype=torch.int64)

# chunks per tensor: (offsets, sizes, rank, transposed-storage?)
layout = {
    "grid.weight": [((0, 0), (3, 4), 0, False), ((0, 4), (3, 6), 1, True), ((3, 0), (3, 4), 2, False), ((3, 4), (3, 6), 3, False)],
    "cols.weight": [((0, 0), (4, 2), 0, False), ((0, 2), (4, 2), 1, False), ((0, 4), (4, 2), 2, True)],
    "scalar": [((), (), 1, False)],
    "vec": [((0,), (3,), 3, False), ((3,), (4,), 2, False)],
}
files = {r: io.BytesIO() for r in range(4)}
sdm, storage = OrderedDict(), {}
for fqn, chunks in layout.items():
    t = full[fqn]
    cms = []
    for i, (off, size, rank, transposed) in enumerate(chunks):
        sl = tuple(slice(o, o + s) for o, s in zip(off, size))
        c = t[sl].clone() if sl else t.clone()
        if transposed:  # same values, column-major storage: stride (1, rows)
            c = c.t().contiguous().t()
        buf = files[rank]
        start = buf.tell()
        torch.save(c, buf)
        storage[Index(fqn=fqn, offset=torch.Size(off), index=i)] = Info(
            relative_path=f"__{rank}_0.distcp", offset=start, length=buf.tell() - start)
        cms.append(Chunk(offsets=torch.Size(off), sizes=torch.Size(size)))
    sdm[fqn] = TSM(properties=TensorProperties(t.dtype), size=t.size(), chunks=cms)
# A non-tensor entry (DCP torch.saves the object as bytes).
sdm["step"] = BSM()
start = files[0].tell()
torch.save(7, files[0])
storage[Index(fqn="step", offset=None, index=None)] = Info(relative_path="__0_0.distcp", offset=start, length=files[0].tell() - start)

import pickle
md = Metadata(state_dict_metadata=sdm, planner_data={}, storage_data=storage, storage_meta=None, version="1.0.0")
# Index objects must hash: give them identity hashing (the pickle only records the dict's pairs).
with open(os.path.join(out, ".metadata"), "wb") as f:
    pickle.dump(md, f, protocol=4)
for r, buf in files.items():
    with open(os.path.join(out, f"__{r}_0.distcp"), "wb") as f:
        f.write(buf.getvalue())

# The same full tensors as safetensors (header written by hand: no safetensors package here).
names = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float64: "F64", torch.int64: "I64"}
header, blobs, at = {}, [], 0
for fqn, t in full.items():
    b = t.contiguous().view(torch.uint8).numpy().tobytes() if t.dim() else t.reshape(1).view(torch.uint8).numpy().tobytes()
    header[fqn] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [at, at + len(b)]}
    blobs.append(b)
    at += len(b)
h = json.dumps(header).encode()
h += b" " * ((8 - len(h) % 8) % 8)
with open(os.path.join(out, "..", "grid.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
print("wrote", out)

# Three copies of grid/__0_0.distcp's first record (tests of the record reader's paths): as
# torch.save wrote it (every member stored), with data.pkl deflated, and with data.pkl and the
# storage deflated (Python's zipfile).
import zipfile
with open(os.path.join(out, "__0_0.distcp"), "rb") as f:
    data = f.read()
end = data.find(b"PK\x05\x06") + 22
rec = data[: end + int.from_bytes(data[end - 2 : end], "little")]
src = zipfile.ZipFile(io.BytesIO(rec))
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "record_stored.zip"), "wb") as f:
    f.write(rec)
for name, deflate in (("record_mixed.zip", ("data.pkl",)), ("record_deflated.zip", ("data.pkl", "/data/"))):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as w:
        for n in src.namelist():
            w.writestr(n, src.read(n), compress_type=zipfile.ZIP_DEFLATED if any(d in n for d in deflate) else zipfile.ZIP_STORED)
    with open(os.path.join(here, name), "wb") as f:
        f.write(b.getvalue())
