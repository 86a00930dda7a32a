"""gparity's Python recorder: writes trace v1 (docs/trace-format.md) from a PyTorch training
script, in exactly the format of the C++ recorder (core/runtime/recorder.hpp).

    import gparity
    rec = gparity.Recorder("runs/eager")        # rank and world size from torch.distributed
    rec.params(model)                           # DTensor placements and offsets, once
    for step in ...:
        ...
        rec.step(step, loss, grad_norm, model, optimizer)
    rec.buckets([[fqn, ...], ...])              # FSDP2 parameter groups, in issue order

`gparity.record_ops(run_dir, step=N)` records every op of a step instead (op_recorder.py).

Hashes are computed by libgparity_torchops (torch.ops.gparity.*) where the tensors live: no copy
of the weights to the host. Set GPARITY_TORCHOPS to the library's path, or pass it to load_ops().
"""

import base64
import datetime
import json
import os
import socket
import struct
import sys
import time

import torch

__all__ = ["Recorder", "load_ops", "hash_tensor", "distributed_env", "OpRecorder", "record_ops"]

_DTYPES = {
    torch.float32: ("float32", 4), torch.bfloat16: ("bfloat16", 2), torch.float16: ("float16", 2),
    torch.float64: ("float64", 8), torch.int64: ("int64", 8), torch.int32: ("int32", 4),
    torch.int16: ("int16", 2), torch.int8: ("int8", 1), torch.uint8: ("uint8", 1), torch.bool: ("bool", 1),
}
_MASK64 = (1 << 64) - 1
_loaded = False
_loaded_path = None


def load_ops(path=None):
    """Loads libgparity_torchops into this PyTorch (once)."""
    global _loaded
    if _loaded:
        return
    path = path or os.environ.get("GPARITY_TORCHOPS")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "build", "core", "torchops", "libgparity_torchops.so")
    torch.ops.load_library(path)
    _loaded = True
    global _loaded_path
    _loaded_path = path  # the op recorder's C++ backend calls into the same library (ctypes)


def hash_tensor(t, offsets=(), global_shape=(), shard_spec=1):
    """(xxh3, shard-invariant partial) of a block, as unsigned ints; the shard hash of spec
    `shard_spec` (1 or 2, docs/hashing.md)."""
    load_ops()
    h = torch.ops.gparity.hash_tensor(t, list(offsets), list(global_shape), shard_spec).tolist()
    return h[0] & _MASK64, h[1] & _MASK64


def _dtype_name(dt):
    if dt not in _DTYPES:
        raise ValueError(f"gparity: unsupported dtype {dt}")
    return _DTYPES[dt][0]


def _scalar(t):
    """{value, bits, dtype} of a one-element tensor, bits in its own dtype (as the C++ writer)."""
    if not isinstance(t, torch.Tensor):
        t = torch.tensor(float(t), dtype=torch.float32)
    if hasattr(t, "full_tensor"):
        # A DTensor (e.g. clip_grad_norm_'s total norm over FSDP2 parameters): its global value.
        t = t.full_tensor()
    t = t.detach().reshape(-1)[:1].cpu().contiguous()
    name, size = _DTYPES[t.dtype][0], _DTYPES[t.dtype][1]
    raw = t.view(torch.uint8).numpy().tobytes() if hasattr(t, "numpy") else bytes(t.view(torch.uint8).tolist())
    bits = int.from_bytes(raw[:size], "little")
    value = float(t.float().item()) if t.dtype.is_floating_point else float(t.item())
    out = {"value": value if value == value and abs(value) != float("inf") else None,
           "bits": format(bits, f"0{2 * size}x"), "dtype": name}
    # Same key order as the C++ writer (nlohmann sorts object keys).
    return {k: out[k] for k in sorted(out)}


def _encode(values):
    return base64.b64encode(struct.pack(f"<{len(values)}Q", *values)).decode("ascii")


def _dist():
    d = torch.distributed
    return d if d.is_available() and d.is_initialized() else None


def _first_slurm_host(nodelist):
    """The first host of a Slurm host list: "gpu[07-09,12],login1" -> "gpu07"."""
    host, depth, skipping = "", 0, False
    for c in nodelist.strip():
        if c == "[":
            depth, skipping = depth + 1, False
        elif c == "]":
            depth -= 1
        elif depth == 0 and c in ", ":
            break
        elif depth > 0:
            skipping = skipping or c in ",-"
            host += "" if skipping else c
        else:
            host += c
    if depth != 0 or not host:
        raise ValueError(f"gparity: cannot read the Slurm host list {nodelist!r}")
    return host


