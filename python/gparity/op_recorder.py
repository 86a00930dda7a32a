"""gparity's eager op recorder: every dispatched op of a training step as an op record in trace v1
(docs/trace-format.md, "op"; docs/ops.md), hashed with gparity's bitwise XXH3-64 and
shard-invariant hash where the tensors live.

    with gparity.record_ops("runs/eager", step=1, model=model):
        loss = model(x); loss.backward()
        dist.all_reduce(grad); opt.step()

A TorchDispatchMode sees every op below autograd: forward, backward, gradient collectives and the
optimizer, eager or the runtime ops of a compiled region (aot_autograd). Per op it records the op,
the tensors it reads and writes (an id per tensor object, dtype, shape), the innermost module
(forward hooks), the innermost user source line, and the phase (forward until the first backward
op, backward inside autograd, optimizer after). Outputs are hashed, and inputs that are not an
earlier output of the step (parameters, optimizer state, a collective's result): their producer's
hash already says what they hold. Views (an output sharing an input's storage, an input that
is a view of a fresh hashed tensor) are not hashed: their records name their base (issue 24).

The hashes are deferred: torch.ops.gparity.hash_into enqueues both hashes of an op's tensors on
the device's current stream into a device buffer, and the buffer is read back once, when the step
ends; then the step's records are written. Nothing synchronizes per op.

Two backends write the same records: backend="cpp" (libgparity_torchops' RecordFunction callbacks,
core/torchops/op_recorder.cpp: no Python per op) and backend="python" (the TorchDispatchMode here);
"auto" (the default) takes the C++ one when the loaded library has it. docs/ops.md says where
what they see differs.
"""

import ctypes
import os
import sys
import threading
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

try:
    from torch.utils._pytree import tree_flatten
except ImportError:  # pragma: no cover
    tree_flatten = None

from ._source import _LIBRARY_DIRS, _code_line, _dumps, _is_library
from .kernel_launches import _Batches, _KernelHook, _kernel_info, _launch_hook
from .step_hooks import _Compiling, _ModuleHooks

__all__ = ["OpRecorder", "record_ops"]

_DTYPE_NAMES = {
    torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float64: "float64",
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
    torch.bool: "bool", torch.complex64: "complex64", torch.complex128: "complex128",
}
_MASK64 = (1 << 64) - 1
_SLOTS = 1 << 15  # hash slots per device buffer chunk (2 int64 words each)

def _backward_codes():
    codes = set()
    for fn in (getattr(torch.autograd, "backward", None), getattr(torch.autograd, "grad", None)):
        if fn is not None and hasattr(fn, "__code__"):
            codes.add(fn.__code__)
    return codes


def _bookkeeping_codes():
    """record_function's __enter__/__exit__: the profiler ops they call are not observed by
    RecordFunction (the C++ backend), so what those allocate would look like the step's ops."""
    rf = getattr(torch.autograd.profiler, "record_function", None)
    return tuple(getattr(rf, n).__code__ for n in ("__enter__", "__exit__") if rf is not None and hasattr(rf, n))


def _op_name(func):
    schema = getattr(func, "_schema", None)
    if schema is not None:
        name = schema.name
        overload = schema.overload_name
    else:  # pragma: no cover
        name, overload = str(func), ""
    return name if not overload or overload == "default" else f"{name}.{overload}"


# Schema return names of outputs that hold no value of the computation (docs/trace-format.md, "op",
# "unhashed"): the attention ops' RNG state (_scaled_dot_product_{cudnn,flash,efficient}_attention,
# _flash_attention_forward, _efficient_attention_forward: on CUDA with dropout 0 possibly
# uninitialized bytes) and their debug mask. Recorded without hashes, marked. native_dropout's mask
# is a value (its returns are unnamed). The C++ backend has the same rule (op_recorder_ops.cpp).
_RNG_STATE_RETURNS = frozenset(("philox_seed", "philox_offset", "rng_state", "unused", "seed", "offset"))
_DEBUG_RETURNS = frozenset(("debug_attn_mask",))


def _unhashed_return(name):
    """The "unhashed" marker of a schema return name: "rng_state", "debug" or None (a value)."""
    if name in _RNG_STATE_RETURNS:
        return "rng_state"
    return "debug" if name in _DEBUG_RETURNS else None


# Ops whose one result is uninitialized memory (whatever the allocator's block held): marked
# "uninitialized", never hashed. The C++ backend and the readers share the list
# (core/model/ops/op_log.hpp, allocates_uninitialized).
_ALLOCATIONS = frozenset(
    ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted")
)


def _unhashed_outputs(func, out, cache={}):
    """Per tensor of _flat_tensors(out): its "unhashed" marker or None; None when the op's returns
    are all values (the common case: one dict lookup, no per-return flattening)."""
    marks = cache.get(func, ())
    if marks == ():
        schema = getattr(func, "_schema", None)
        returns = getattr(schema, "returns", None) or ()
        marks = [_unhashed_return(r.name) for r in returns]
        name = getattr(schema, "name", "")
        if len(marks) == 1 and name.startswith("aten::") and name[6:] in _ALLOCATIONS:
            marks = ["uninitialized"]
        marks = cache[func] = marks if any(marks) else None
    if marks is None:
        return None
    if len(marks) == 1 and isinstance(out, torch.Tensor):
        return marks
    if not isinstance(out, (tuple, list)) or len(out) != len(marks):
        return None
    result = []
    for value, mark in zip(out, marks):
        result.extend([mark] * len(_flat_tensors(value)))
    return result


