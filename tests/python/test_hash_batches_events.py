"""When python/gparity opens and closes the C++ recorder's batches of hashes (kernel_launches.py,
_Batches; docs/ops.md, "Hashes in batches"): sys.monitoring events on Inductor's generated `call`,
Python 3.12+. Runs without torch (the GPU machine's Python is 3.12, Debian's with torch 1.13 is
3.11): _Batches and _only_triton_kernels are taken from kernel_launches.py's source by name and run
against a generated-looking module and a library stand-in that logs gparity_oprec_batch's calls.
Run by ctest with a Python 3.12+ where the machine has one (tests/python/CMakeLists.txt)."""

import ast
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "gparity", "kernel_launches.py")

MODULE = '''import sys
# triton_poi_fused_0 = async_compile.triton('triton_poi_fused_0', "...")
def call(args):
    launch(sys._getframe(0))   # the launcher hook's caller is `call`
    if args == "raise":
        raise ValueError(args)
    return args
'''


def load():
    """_Batches (with _ByCode) and _only_triton_kernels, defined from kernel_launches.py's own source."""
    with open(SOURCE, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    ns = {"sys": sys, "_is_library": lambda filename: False}
    names = ("_ByCode", "_Batches", "_only_triton_kernels")
    nodes = [n for n in tree.body if getattr(n, "name", None) in names]
    assert len(nodes) == len(names), "kernel_launches.py lacks one of " + ", ".join(names)
    exec(compile(ast.Module(nodes, []), SOURCE, "exec"), ns)  # noqa: S102  (our own source)
    return ns["_Batches"]


class Lib:
    def __init__(self):
        self.calls = []

    def gparity_oprec_batch(self, enter):
        self.calls.append(enter)


@unittest.skipUnless(hasattr(sys, "monitoring"), "sys.monitoring is Python 3.12+")
class BatchEvents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.batches = load()  # once: it takes a sys.monitoring tool id for the process

    def setUp(self):
        self.batches._codes = type(self.batches._codes)()  # every test from no `call` seen
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.addCleanup(self.batches.detach)

    def module(self, name, text):
        path = os.path.join(self.tmp.name, name + ".py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        ns = {"launch": self.batches.watch}
        exec(compile(text, path, "exec"), ns)  # noqa: S102  (the test's own text)
        return ns["call"]

    def test_a_watched_call_opens_a_batch_and_closes_it_on_return_and_on_raise(self):
        call = self.module("gen", MODULE)
        lib = Lib()
        self.batches.attach(lib)
        call(1)  # watched from its first launch on: this run's end closes nothing that opened
        self.assertEqual([c for c in lib.calls if c == 1], [])
        lib.calls.clear()
        call(2)
        self.assertEqual(lib.calls, [1, 0])
        lib.calls.clear()
        with self.assertRaises(ValueError):
            call("raise")
        self.assertEqual(lib.calls, [1, 0])
        lib.calls.clear()

        def other():
            raise KeyError("not generated code")
        with self.assertRaises(KeyError):
            other()
        self.assertEqual(lib.calls, [])

    def test_no_events_outside_a_recorded_step(self):
        call = self.module("gen", MODULE)
        lib = Lib()
        self.batches.attach(lib)
        call(1)
        self.batches.detach()
        lib.calls.clear()
        call(2)
        with self.assertRaises(ValueError):
            call("raise")
        self.assertEqual(lib.calls, [])
        self.batches.attach(lib)
        call(3)
        self.assertEqual(lib.calls, [1, 0])

    def test_a_module_with_kernels_of_another_kind_gets_no_batches(self):
        call = self.module("cpp", MODULE + "# cpp_fused_1 = async_compile.cpp_pybinding(['float*'], '...')\n")
        lib = Lib()
        self.batches.attach(lib)
        call(1)
        lib.calls.clear()
        call(2)
        self.assertEqual(lib.calls, [])


if __name__ == "__main__":
    unittest.main()