def distributed_env():
    """Under Slurm's srun (SLURM_PROCID set, RANK not), sets RANK / WORLD_SIZE / LOCAL_RANK /
    GROUP_RANK / MASTER_ADDR (first host of the step's node list) / MASTER_PORT (29500) as torchrun
    would, so that torch.distributed.init_process_group("env://") and the Recorder work as under
    torchrun; variables already set win. Returns the five values as a dict."""
    env = os.environ
    if "RANK" not in env and "SLURM_PROCID" in env:
        env["RANK"] = env["SLURM_PROCID"]
        env.setdefault("WORLD_SIZE", env.get("SLURM_NTASKS", "1"))
        env.setdefault("LOCAL_RANK", env.get("SLURM_LOCALID", "0"))
        if "SLURM_NODEID" in env:
            env.setdefault("GROUP_RANK", env["SLURM_NODEID"])
        if "MASTER_ADDR" not in env:
            nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
            if nodes:
                env["MASTER_ADDR"] = _first_slurm_host(nodes)
        env.setdefault("MASTER_PORT", "29500")
    return {k: env.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}


def _node_rank():
    """The node this process runs on, as the launcher says (torchrun's GROUP_RANK, Slurm's
    SLURM_NODEID); -1 when it does not."""
    for name in ("GROUP_RANK", "SLURM_NODEID"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return -1


_RANK_INFO_BYTES = 1024


def _gather_rank_infos(own, world_size):
    """Every rank's manifest entry, in rank order, through one all_gather of fixed-size byte
    tensors (JSON text, never pickles): across nodes only each rank knows its own host."""
    d = _dist()
    if d is None or world_size == 1:
        return None
    data = json.dumps(own, sort_keys=True).encode("utf-8")[:_RANK_INFO_BYTES]
    device = torch.device("cuda", torch.cuda.current_device()) if d.get_backend() == "nccl" else torch.device("cpu")
    mine = torch.zeros(_RANK_INFO_BYTES + 2, dtype=torch.uint8, device=device)
    mine[:2] = torch.tensor([len(data) >> 8, len(data) & 0xFF], dtype=torch.uint8)
    mine[2:2 + len(data)] = torch.tensor(list(data), dtype=torch.uint8)
    everyone = [torch.empty_like(mine) for _ in range(world_size)]
    d.all_gather(everyone, mine)
    infos = []
    for r, t in enumerate(everyone):
        raw = bytes(t.cpu().tolist())
        n = min((raw[0] << 8) | raw[1], _RANK_INFO_BYTES)
        try:
            entry = json.loads(raw[2:2 + n].decode("utf-8"))
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            entry = {"rank": r, "local_rank": r, "host": "", "device": ""}
        entry["rank"] = r
        infos.append(entry)
    return infos


def _local_block(p):
    """(local tensor, offsets, global shape, placements, counts) of a parameter or DTensor."""
    if hasattr(p, "to_local") and hasattr(p, "placements") and hasattr(p, "device_mesh"):
        try:  # PyTorch >= 2.5
            from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
        except ImportError:
            from torch.distributed._tensor._utils import compute_local_shape_and_global_offset

        local = p.to_local()
        _, offsets = compute_local_shape_and_global_offset(p.shape, p.device_mesh, p.placements)
        placements, counts = [], True
        coord = p.device_mesh.get_coordinate() or []
        for i, pl in enumerate(p.placements):
            if pl.is_shard():
                placements.append(f"S({pl.dim})")
            elif pl.is_replicate():
                placements.append("R")
                counts = counts and (coord[i] == 0 if i < len(coord) else True)
            else:
                placements.append("P")
        return local, list(offsets), list(p.shape), placements, counts
    d = _dist()
    counts = d is None or d.get_rank() == 0  # a plain tensor is a replica on every rank
    return p, [0] * p.dim(), list(p.shape), ["R"], counts


def _gpu_id(gpu):
    rank = gpu.get("rank")
    return int(rank) if rank is not None else int(gpu.get("dev"), 16)


def nccl_graph_info():
    """The manifest's "nccl": NCCL_ALGO, NCCL_GRAPH_FILE and the ring orders of that file (as
    `gparity nccl-rings` writes them), which alone change bf16 results (docs/ring-orders.md).
    None when neither is set and the run is not on NCCL."""
    algo = os.environ.get("NCCL_ALGO", "")
    graph = os.environ.get("NCCL_GRAPH_FILE", "")
    d = _dist()
    if not (algo or graph or (d is not None and str(d.get_backend()) == "nccl")):
        return None
    info = {"algo": algo, "graph_file": graph, "rings": []}
    if graph:
        import xml.etree.ElementTree as ET
        try:
            for g in ET.parse(graph).getroot().findall("graph"):
                if g.get("pattern") == "4" and len(g):
                    info["rings"] = [[_gpu_id(x) for x in ch.findall("gpu")] for ch in g.findall("channel")]
                    break
        except (OSError, ET.ParseError, ValueError, TypeError) as e:
            info["graph_error"] = f"{graph}: {e}"
    return info


class Recorder:
    def __init__(self, run_dir, rank=None, world_size=None, local_rank=None, steps=None):
        """Opens rank-<rank>.jsonl in run_dir (a folder every node can write: a shared file
        system across nodes). Every rank constructs one: with torch.distributed initialized,
        the ranks exchange where they run (one all_gather) and rank 0 writes the manifest with
        every rank's host and node. `steps`: the steps the run will record (1..steps), declared
        in the manifest so that a comparison can tell a run that stopped early (INCOMPLETE)."""
        d = _dist()
        self.rank = rank if rank is not None else (d.get_rank() if d else int(os.environ.get("RANK", 0)))
        self.world_size = world_size if world_size is not None else (
            d.get_world_size() if d else int(os.environ.get("WORLD_SIZE", 1)))
        self.local_rank = local_rank if local_rank is not None else int(os.environ.get("LOCAL_RANK", self.rank))
        self.run_dir = run_dir
        self.steps = steps
        own = {"rank": self.rank, "local_rank": self.local_rank, "host": socket.gethostname(),
               "device": f"cuda:{self.local_rank}" if torch.cuda.is_available() else "cpu"}
        if _node_rank() >= 0:
            own["node"] = _node_rank()
        self._rank_infos = _gather_rank_infos(own, self.world_size)
        if self._rank_infos is None:  # no torch.distributed: this rank's entry, the others guessed alike
            self._rank_infos = [own if r == self.rank else
                                {"rank": r, "local_rank": r, "host": own["host"],
                                 "device": f"cuda:{r}" if torch.cuda.is_available() else "cpu"}
                                for r in range(self.world_size)]
        os.makedirs(run_dir, exist_ok=True)
        self._file = open(os.path.join(run_dir, f"rank-{self.rank}.jsonl"), "w", encoding="utf-8")
        self._table = None
        self._names = []
        if self.rank == 0:
            self._write_manifest()
        load_ops()

    def _write_manifest(self):
        m = {
            "schema_version": 1, "format": "gparity-trace",
            "run_id": f"gparity-py-{int(time.time())}-{os.getpid()}",
            "world_size": self.world_size, "mesh_shape": [self.world_size], "mesh_dim_names": ["dp"],
            "ranks": self._rank_infos,
            "framework_versions": {"torch": torch.__version__, "gparity": "0.1.0"},
            "command_line": list(sys.argv), "config_fingerprint": "",
            "start_time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        if self.steps is not None:
            m["steps"] = int(self.steps)
        nccl = nccl_graph_info()
        if nccl is not None:
            m["nccl"] = nccl
        if getattr(self, "op_records", False):
            m["op_records"] = True  # rank files hold op records (record_ops, docs/ops.md)
        tmp = os.path.join(self.run_dir, "manifest.json.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(m, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, os.path.join(self.run_dir, "manifest.json"))

    def _line(self, text):
        # One write and a flush per record: a crash loses at most the line in flight.
        self._file.write(text + "\n")
        self._file.flush()

    def _record(self, obj):
        self._line(json.dumps(obj, sort_keys=True, separators=(",", ":")))

    def params(self, model_or_named):
        """Writes the params table (registration order) from a module or (name, tensor) pairs."""
        named = model_or_named.named_parameters() if hasattr(model_or_named, "named_parameters") else model_or_named
        table, names = [], []
        for fqn, p in named:
            local, offsets, shape, placements, counts = _local_block(p.data if not hasattr(p, "to_local") else p)
            table.append({"counts": counts, "dtype": _dtype_name(local.dtype), "fqn": fqn,
                          "local_shape": list(local.shape), "offsets": offsets, "placements": placements,
                          "shape": shape})
            names.append(fqn)
        if table != self._table:
            self._record({"params": table, "type": "params"})
            self._table, self._names = table, names

    def _hash_all(self, tensors):
        load_ops()
        locals_, offsets, shapes = [], [], []
        for entry, t in zip(self._table, tensors):
            local = t.to_local() if hasattr(t, "to_local") else t
            locals_.append(local.detach())
            offsets += entry["offsets"]
            shapes += entry["shape"]
        h = torch.ops.gparity.hash_tensors(locals_, offsets, shapes).tolist()
        xxh = [a & _MASK64 for a, _ in h]
        shard = [(b & _MASK64) if e["counts"] else 0 for (_, b), e in zip(h, self._table)]
        return xxh, shard

    def step(self, step, loss, grad_norm=None, model=None, optimizer=None, hash_grads=False):
        """Appends a step record: loss and grad norm bits, and hashes of the model's weights (and
        optionally gradients and optimizer state), aligned with the params table."""
        if isinstance(loss, torch.Tensor) and loss.is_cuda:
            # The step's queued kernels finish first: recorder_ns is then the recorder's own cost,
            # not the wait for the training work that reading the loss would otherwise include.
            torch.cuda.synchronize(loss.device)
        start = time.perf_counter_ns()
        if model is not None and self._table is None:
            self.params(model)
        head = {"type": "step", "step": int(step), "loss": _scalar(loss)}
        if grad_norm is not None:
            head["grad_norm"] = _scalar(grad_norm)
        hashes = []
        if model is not None:
            ps = [p for _, p in model.named_parameters()]
            hashes.append(("param", ps))
            if hash_grads and all(p.grad is not None for p in ps):
                hashes.append(("grad", [p.grad for p in ps]))
            if optimizer is not None:
                for key in ("exp_avg", "exp_avg_sq", "momentum_buffer"):
                    states = [optimizer.state.get(p, {}).get(key) for p in ps]
                    if all(s is not None for s in states):
                        hashes.append((f"optim.{key}", states))
        arrays = []
        for prefix, tensors in hashes:
            xxh, shard = self._hash_all(tensors)
            arrays += [(f"{prefix}.xxh3", xxh), (f"{prefix}.shard", shard)]
        head["recorder_ns"] = time.perf_counter_ns() - start
        line = json.dumps(head, separators=(",", ":"))
        if arrays:
            line = line[:-1] + ',"hashes":{' + ",".join(f'"{n}":"{_encode(v)}"' for n, v in arrays) + "}}"
        self._line(line)

    def buckets(self, groups, collective="reduce_scatter", group="dp", dtype=None, order=None):
        """Writes a bucket plan: `groups` lists buckets in issue order, each a list of fqns in
        payload order (FSDP2: one bucket per fully_shard unit). Offsets are the members' padded
        dim-0 shards back to back, as FSDP2 packs its reduce-scatter input."""
        by_name = {e["fqn"]: e for e in self._table or []}
        buckets = []
        for members in groups:
            offset, out = 0, []
            for fqn in members:
                e = by_name[fqn]
                elem = [s for n, s in _DTYPES.values() if n == e["dtype"]][0]
                rows = e["shape"][0] if e["shape"] else 1
                row_numel = 1
                for s in e["shape"][1:]:
                    row_numel *= s
                size = -(-rows // self.world_size) * row_numel * elem
                out.append({"fqn": fqn, "offset": offset, "size": size})
                offset += size
            buckets.append({"collective": collective, "dtype": dtype or (by_name[members[0]]["dtype"] if members else "float32"),
                            "members": out})
        rec = {"groups": [{"buckets": buckets, "group": group}], "type": "buckets"}
        if order:
            rec["order"] = order
        self._record(rec)

    def event(self, kind, message, step=None, data=None):
        rec = {"data": data or {}, "kind": kind, "message": message, "type": "event"}
        if step is not None:
            rec["step"] = int(step)
        self._record(rec)

    def close(self):
        self._file.close()


from .op_recorder import OpRecorder, record_ops  # noqa: E402
