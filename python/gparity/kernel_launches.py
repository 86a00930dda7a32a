"""Inductor's Triton launches seen by gparity's op recorder (issue 32; docs/ops.md, "Kernel
records", "Hashes in batches"): the launcher hook (_KernelHook) that hands each launch to the
recorder of the step in flight, what a kernel's arguments are (_KernelInfo: names, roles read from
its source, the call site and its launch config), and the batches of hashes the C++ recorder
keeps while Inductor's generated `call` runs (_Batches, sys.monitoring on Python 3.12+).
op_recorder.py records what they find."""

import sys
import weakref

import torch

from ._source import _code_line, _dumps, _is_library


def _kernel_site():
    """torch.ops.gparity.oprec_kernel_site; `_kernel_site.takes_positions`: whether the library
    takes the tensors' positions (one before the launch builtins does not)."""
    op = torch.ops.gparity.oprec_kernel_site.default
    if _kernel_site.takes_positions is None:
        _kernel_site.takes_positions = any(a.name == "positions" for a in op._schema.arguments)
    return op


_kernel_site.takes_positions = None


# ---- Inductor's Triton launches (issue 32) ------------------------------------------------------
# Triton kernels do not pass the dispatcher: neither a dispatch mode nor RecordFunction sees them.
# Every launch of an Inductor kernel goes through CachingAutotuner.run (torch._inductor.runtime.
# triton_heuristics; torch._inductor.triton_heuristics before 2.3), as DebugMode's [triton]
# records (2.10+) do: the hook wraps it, once, and hands launches to the recorder of the step in
# flight (nothing else is done while no step is recorded).

_ROLE_PREFIXES = (("in_out_ptr", "in_out"), ("out_ptr", "out"), ("in_ptr", "in"))


def _stored_only(src, names):
    """The in_out_ptr arguments the kernel's source only stores to: each use of the name in its
    body is `tl.store(name ...)`. Inductor names in_out a buffer a fused kernel writes, then
    overwrites (a persistent layer norm's rstd over its variance): its old value is no input, and
    is whatever the allocator's block held (Inductor allocates outside the dispatcher, so no record
    says so; an autotuner's benchmark runs leave their results there). Such an argument is recorded
    with role "out": not hashed before the launch, not read (docs/ops.md, "Kernel records"). Any
    other use (tl.load, a block pointer, pointer arithmetic kept in a variable) keeps it read."""
    import re
    start = src.find("def ")
    colon = src.find(":\n", start) if start >= 0 else -1
    body = src[colon + 2:] if colon >= 0 else ""
    out = set()
    for n in names:
        if not n.startswith("in_out_ptr"):
            continue
        uses = len(re.findall(r"\b%s\b" % re.escape(n), body))
        stores = len(re.findall(r"tl\.store\(\s*%s\b" % re.escape(n), body))
        if uses and uses == stores:
            out.add(n)
    return frozenset(out)