def _flat_tensors(obj):
    if tree_flatten is not None:
        leaves, _ = tree_flatten(obj)
    else:  # pragma: no cover
        leaves = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    return [x for x in leaves if isinstance(x, torch.Tensor)]


def _hashable(t):
    return t.layout == torch.strided and t.device.type in ("cpu", "cuda") and t.dtype in _DTYPE_NAMES


class _Known:
    """What the step has seen of a tensor object: its record id, the version its hash is of, and
    for a view (issue 24) the _Known of the hashed tensor it lies in (never itself a view)."""
    __slots__ = ("ref", "id", "version", "fresh", "base", "unhashed", "cover")

    def __init__(self, ref, tid, version, fresh):
        self.ref, self.id, self.version, self.fresh, self.base = ref, tid, version, fresh, None
        self.unhashed = None  # an RNG state / debug output's marker: read later, still no value
        # (lo, hi, dtype): hashed, its elements fill storage elements [lo, hi) (_dense_range);
        # an alias inside it reads values hashed here while it is fresh, even once it is gone.
        self.cover = None

    def fresh_hashed(self, t=None):
        """The _Known whose hash is this tensor's value now (itself, or a view's base: fresh, at
        the version hashed), or None. A view whose base is gone (a gradient outliving the mm
        output it is a transpose of) still holds it while `t` is at the version its base had
        (view ops and detach share the base's counter, so a write through either shows)."""
        h = self.base or self
        if not h.fresh:
            return None
        b = h.ref()
        if b is None:
            return h if h is not self and t is not None and t._version == self.version else None
        return h if b._version == h.version else None


def _dense_range(t):
    """The storage elements [lo, hi) t's elements fill exactly (non-overlapping and dense:
    contiguous, or a permutation of its dims that is), or None (op_recorder_tensors.cpp's
    dense_range)."""
    n = t.numel()
    if n == 0:
        return None
    expected = 1
    for stride, size in sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz > 1):
        if stride != expected:
            return None
        expected *= size
    return t.storage_offset(), t.storage_offset() + n


def _storage_pin(t):
    """A weak reference to t's storage (its StorageImpl, not its memory): while held, no other
    storage takes its address, which _storage_key is (the C++ recorder holds the same)."""
    from torch.multiprocessing.reductions import StorageWeakRef
    try:
        return StorageWeakRef(t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage())
    except (RuntimeError, NotImplementedError, TypeError, AttributeError):
        return None


def _storage_key(t):
    """The identity of a tensor's storage (its StorageImpl), or None."""
    try:
        return (t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage())._cdata
    except (RuntimeError, NotImplementedError, TypeError):
        return None


class _Mode(TorchDispatchMode):
    def __init__(self, recorder):
        super().__init__()
        self._rec = recorder

    @classmethod
    def ignore_compile_internals(cls):
        """torch 2.10+: a compiled region runs its compiled code under this mode (as under
        DebugMode), instead of Dynamo falling back to running its frames eagerly: the records are
        those of the program the user runs (kernels through the launcher hook)."""
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        return self._rec._on_op(func, args, kwargs)


