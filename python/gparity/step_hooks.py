"""What gparity's op recorder sets in torch around a recorded step, beside the launcher hook
(kernel_launches.py): the global module hooks that give forward records their module path
(_ModuleHooks) and Dynamo's compile callbacks that hold records back while a model compiles
inside a step (_Compiling). Both keep a model compiled in a recorded step the program it is
unrecorded, and its records the program's (docs/ops.md, "Compiled steps")."""

import sys

import torch

# Dynamo folds these to True while it traces (torch.compiler.is_compiling: 2.3+).
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or \
    getattr(getattr(torch, "_dynamo", None), "is_compiling", None) or (lambda: False)


class _ModuleHooks:
    """The module path of forward records: global forward pre- and post-hooks while a step is
    recorded, the same two functions under the same two keys every step, handing each call to the
    recorder of the step. Dynamo traces global hooks into what it compiles (a model compiled in
    a recorded step): there they do nothing, for a call into the recorder (ctypes, a dispatch
    mode's list) would break the graph at every module and the process would keep the broken
    graphs; and releases that guard on the hooks' keys (set(keys) == set()) see the same keys at
    every recorded step, so a compiled region is compiled again once at most, not at every step
    (register_module_forward_hook's keys count up). docs/ops.md, "Compiled steps"."""

    _KEY = -0x67706172  # never a RemovableHandle's id (those count up from 0)
    _enter = None
    _leave = None

    @staticmethod
    def _pre(module, inputs):
        if _is_compiling():
            return
        enter = _ModuleHooks._enter
        if enter is not None:
            enter(module, inputs)

    @staticmethod
    def _post(module, inputs, output):
        if _is_compiling():
            return
        leave = _ModuleHooks._leave
        if leave is not None:
            leave(module, inputs, output)

    @classmethod
    def attach(cls, enter, leave):
        cls._enter, cls._leave = enter, leave
        m = torch.nn.modules.module
        m._global_forward_pre_hooks[cls._KEY] = cls._pre
        m._global_forward_hooks[cls._KEY] = cls._post

    @classmethod
    def detach(cls):
        m = torch.nn.modules.module
        m._global_forward_pre_hooks.pop(cls._KEY, None)
        m._global_forward_hooks.pop(cls._KEY, None)
        cls._enter = cls._leave = None


class _Compiling:
    """Compilation inside a recorded step (a model compiled at its first call, a backward compiled
    at its first run): what Dynamo and Inductor run then is the compiler's work (tracing on fake
    tensors, benchmark buffers, autotuning), not the step's program, and is not recorded
    (torch 2.11, an H200: a model compiled in its first recorded step gave 2,294 op records there
    against 50 a step after; docs/ops.md, "Compiled steps"). Dynamo's compile callbacks
    (torch._dynamo.callback) say when, from 2.6 on: 2.3 to 2.5 have them but may leave out the end
    (pytorch/pytorch#141323), which would hold every later record back; those releases, and older
    ones, record what compiling runs. Each step starts with none open (an end left out costs that
    step at most). CUDA graph recording (reduce-overhead) is the step's program, captured: recorded
    as before."""

    depth = 0         # open compilations that hold records back (the Python backend reads it)
    _blocked = []     # per open callback: whether it held records back
    _registered = False
    _lib = None       # the C++ recorder (libgparity_torchops through ctypes), once a step used it
    _compiles = frozenset(("DYNAMO", "LAZY_BACKWARD", "TRITON_AUTOTUNING"))

    @staticmethod
    def callbacks_complete(version):
        """Whether torch `version` ("2.6.0+cu126") calls the end callback of every compile."""
        import re
        m = re.match(r"(\d+)\.(\d+)", str(version))
        return bool(m) and (int(m.group(1)), int(m.group(2))) >= (2, 6)

    @classmethod
    def register(cls, lib):
        """Once a process, when Dynamo is loaded (torch.compile imports it); `lib`: the C++
        recorder a step begins with (None for the Python backend), told of every compile."""
        if lib is not None:
            cls._lib = lib
        if cls._registered or "torch._dynamo" not in sys.modules or \
                not cls.callbacks_complete(torch.__version__):
            return
        cls._registered = True
        try:
            from torch._dynamo.callback import callback_handler
        except ImportError:  # pragma: no cover  (a release before them)
            return
        callback_handler.register_start_callback(cls._start)
        callback_handler.register_end_callback(cls._end)

    @classmethod
    def _start(cls, *args):
        # Releases before CallbackArgs call with none; later ones say what triggered it.
        trigger = getattr(getattr(args[0], "callback_trigger", None), "name", None) if args else None
        blocks = trigger is None or trigger in cls._compiles
        cls._blocked.append(blocks)
        if blocks:
            cls._set(1)

    @classmethod
    def _end(cls, *args):
        if cls._blocked and cls._blocked.pop():
            cls._set(0)

    @classmethod
    def reset(cls):
        """At a step's start: no compilation is open (one whose end never came holds nothing back)."""
        if cls.depth or cls._blocked:
            cls._blocked.clear()
            while cls.depth:
                cls._set(0)

    @classmethod
    def _set(cls, enter):
        cls.depth = cls.depth + 1 if enter else max(0, cls.depth - 1)
        lib = cls._lib
        if lib is not None and hasattr(lib, "gparity_oprec_compiling"):
            lib.gparity_oprec_compiling(1 if enter else 0)