class _KernelInfo:
    """What one kernel (one CachingAutotuner) says of itself, computed once."""

    def __init__(self, autotuner):
        fn = getattr(autotuner, "fn", None)
        self.name = getattr(fn, "__name__", None) or type(autotuner).__name__
        names = list(getattr(fn, "arg_names", None) or ())
        if not names:
            names = [k for k in (getattr(autotuner, "triton_meta", None) or {}).get("signature", {})
                     if isinstance(k, str)]
        self._names = names
        meta = getattr(autotuner, "inductor_meta", None) or {}
        self._mutated = set(getattr(autotuner, "mutated_arg_names", None) or meta.get("mutated_arg_names", ()) or ())
        src = getattr(fn, "src", None)
        self.source_hash = None
        self._stored_only = _stored_only(src, names) if isinstance(src, str) else frozenset()
        if isinstance(src, str):
            import hashlib
            # Inductor renumbers kernels: the kernel's own name is not its code.
            self.source_hash = hashlib.sha256(src.replace(self.name, "<kernel>").encode("utf-8")).hexdigest()[:16]
        self._sites = {}
        self._signatures = {}
        self._fields = {}
        self._site_ids = {}
        self._known_sites = _ByCode()  # the caller's code -> {bytecode offset: (launcher, site id)}

    def signature(self, args):
        """(names, roles, written, positions) of a launch's tensor arguments: written = indices
        among them of those the kernel writes, positions = theirs among the arguments. Computed
        once per pattern of tensor positions."""
        key = tuple(i for i, a in enumerate(args) if isinstance(a, torch.Tensor))
        sig = self._signatures.get(key)
        if sig is None:
            names = [self.arg_name(i) for i in key]
            roles = [self.role(n) for n in names]
            sig = (names, roles, [k for k, r in enumerate(roles) if r != "in"], list(key))
            self._signatures[key] = sig
        return sig

    def arg_name(self, i):
        return self._names[i] if i < len(self._names) else f"arg{i}"

    def role(self, name):
        if name in self._stored_only:
            return "out"
        for prefix, role in _ROLE_PREFIXES:
            if name.startswith(prefix):
                return role
        # A kernel that is not Inductor's (a user's @triton.jit kernel): read, and written when
        # the launcher says it mutates the argument.
        return "in_out" if name in self._mutated else "unnamed"

    def _site(self, caller):
        key = (caller.f_code.co_filename, caller.f_lineno)
        site = self._sites.get(key)
        if site is None:
            site = {"file": key[0], "line": key[1], "code": _code_line(*key)}
            # Inductor's output code comments a launch with its debug handle (2.9+):
            # `# [Provenance debug handles] triton_poi_fused_gelu_view_2:7`, a line or two above it.
            for back in range(1, 4):
                text = _code_line(key[0], key[1] - back)
                mark = "# [Provenance debug handles] "
                if text.startswith(mark):
                    site["handle"] = text[len(mark):].strip()
                    break
            self._sites[key] = site
        return site

    def site_id(self, autotuner, caller, args):
        """The C++ recorder's id of this call site (torch.ops.gparity.oprec_kernel_site: the
        kernel's name, record fields and signature), registered once per call site, launcher and
        signature (each launch while the autotuner has not chosen a config registers anew)."""
        names, roles, _, positions = self.signature(args)
        key = self._fields_key(autotuner, caller) + (tuple(positions),)
        site = self._site_ids.get(key)
        if site is None:
            site = _kernel_site()(self.name, self.fields(autotuner, caller)[1], names, roles,
                                  *((positions,) if _kernel_site.takes_positions else ()))
            if key[2] is not None:
                self._site_ids[key] = site
        if key[2] is not None:
            sites = self._known_sites.get(caller.f_code)
            if sites is None:
                sites = self._known_sites.set(caller.f_code, {})
            sites[caller.f_lasti] = (autotuner.launchers[0], site)
        return site

    def known_site(self, autotuner, caller):
        """The site id last registered at the caller's line for the launcher the autotuner
        launches with now, or None (none yet, or still autotuning). The C++ recorder checks
        the launch's signature against it."""
        # By the call's bytecode offset: f_lineno walks the line table of Inductor's `call`
        # (hundreds of lines; tens of us a launch).
        sites = self._known_sites.get(caller.f_code)
        known = sites.get(caller.f_lasti) if sites is not None else None
        if known is None:
            return None
        launchers = getattr(autotuner, "launchers", None) or ()
        return known[1] if len(launchers) == 1 and launchers[0] is known[0] else None

    @staticmethod
    def _fields_key(autotuner, caller):
        launchers = getattr(autotuner, "launchers", None) or ()
        return caller.f_code.co_filename, caller.f_lineno, id(launchers[0]) if len(launchers) == 1 else None

    def fields(self, autotuner, caller):
        """The record's "kernel" object and its JSON text, made once per call site and launcher
        (the config is the launcher's, fixed once autotuned; not kept before that)."""
        key = self._fields_key(autotuner, caller)
        made = self._fields.get(key)
        if made is None:
            out = {"site": self._site(caller)}
            if self.source_hash:
                out["source_hash"] = self.source_hash
            config = _launch_config(autotuner)
            if config:
                out["config"] = config
            made = (out, _dumps(out))
            if key[2] is not None:
                self._fields[key] = made
        return made


def _launch_config(autotuner):
    """The config the autotuner launched with, as Inductor's triton_kernel_info writes one:
    "XBLOCK=8, num_warps=2, num_stages=1"; None while it has not chosen one."""
    launchers = getattr(autotuner, "launchers", None) or ()
    if len(launchers) != 1:
        return None
    config = getattr(launchers[0], "config", None)
    if config is None:
        return None
    parts = [f"{k}={_dumps(v)}" for k, v in (getattr(config, "kwargs", None) or {}).items()]
    for k in ("num_warps", "num_stages"):
        v = getattr(config, k, None)
        if v is not None:
            parts.append(f"{k}={_dumps(v)}")
    return ", ".join(parts)