class OpRecorder:
    """Op records of one rank of a run, step after step, into `run_dir`/rank-<r>.jsonl (trace v1).

    model: names modules by their path in it ("layers.0.mlp"); modules outside it by class.
    hashes: "shard" (default: the shard-invariant hash alone, fully parallel on the GPU: 1.37x /
    1.49x a step on an H100 at dim 2048 / 4096, docs/ops.md), or "xxh3+shard" (XXH3 beside it, for
    values compared with xxhsum; XXH3's chain is sequential per tensor: 8.4x / 10.6x); both runs
    must use the same. "none" records without hashes (the recorder's own cost, for benchmarks:
    nothing to compare).
    shard_spec: the shard hash's spec (docs/hashing.md): 2 (default since issue 32: one multiply an
    element, about half v1's GPU time on bf16), or 1 to compare with runs recorded before; every
    record of a v2 run says `"shard_spec": 2`, and hashes of two specs are never compared.
    backend: "auto" (C++ when libgparity_torchops has it), "cpp" or "python".
    batch_hashes: the C++ backend on Python 3.12+ sends the hashes asked for while Inductor's
    generated code runs in batches, one launch for many (docs/ops.md, "Hashes in batches"); the
    records are the same. None (default): on wherever it can be (the C++ backend, Python 3.12+),
    unless the environment says GPARITY_OPREC_BATCH=0; False: every hash sent with its record."""

    def __init__(self, run_dir, model=None, rank=None, world_size=None, hashes="shard", backend="auto",
                 shard_spec=2, batch_hashes=None):
        from . import load_ops, _dist, Recorder  # noqa: F401  (late: gparity imports this module)

        d = _dist()
        self.rank = rank if rank is not None else (d.get_rank() if d else int(os.environ.get("RANK", 0)))
        self.world_size = world_size if world_size is not None else (
            d.get_world_size() if d else int(os.environ.get("WORLD_SIZE", 1)))
        if hashes not in ("xxh3+shard", "shard", "none"):
            raise ValueError(f"gparity.OpRecorder: hashes must be 'xxh3+shard', 'shard' or 'none', not {hashes!r}")
        self.hashes = hashes
        if shard_spec not in (1, 2):
            raise ValueError(f"gparity.OpRecorder: shard_spec must be 1 or 2, not {shard_spec!r}")
        self.shard_spec = shard_spec
        self._xxh3 = hashes == "xxh3+shard"
        self.run_dir = run_dir
        os.makedirs(run_dir, exist_ok=True)
        load_ops()
        if backend not in ("auto", "cpp", "python"):
            raise ValueError(f"gparity.OpRecorder: backend must be 'auto', 'cpp' or 'python', not {backend!r}")
        cpp = _cpp_library()
        if backend == "cpp" and cpp is None:
            raise RuntimeError("gparity.OpRecorder: backend='cpp' but libgparity_torchops has no C++ op recorder")
        self.backend = "python" if backend == "python" or cpp is None else "cpp"
        self._cpp = cpp if self.backend == "cpp" else None
        if batch_hashes is None:
            batch_hashes = os.environ.get("GPARITY_OPREC_BATCH", "1") != "0"
        self.batch_hashes = bool(batch_hashes) and self._cpp is not None and getattr(self._cpp, "batches", False) \
            and _Batches.supported()
        # Every rank's host and node (one all_gather on every rank, as Recorder's), then the
        # manifest of a trace v1 run (one writer: Recorder's), marked as an op-record run.
        manifest = _ManifestOnly(run_dir, self.rank, self.world_size)
        if self.rank == 0:
            Recorder._write_manifest(manifest)
        self._file = open(os.path.join(run_dir, f"rank-{self.rank}.jsonl"), "w", encoding="utf-8")
        self._names = {}
        if model is not None:
            for name, m in model.named_modules():
                self._names[id(m)] = name or type(m).__name__
        self._next_id = 0
        self._backward_codes = _backward_codes()
        # Frames are matched by their code's id: a code object as a set member is hashed over all
        # its constants and names, tens of us for Inductor's generated `call` (the set holds them).
        self._backward_ids = frozenset(id(c) for c in self._backward_codes)
        self._active = False

    # ---- one step ---------------------------------------------------------------------------
    def record(self, step):
        """Context manager recording one step."""
        return _StepScope(self, int(step))

    def _begin(self, step):
        if self._active:
            raise RuntimeError("gparity.record_ops: a step is already being recorded")
        self._active = True
        self._step = step
        self._records = []      # (op, phase, module, source, args, outs, collective)
        self._known = {}        # id(tensor) -> _Known
        self._by_storage = {}   # storage key -> [_Known]
        self._storage_pins = []  # _storage_pin of each key, for the step
        self._buffers = {}      # device -> [chunks], slots used in the last
        self._used = {}
        self._backward_seen = False
        self._thread = threading.get_ident()
        self._unsettled = []    # (_Known, version recorded) of the last op's in-place outputs
        self._modules = []      # module path stack (forward hooks)
        _KernelHook.attach(self)
        _Compiling.register(self._cpp)
        _Compiling.reset()
        if self._cpp is not None:
            self._begin_cpp(step)
            if self.batch_hashes:  # once the C++ step has begun (a failed begin raised above)
                _Batches.attach(self._cpp)
            return
        _ModuleHooks.attach(self._enter_module, self._leave_module)

    def _begin_cpp(self, step):
        lib = self._cpp
        _ModuleHooks.attach(*_cpp_module_hooks(lib, self._names))
        prefixes = "\n".join(_LIBRARY_DIRS).encode("utf-8", "replace")
        if lib.gparity_oprec_begin(step, self._next_id, 0 if self.hashes == "none" else self.shard_spec,
                                   int(self._xxh3), prefixes,
                                   (tuple(self._backward_codes), _bookkeeping_codes(), _cpp_group)) != 0:
            _ModuleHooks.detach()
            self._active = False
            raise RuntimeError(lib.gparity_oprec_error().decode("utf-8", "replace"))

    def _end(self):
        _KernelHook.detach(self)
        if self.batch_hashes:
            _Batches.detach()
        _ModuleHooks.detach()
        self._active = False
        if self._cpp is not None:
            self._end_cpp()
            return
        words = self._collect()
        lines = []
        for index, (op, phase, module, source, args, outs, extra) in enumerate(self._records):
            rec = {"type": "op", "step": self._step, "index": index, "op": op}
            if self.shard_spec == 2 and self.hashes != "none":
                rec["shard_spec"] = 2
            arg_names = out_names = ()
            if extra and ("_arg_names" in extra or extra.get("kind") == "kernel"):
                extra = dict(extra)
                arg_names, out_names = extra.pop("_arg_names", ()), extra.pop("_out_names", ())
                if "kind" in extra:
                    rec["kind"], rec["kernel"] = extra.pop("kind"), extra.pop("kernel")
            rec["phase"] = phase
            if module:
                rec["module"] = module
            if source:
                rec["source"] = source
            rec["args"] = [self._tensor_json(t, words, n) for t, n in _zip_names(args, arg_names)]
            rec["outs"] = [self._tensor_json(t, words, n) for t, n in _zip_names(outs, out_names)]
            if extra:
                rec.update(extra)
            lines.append(_dumps(rec))
        # One write per step; a crash loses the step in flight, never half a line of another.
        self._file.write("".join(line + "\n" for line in lines))
        self._file.flush()
        self._records = []
        self._known = {}
        self._by_storage = {}
        self._storage_pins = []

    def _end_cpp(self):
        next_id = ctypes.c_int64(0)
        text = self._cpp.gparity_oprec_end(ctypes.byref(next_id))
        if text is None:
            raise RuntimeError(self._cpp.gparity_oprec_error().decode("utf-8", "replace"))
        self._next_id = next_id.value
        # One write per step; a crash loses the step in flight, never half a line of another.
        self._file.write(text.decode("utf-8", "replace"))
        self._file.flush()

    def close(self):
        self._file.close()

    # ---- modules ----------------------------------------------------------------------------
    def _enter_module(self, module, inputs):
        name = self._names.get(id(module))
        if name is None:
            name = type(module).__name__
        self._modules.append(name)

    def _leave_module(self, module, inputs, output):
        if self._modules:
            self._modules.pop()

    # ---- ops ------------------------------------------------------------------------------------
    def _on_op(self, func, args, kwargs):
        if _Compiling.depth:  # the compiler's tracing and benchmarks, not the step's program
            return func(*args, **kwargs)
        op = _op_name(func)
        if op.startswith("profiler::"):
            # record_function's handles (the optimizer's step opens one): bookkeeping, not values.
            return func(*args, **kwargs)
        self._settle()
        source, phase, module = self._place()
        collective = op.startswith("c10d::") or op.startswith("_c10d_functional::") or \
            op.startswith("c10d_functional::")
        waits = collective and "wait_tensor" in op

        ins = _flat_tensors((args, kwargs))
        out_kw = _flat_tensors(kwargs.get("out")) if "out" in kwargs else ()
        if out_kw:
            # An `out=` buffer: what it held before is no input of the op (never hashed before).
            written = [any(t is o for o in out_kw) for t in ins]
            in_refs = self._input_refs(ins, written)
            out_names = [("out", None) if w else None for w in written]
        else:
            in_refs = self._refs(ins, as_input=True)  # hashed before the op: in-place ops change them
            out_names = None
        out = func(*args, **kwargs)
        outs = _flat_tensors(out)
        if collective and not waits and not outs:
            # c10d::allreduce_ (torch 1.13) returns a Work: the tensors it reduces in place are its outputs.
            outs = list(ins)
        unreliable = collective and not waits
        out_refs = self._refs(outs, as_input=False, hash_now=not unreliable, unhashed=_unhashed_outputs(func, out))
        self._unsettle(outs, ins)
        extra = None
        if unreliable:
            extra = {"collective": True}
            extra.update(_collective_group(op, args, kwargs))
            extra["async"] = True
        if out_names:
            extra = dict(extra or {}, _arg_names=out_names)
        self._records.append((op, phase, module, source, in_refs, out_refs, extra))
        return out

    def _unsettle(self, outs, ins):
        """The op's outputs that are its inputs (in place, `out=`): autograd's ADInplaceOrView
        kernel bumps their version counters once this mode returns, so the version just recorded
        is one short of the one they hold after the op (the C++ backend's callback, at the op's
        end, sees the bumped one). _settle takes it at the next op."""
        self._unsettled = []
        for t in outs:
            if any(t is i for i in ins):
                k = self._lookup(t)
                if k is not None and k.fresh and k.base is None:
                    self._unsettled.append((k, k.version))

    def _settle(self):
        """Before an op: the last op's in-place outputs at the version its own bump gave them
        (exactly one more than recorded; any other count means another write: left stale)."""
        for k, recorded in self._unsettled:
            t = k.ref()
            if t is not None and k.version == recorded and t._version == recorded + 1:
                k.version = recorded + 1
        self._unsettled = []

    def _place(self, frame=None):
        """(source, phase, module) of a record made now: backward on another thread or under
        autograd's backward, optimizer once a backward was seen, else forward (with its module)."""
        source, in_backward = self._user_frame(frame)
        if in_backward or threading.get_ident() != self._thread:
            phase = "backward"
            self._backward_seen = True
        else:
            phase = "optimizer" if self._backward_seen else "forward"
        module = self._modules[-1] if self._modules and phase == "forward" else None
        return source, phase, module

    # ---- Inductor's Triton launches (issue 32; _KernelHook installs the call) ---------------------
    def _launch(self, run, autotuner, args, kwargs, caller):
        """One launch of a Triton kernel through Inductor's launcher: a record of kind "kernel"
        (docs/trace-format.md, "op"): the arguments it reads hashed before it as an op's inputs,
        those it writes hashed after it on its stream as outputs."""
        info = _kernel_info(autotuner)
        if self._cpp is not None:
            if self.batch_hashes:
                _Batches.watch(caller)
            launch = self._cpp.launch
            if launch is not None:
                # The site's id and the launch's arguments as they are, to a builtin (the site's
                # name, fields and signature were registered once; the C++ recorder finds the
                # tensors and checks they are where the site has them).
                begin, end = launch
                site = info.known_site(autotuner, caller)
                index = begin(site, args) if site is not None else -2
                if index == -2:  # a new site, or a new signature at a known one
                    site = info.site_id(autotuner, caller, args)
                    index = begin(site, args)
                hook = _launch_hook()
                if hook is not None and index >= 0:
                    # The builtin hook records the site's next launches itself (while the
                    # autotuner launches with this one launcher); with batches, once this hook has
                    # watched the site's `call` (_Batches.watch, above: nothing more to find there).
                    launchers = getattr(autotuner, "launchers", None) or ()
                    if len(launchers) == 1 and info.known_site(autotuner, caller) == site:
                        hook.remember(autotuner, caller, launchers[0], site, self.batch_hashes)
            else:  # a library without Python frames: one dispatcher call, one ctypes call
                end = self._cpp.gparity_oprec_kernel_end
                index = _kernel_begin()(info.site_id(autotuner, caller, args),
                                        [a for a in args if isinstance(a, torch.Tensor)])
            ok = False
            try:
                out = run(autotuner, *args, **kwargs)
                ok = True
            finally:
                # Always: it also ends the launch's exemption from op records. A launch that
                # failed has no outputs to hash.
                end(index, ok)
            return out
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        names, roles, written, _ = info.signature(args)
        with _no_dispatch_mode():  # the hashing is not the step's ops
            source, phase, module = self._place(caller)
            arg_refs = self._input_refs(tensors, [r == "out" for r in roles])
            self._op_inputs = ()
            out = run(autotuner, *args, **kwargs)
            out_refs = self._refs([tensors[k] for k in written], as_input=False)
        extra = {"kind": "kernel", "kernel": info.fields(autotuner, caller)[0],
                 "_arg_names": list(zip(names, roles)),
                 "_out_names": [(names[k], roles[k]) for k in written]}
        self._records.append((info.name, phase, module, source, arg_refs, out_refs, extra))
        return out

    def _user_frame(self, f=None):
        """The innermost user frame {file, line, function, code} from `f` (default: the op's
        caller, below the mode) outwards, and whether autograd's backward is on the stack."""
        if f is None:
            try:
                f = sys._getframe(3)
            except ValueError:  # autograd's device thread: no Python caller below the mode
                return None, False
        in_backward = False
        while f is not None:
            code = f.f_code
            if id(code) in self._backward_ids:
                in_backward = True
            elif not _is_library(code.co_filename):
                line = f.f_lineno
                return {"file": code.co_filename, "line": line, "function": code.co_name,
                        "code": _code_line(code.co_filename, line)}, in_backward
            f = f.f_back
        return None, in_backward

    # ---- tensors and hashes ----------------------------------------------------------------------
    def _lookup(self, t):
        k = self._known.get(id(t))
        if k is not None and k.ref() is not t:
            k = None  # the id was reused by another object
        return k

    def _refs(self, tensors, as_input, hash_now=True, unhashed=None):
        """(id, dtype, shape, slot, view base) per tensor; every tensor to hash in one hash_into
        call per device. An input that is a fresh earlier output of the step, or a view of one
        (Tensor._base), is not hashed (its producer's hash says what it holds); an output is
        hashed unless it is a view of an input (a new tensor sharing an input's storage: issue
        24; its record names its base) or a collective's (not complete yet: marked stale, its
        next reader hashes it). An output whose schema return is RNG state or a debug output
        (`unhashed`: a marker per tensor) is not hashed and is marked, and so is an input that is
        such an output, unchanged. The C++ backend applies the same rules (op_recorder_tensors.cpp)."""
        refs, todo = [], []
        if as_input:
            # The outputs' call comes next for the same op (the mode is not re-entered inside it).
            self._op_inputs = tensors
        else:
            inputs = getattr(self, "_op_inputs", ())
            self._op_inputs = ()
        for n, t in enumerate(tensors):
            k = self._lookup(t)
            base = None  # the fresh hashed tensor's _Known whose value this tensor's is in
            if as_input and k is not None and k.unhashed and k.version == t._version:
                refs.append((k.id, t.dtype, tuple(t.shape), None, None, k.unhashed))
                continue
            mark = unhashed[n] if unhashed is not None and n < len(unhashed) else None
            if mark:
                tid = k.id if k is not None else self._new_id(t)
                if k is None:
                    k = self._remember(t, tid)
                if k is not None:
                    k.version, k.fresh, k.base, k.unhashed = t._version, False, None, mark
                refs.append((tid, t.dtype, tuple(t.shape), None, None, mark))
                continue
            if k is not None:
                k.unhashed = None
            if as_input:
                if k is not None:
                    base = k.fresh_hashed(t)
                if base is None and t._is_view():
                    kb = self._lookup(t._base)
                    base = kb.fresh_hashed() if kb is not None else None
                if base is None:
                    base = self._covering_hashed(t, k)
                if base is not None and base is k:
                    refs.append((k.id, t.dtype, tuple(t.shape), None, None, None))
                    continue
            elif inputs and all(t is not i for i in inputs):
                key = _storage_key(t)
                if key:
                    for i in inputs:
                        if _storage_key(i) == key:
                            ki = self._lookup(i)
                            base = ki.fresh_hashed() if ki is not None else None
                            break
            tid = k.id if k is not None else self._new_id(t)
            if k is None:
                k = self._remember(t, tid)
            if base is not None:
                if k is not None:
                    k.version, k.fresh, k.base = base.version, False, base  # shares the base's counter
                refs.append((tid, t.dtype, tuple(t.shape), None, base.id, None))
                continue
            want = hash_now and self.hashes != "none" and _hashable(t)
            if not as_input:
                self._stale_aliases(t, k)
            mark = None
            if want and t.is_cuda and _capturing():
                # Inside a CUDA graph capture the value does not exist yet, and a hash enqueued
                # now would run at every replay into memory the step has let go.
                want, mark = False, "captured"
            if k is not None:
                k.version, k.fresh, k.base = t._version, want, None
                dense = _dense_range(t) if want else None
                k.cover = dense + (t.dtype,) if dense is not None else None
            if want:
                todo.append((len(refs), t))
            refs.append((tid, t.dtype, tuple(t.shape), None, None, mark))
        if todo:
            for (i, _), slot in zip(todo, self._hash_many([t for _, t in todo])):
                tid, dtype, shape, _, view, mark = refs[i]
                refs[i] = (tid, dtype, shape, slot, view, mark)
        return refs

    def _input_refs(self, tensors, written_only):
        """Refs of an op's or a launch's inputs where written_only[i] marks a buffer it only
        writes (an `out=` argument, a kernel's out_ptr): hashed as inputs are, but those never
        (what a buffer held before is no input). In the tensors' order (as the C++ backend's
        input_refs)."""
        read = [k for k, w in enumerate(written_only) if not w]
        written = [k for k, w in enumerate(written_only) if w]
        by_position = dict(zip(read, self._refs([tensors[k] for k in read], as_input=True)))
        by_position.update(zip(written, self._refs([tensors[k] for k in written], as_input=True, hash_now=False)))
        self._op_inputs = tensors  # the op's inputs, for the views among its outputs
        return [by_position[k] for k in range(len(tensors))]

    def _new_id(self, t):
        self._next_id += 1
        return self._next_id - 1

    def _remember(self, t, tid):
        try:
            ref = weakref.ref(t)
        except TypeError:  # pragma: no cover
            return None
        k = _Known(ref, tid, t._version, False)
        self._known[id(t)] = k
        key = _storage_key(t)
        if key is not None:
            known = self._by_storage.get(key)
            if known is None:
                # The storage's address identifies it while the step pins it (a weak reference:
                # its memory still goes when its last tensor does), as the C++ recorder does:
                # no freed storage's tensors pile up under a reused address, walked by every
                # output there, and a gone tensor's hashed range (_Known.cover) stays its own.
                self._by_storage[key] = known = []
                self._storage_pins.append(_storage_pin(t))
            known.append(k)
        return k

    def _covering_hashed(self, t, k):
        """A fresh hashed tensor of the step in t's storage, of t's dtype, whose hashed elements
        fill a range that includes every one t reaches (_Known.cover): t, an alias autograd does
        not know as a view (Inductor's reinterpret_tensor of a buffer or parameter), holds values
        it read there and is recorded as its view, not hashed again. The covering tensor may be
        gone (a weight's transposed alias the forward's mm read, the weight read again by the
        backward): its range holds what it hashed while no write to the storage was seen; a live
        one must also be at the version hashed. Else None (op_recorder_tensors.cpp, likewise)."""
        others = self._by_storage.get(_storage_key(t)) if t.numel() > 0 else None
        if not others or any(st < 0 for st in t.stride()):
            return None
        lo = t.storage_offset()
        hi = lo + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
        for other in others:
            if other is k or other.base is not None or not other.fresh or other.cover is None:
                continue
            clo, chi, dtype = other.cover
            if dtype != t.dtype or lo < clo or hi >= chi:
                continue
            b = other.ref()
            if b is not None and b._version != other.version:
                continue
            return other
        return None

    def _stale_aliases(self, t, written):
        """`t` was written: every other tensor of the step in its storage no longer holds what its
        hash says (a kernel writing through Inductor's reinterpret_tensor, which autograd does not
        know as a view: no shared version counter tells); its next reader hashes it again."""
        for other in self._by_storage.get(_storage_key(t), ()):
            if other is not written:
                other.fresh = False

    def _hash_many(self, tensors):
        """Enqueues both hashes of every tensor (one call per device); returns their slots
        (device, chunk, slot)."""
        slots = [None] * len(tensors)
        by_device = {}
        for i, t in enumerate(tensors):
            by_device.setdefault(t.device, []).append(i)
        for dev, idx in by_device.items():
            chunks = self._buffers.setdefault(dev, [])
            used = self._used.setdefault(dev, [])
            if not chunks or used[-1] + len(idx) > chunks[-1].numel() // 2:
                chunks.append(torch.zeros(2 * max(_SLOTS, len(idx)), dtype=torch.int64, device=dev))
                used.append(0)
            first = used[-1]
            torch.ops.gparity.hash_into(chunks[-1], first, [tensors[i].detach() for i in idx], self._xxh3,
                                        self.shard_spec)
            used[-1] = first + len(idx)
            for k, i in enumerate(idx):
                slots[i] = (dev, len(chunks) - 1, first + k)
        return slots

    def _collect(self):
        """Every hash of the step, read back: the step's one wait per device."""
        words = {}
        for dev, chunks in self._buffers.items():
            words[dev] = [c[: 2 * n].cpu().tolist() for c, n in zip(chunks, self._used[dev])]
        self._buffers, self._used = {}, {}
        return words

    def _tensor_json(self, ref, words, name=None):
        tid, dtype, shape, slot, view, unhashed = ref
        j = {"id": tid, "dtype": _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", "")), "shape": list(shape)}
        if name is not None:
            j["name"] = name[0]
            if name[1] is not None:
                j["role"] = name[1]
        if unhashed:
            j["unhashed"] = unhashed
        if view is not None:
            j["view"] = {"base": view}
        if slot is not None:
            dev, chunk, i = slot
            w = words[dev][chunk]
            if self.hashes == "xxh3+shard":
                j["xxh3"] = format(w[2 * i] & _MASK64, "016x")
            j["shard"] = format(w[2 * i + 1] & _MASK64, "016x")
        return j


def _zip_names(refs, names):
    return zip(refs, list(names) + [None] * (len(refs) - len(names))) if names else ((r, None) for r in refs)


_kernel_op_overloads = []


def _kernel_begin():
    """torch.ops.gparity.oprec_kernel_begin as an OpOverload (resolved once: a launch pays the
    dispatcher, not the attribute lookups)."""
    if not _kernel_op_overloads:
        _kernel_op_overloads.append(torch.ops.gparity.oprec_kernel_begin.default)
    return _kernel_op_overloads[0]


def _no_dispatch_mode():
    """Leaves the recorder's dispatch mode for the block (a kernel's hashing is not the step's)."""
    from torch.utils import _python_dispatch as pd
    if hasattr(pd, "_disable_current_modes"):  # torch 2.0+
        return pd._disable_current_modes()
    return pd._pop_mode_temporarily()  # torch 1.13: the one mode pushed


def _capturing():
    try:
        return torch.cuda.is_current_stream_capturing()
    except Exception:  # pragma: no cover  (a CPU-only torch)
        return False


def _cpp_group(op, args):
    """A collective's group fields for the C++ recorder's record (the same rules as this one's:
    _collective_group, called while the collective's caller is on the stack)."""
    return _dumps(_collective_group(op, tuple(args), {}))[1:-1]


_cpp_lib = []


def _cpp_module_hooks(lib, names):
    """(enter, leave) for _ModuleHooks: the C++ recorder's module stack pushed and popped, each
    module by its name in `names` (id -> name; else its class's), encoded once."""
    push, pop, encoded = lib.gparity_oprec_push_module, lib.gparity_oprec_pop_module, {}

    def enter(module, inputs):
        b = encoded.get(id(module))
        if b is None:
            b = encoded[id(module)] = (names.get(id(module)) or type(module).__name__).encode("utf-8", "replace")
        push(b)

    def leave(module, inputs, output):
        pop()

    return enter, leave


def _cpp_library():
    """libgparity_torchops' C++ op recorder (ctypes; PyDLL: called with the GIL held), or None."""
    if _cpp_lib:
        return _cpp_lib[0]
    from . import load_ops
    load_ops()
    from . import _loaded_path
    lib = None
    try:
        lib = ctypes.PyDLL(_loaded_path)
        lib.gparity_oprec_features.restype = ctypes.c_int
        lib.gparity_oprec_begin.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                                            ctypes.c_char_p, ctypes.py_object]
        lib.gparity_oprec_begin.restype = ctypes.c_int
        lib.gparity_oprec_end.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        lib.gparity_oprec_end.restype = ctypes.c_char_p
        lib.gparity_oprec_error.restype = ctypes.c_char_p
        lib.gparity_oprec_push_module.argtypes = [ctypes.c_char_p]
        lib.gparity_oprec_push_module.restype = None
        lib.gparity_oprec_pop_module.restype = None
        lib.gparity_oprec_kernel_end.argtypes = [ctypes.c_int64, ctypes.c_int]
        lib.gparity_oprec_kernel_end.restype = None
        lib.features = lib.gparity_oprec_features()
        lib.launch = None
        if lib.features & 2:  # the launch builtins (op_recorder_python.cpp), with Python frames
            try:
                lib.gparity_oprec_launch_functions.argtypes = [ctypes.py_object]
                lib.gparity_oprec_launch_functions.restype = ctypes.py_object
                lib.launch = lib.gparity_oprec_launch_functions(torch.Tensor)
            except AttributeError:  # a library before them
                pass
        lib.launch_hook = None
        if lib.launch is not None:
            try:  # a library before the builtin launch hook: the Python hook alone
                lib.gparity_oprec_launch_hook_functions.argtypes = []
                lib.gparity_oprec_launch_hook_functions.restype = ctypes.py_object
                lib.launch_hook = lib.gparity_oprec_launch_hook_functions()
            except AttributeError:
                pass
        try:  # a library before the compile callbacks: what compiling runs is recorded
            lib.gparity_oprec_compiling.argtypes = [ctypes.c_int]
            lib.gparity_oprec_compiling.restype = None
        except AttributeError:
            pass
        try:  # a library before batches of hashes: none
            lib.gparity_oprec_batch.argtypes = [ctypes.c_int]
            lib.gparity_oprec_batch.restype = None
            lib.batches = True
        except AttributeError:
            lib.batches = False
    except (OSError, AttributeError, TypeError):  # an older library, or none loaded from a path
        lib = None
    _cpp_lib.append(lib)
    return lib


def _collective_group(op, args, kwargs):
    """The process group a collective runs on: {"group": name, "group_ranks": [global ranks]}.
    The world is "default"; another group is named as c10d names it on every rank (new_group is
    collective, so the names agree), else "ranks:2,3". {"group": name} alone when its members
    cannot be told (read as the ranks whose records name it); {"group": "default"} when not even
    the group can (read as all ranks, as records written before groups were)."""
    try:
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d
    except ImportError:  # pragma: no cover
        return {"group": "default"}
    name = None
    try:
        if not dist.is_available() or not dist.is_initialized():
            return {"group": "default"}
        pg = None
        if op.startswith("_c10d_functional::"):
            # Functional collectives take the group's name (the last string argument).
            name = kwargs.get("group_name")
            if name is None:
                name = next((a for a in reversed(args) if isinstance(a, str)), None)
            resolve = getattr(c10d, "_resolve_process_group", None)
            if name is not None and resolve is not None:
                pg = resolve(name)
        elif op.startswith("c10d_functional::"):
            # The legacy functional collectives list their ranks: (..., tag, ranks, group_size).
            for a in args:
                if isinstance(a, (list, tuple)) and a and all(isinstance(r, int) for r in a):
                    ranks = sorted(a)
                    return {"group": "ranks:" + ",".join(map(str, ranks)), "group_ranks": ranks}
        else:
            pg = _process_group_arg(args, dist)
        if pg is None:
            return {"group": str(name) if name else "default"}
        if hasattr(dist, "get_process_group_ranks"):
            ranks = sorted(dist.get_process_group_ranks(pg))
        else:  # pragma: no cover
            ranks = sorted(c10d._pg_group_ranks[pg])
        if pg is c10d._get_default_group():
            return {"group": "default", "group_ranks": ranks}
        if name is None:
            name = getattr(pg, "group_name", None) or getattr(c10d, "_pg_names", {}).get(pg)
        return {"group": str(name) if name else "ranks:" + ",".join(map(str, ranks)), "group_ranks": ranks}
    except Exception:  # a group this torch cannot resolve: named if we can, never a failed step
        return {"group": str(name) if name else "default"}