_kernel_infos = weakref.WeakKeyDictionary()


def _kernel_info(autotuner):
    try:
        info = _kernel_infos.get(autotuner)
    except TypeError:  # pragma: no cover  (not weakly referenceable)
        info = None
    if info is None:
        info = _KernelInfo(autotuner)
        try:
            _kernel_infos[autotuner] = info
        except TypeError:  # pragma: no cover
            pass
    return info


class _KernelHook:
    """Wraps CachingAutotuner.run once per process; launches go to the recorder in flight.

    With the C++ recorder's launch hook (op_recorder_launches.cpp; a library with Python frames)
    the wrapper is that builtin, bound as the class's method: it calls the launcher alone while no
    step is recorded, records a launch at a call site it knows itself, and hands any other launch
    to the Python hook here (`gparity_run`, made by _wrap), which records it and tells the builtin
    of the site (OpRecorder._launch). Without it the Python hook is the wrapper. `fast` False (a diagnostic:
    bench/ops_recorder_host_parts.py) sends every launch through the Python hook."""

    _owner = None
    _wrapped = set()
    fast = True

    @classmethod
    def attach(cls, recorder):
        cls._owner = recorder
        for name in ("torch._inductor.runtime.triton_heuristics", "torch._inductor.triton_heuristics"):
            module = sys.modules.get(name)  # not imported here: no Inductor in the process, no kernels
            tuner = getattr(module, "CachingAutotuner", None) if module is not None else None
            if tuner is None or tuner in cls._wrapped or not hasattr(tuner, "run"):
                continue
            cls._wrap(tuner)
        cls._set_mode(recorder)

    @classmethod
    def detach(cls, recorder):
        if cls._owner is recorder:
            cls._owner = None
            cls._set_mode(None)

    @classmethod
    def _set_mode(cls, owner):
        """What the builtin hook does (op_recorder_launches.cpp, HookMode): 0 launches alone, 1 the
        Python hook, 2 known sites recorded there, 3 the same while `call`s are batched."""
        hook = _launch_hook()
        if hook is None:
            return
        lib = getattr(owner, "_cpp", None)
        if owner is None:
            mode = 0
        elif cls.fast and lib is not None and getattr(lib, "launch", None) is not None:
            mode = 3 if getattr(owner, "batch_hashes", False) else 2
        else:
            mode = 1
        hook.set_mode(mode)

    @classmethod
    def _wrap(cls, tuner):
        if tuner in cls._wrapped:
            return
        run = tuner.run

        def gparity_run(autotuner, *args, **kwargs):
            owner = cls._owner
            if owner is None:
                return run(autotuner, *args, **kwargs)
            return owner._launch(run, autotuner, args, kwargs, sys._getframe(1))

        gparity_run.__wrapped__ = run
        gparity_run.__doc__ = run.__doc__
        hook = _launch_hook()
        # The builtin calls gparity_run from C: its frame's caller is the launch's caller still.
        tuner.run = hook.make(run, gparity_run) if hook is not None else gparity_run
        cls._wrapped.add(tuner)


class _LaunchHookFunctions:
    __slots__ = ("make", "set_mode", "remember")

    def __init__(self, make, set_mode, remember):
        self.make, self.set_mode, self.remember = make, set_mode, remember


_launch_hooks = []


def _launch_hook():
    """The C++ recorder's launch hook builtins (make, set_mode, remember), or None (a library
    without them, or none)."""
    if not _launch_hooks:
        from .op_recorder import _cpp_library
        try:
            lib = _cpp_library()
        except OSError:  # no libgparity_torchops to load: the Python hook alone
            lib = None
        functions = getattr(lib, "launch_hook", None) if lib is not None else None
        _launch_hooks.append(_LaunchHookFunctions(*functions) if functions else None)
    return _launch_hooks[0]


class _ByCode:
    """A dict keyed by code objects through their ids: hashing a code object hashes all its
    constants and names (tens of us for Inductor's generated `call`, at every launch). Each entry
    holds its code object, so no other object can take its id while it is here."""

    __slots__ = ("_entries",)

    def __init__(self):
        self._entries = {}  # id(code) -> (code, value)

    def get(self, code):
        entry = self._entries.get(id(code))
        return None if entry is None else entry[1]

    def set(self, code, value):
        self._entries[id(code)] = (code, value)
        return value

    def items(self):
        """(code, value) pairs."""
        return self._entries.values()