def _process_group_arg(args, dist):
    """The Python ProcessGroup a c10d op was given. Torch 2.x unboxes the ScriptObject the op
    receives (ProcessGroup.unbox); torch 1.13 cannot, so the group is read from the caller in
    distributed_c10d.py (`group.allreduce(...)`, `default_pg.allreduce(...)`): the one
    ProcessGroup among its locals."""
    for a in _flat_leaves(args):
        if isinstance(a, dist.ProcessGroup):
            return a
        if type(a).__name__ == "ScriptObject" and hasattr(dist.ProcessGroup, "unbox"):
            try:
                return dist.ProcessGroup.unbox(a)
            except Exception:  # not a ProcessGroup (a ReduceOp, a Work)
                continue
    f = sys._getframe(1)
    for _ in range(16):
        if f is None:
            break
        if f.f_code.co_filename.endswith("distributed_c10d.py"):
            local = f.f_locals
            group = local.get("group")
            if isinstance(group, dist.ProcessGroup):
                return group
            found = {id(v): v for v in local.values() if isinstance(v, dist.ProcessGroup)}
            return next(iter(found.values())) if len(found) == 1 else None
        f = f.f_back
    return None


def _flat_leaves(obj):
    if tree_flatten is not None:
        return tree_flatten(obj)[0]
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]  # pragma: no cover


class _ManifestOnly:
    """The fields Recorder._write_manifest reads, for an op-record run."""

    op_records = True
    steps = None

    def __init__(self, run_dir, rank, world_size):
        from . import _gather_rank_infos, _node_rank  # late: gparity imports this module
        import socket

        self.run_dir, self.world_size = run_dir, world_size
        local_rank = int(os.environ.get("LOCAL_RANK", rank))
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
        own = {"rank": rank, "local_rank": local_rank, "host": socket.gethostname(), "device": device}
        if _node_rank() >= 0:
            own["node"] = _node_rank()
        self._rank_infos = _gather_rank_infos(own, world_size) or [
            own if r == rank else {"rank": r, "local_rank": r, "host": own["host"],
                                   "device": f"cuda:{r}" if torch.cuda.is_available() else "cpu"}
            for r in range(world_size)]


class _StepScope:
    def __init__(self, recorder, step):
        self._rec, self._step, self._mode = recorder, step, None

    def __enter__(self):
        self._rec._begin(self._step)
        if self._rec._cpp is None:
            self._mode = _Mode(self._rec)
            self._mode.__enter__()
        return self._rec

    def __exit__(self, *exc):
        if self._mode is not None:
            self._mode.__exit__(*exc)
        self._rec._end()
        return False


_recorders = {}


def record_ops(run_dir, step, model=None, rank=None, world_size=None, hashes="shard", backend="auto",
               shard_spec=2):
    """`with gparity.record_ops(run_dir, step=N, model=model):` records one step's ops. The first
    call for a run directory in this process starts its rank file; later steps append to it.
    backend: "auto" (the C++ recorder when libgparity_torchops has it), "cpp" or "python"."""
    key = os.path.abspath(run_dir)
    rec = _recorders.get(key)
    if rec is None:
        rec = OpRecorder(run_dir, model=model, rank=rank, world_size=world_size, hashes=hashes, backend=backend,
                         shard_spec=shard_spec)
        _recorders[key] = rec
    return rec.record(step)