class _Batches:
    """Batches of hashes (the C++ recorder's, op_recorder_state.hpp): one opens when Inductor's
    generated `call` starts and closes when it returns or raises, through sys.monitoring's local
    events on that function's code (Python 3.12+; none while no step is recorded). Inside it the
    only writes to device memory are kernel launches (the launcher hook) and operator calls
    (RecordFunction), both seen before they run: a hash asked for there waits until something is
    about to write what it reads, and goes with the others in one launch. A module whose source
    compiles kernels of another kind than Triton (C++, CUDA or ROCm templates: launched without
    the hook) gets no batch. A `call` is watched from its first launch in a recorded step on: its
    next run is batched."""

    _tool = None        # sys.monitoring tool id; -1: none free
    _lib = None         # the C++ recorder while a step is recorded, else None
    _codes = _ByCode()  # the `call`s seen -> batched (bool)
    _allowed = frozenset(("triton", "wait", "multi_kernel"))

    @staticmethod
    def supported():
        return hasattr(sys, "monitoring")

    @classmethod
    def _events(cls):
        e = sys.monitoring.events
        return e.PY_START | e.PY_RETURN  # local events; PY_UNWIND is global only (set in attach)

    @classmethod
    def _take_tool(cls):
        if cls._tool is not None:
            return cls._tool >= 0
        mon = sys.monitoring
        cls._tool = -1
        for tool in (3, 4):  # neither the debugger's, coverage's, the profiler's nor the optimizer's
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, "gparity")
                cls._tool = tool
                break
        if cls._tool < 0:
            return False

        def start(code, offset):
            lib = cls._lib
            if lib is not None:
                lib.gparity_oprec_batch(1)

        def stop(code, offset, value):
            lib = cls._lib
            if lib is not None:
                lib.gparity_oprec_batch(0)

        def unwind(code, offset, exc):  # every frame an exception leaves, while a step is recorded
            lib = cls._lib
            if lib is not None and cls._batched(code):
                lib.gparity_oprec_batch(0)

        e = mon.events
        mon.register_callback(cls._tool, e.PY_START, start)
        mon.register_callback(cls._tool, e.PY_RETURN, stop)
        mon.register_callback(cls._tool, e.PY_UNWIND, unwind)
        return True

    @classmethod
    def attach(cls, lib):
        cls._lib = lib
        if not cls._take_tool():
            return
        sys.monitoring.set_events(cls._tool, sys.monitoring.events.PY_UNWIND)
        for code, batched in cls._codes.items():
            if batched:
                sys.monitoring.set_local_events(cls._tool, code, cls._events())

    @classmethod
    def detach(cls):
        if cls._tool is not None and cls._tool >= 0:
            sys.monitoring.set_events(cls._tool, 0)
            for code, batched in cls._codes.items():
                if batched:
                    sys.monitoring.set_local_events(cls._tool, code, 0)
        cls._lib = None

    @classmethod
    def _watched(cls, code):
        return cls._codes.get(code) is not None

    @classmethod
    def _batched(cls, code):
        return bool(cls._codes.get(code))

    @classmethod
    def watch(cls, caller):
        """Watches the generated `call` on the stack at a launch (`caller`: the launcher's caller)."""
        if cls._watched(caller.f_code):  # the common case: `call` launches the kernel itself
            return
        f, depth = caller, 0
        while f is not None and depth < 8 and not (f.f_code.co_name == "call" and
                                                  not _is_library(f.f_code.co_filename)):
            f, depth = f.f_back, depth + 1
        if f is None or depth >= 8 or cls._watched(f.f_code):
            return
        code = f.f_code
        batched = _only_triton_kernels(code.co_filename) and cls._take_tool()
        cls._codes.set(code, batched)
        if batched and cls._lib is not None:
            sys.monitoring.set_local_events(cls._tool, code, cls._events())


def _only_triton_kernels(filename):
    """Whether Inductor's generated module in `filename` compiles kernels of no other kind than
    Triton (async_compile.triton, .multi_kernel, .wait); False when it cannot be read."""
    import re
    try:
        with open(filename, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return False
    kinds = set(re.findall(r"\basync_compile\.(\w+)\(", text))
    return "def call(" in text and kinds <= _Batches._allowed
