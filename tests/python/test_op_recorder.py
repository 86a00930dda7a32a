"""The op recorder (python/gparity/op_recorder.py) end to end under Debian's python3-torch 1.13:
two ranks over Gloo (tests/python/op_recorder_train.py) train a small pre-norm MLP block eager
and compiled with aot_autograd, recording every op, and `gparity compare` judges them:
  (a) eager vs compiled: op-level parity on both ranks;
  (b) a wrong gelu decomposition on every rank: aten::gelu of module mlp at its source line,
      forward, step 1, origin, on both ranks (its compiled counterparts the decomposition's ops);
  (c) the wrong decomposition on rank 1 only: rank 1 origin at aten::gelu; rank 0 received
      through the gradient all-reduce from rank 1, whose origin is that gelu, and no origin at
      all on rank 0 (its other all-reduces are received too);
  (d) 4 ranks on a 2x2 mesh (tests/python/op_recorder_mesh.py, ~12 s): each all-reduce's record
      names its group and members, and the senders of a received divergence are the members of
      that collective's group (rank 3 origin; rank 2 through TP {2, 3}; ranks 0 and 1 through DP).

Each case is asserted of the runs of both recorder backends (backend="python": the
TorchDispatchMode; backend="cpp": libgparity_torchops' RecordFunction callbacks), and the two
backends' records of the same eager training are compared with each other: parity.

Run by ctest with /usr/bin/python3; GPARITY_TORCHOPS and GPARITY_EXE point at the build.
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "op_recorder_train.py")
EXE = os.environ["GPARITY_EXE"]


def gelu_line():
    with open(TRAIN, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if "# GELU LINE" in line:
                return n
    raise AssertionError("no GELU LINE marker in " + TRAIN)


VARIANTS = ("eager", "compiled", "wrong_all", "wrong_rank1")
_trained = []


def trained():
    """The training of both backends, once for every test class: (temporary directory, OUT)."""
    if not _trained:
        tmp = tempfile.TemporaryDirectory()
        out = tmp.name
        store = os.path.join(out, "store")
        procs = [subprocess.Popen([sys.executable, TRAIN, out, store, str(r), "2", "python,cpp"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in (0, 1)]
        for p in procs:
            log, _ = p.communicate(timeout=240)
            if p.returncode != 0:
                raise AssertionError("training rank failed:\n" + log)
        _trained.append(tmp)
    return _trained[0].name


def tearDownModule():
    for tmp in _trained:
        tmp.cleanup()


def compare_runs(baseline, candidate):
    r = subprocess.run([EXE, "compare", baseline, candidate, "--json"], capture_output=True, text=True)
    return r.returncode, json.loads(r.stdout), r.stdout + r.stderr


def records(run):
    recs = []
    for rank in (0, 1):
        with open(os.path.join(run, f"rank-{rank}.jsonl"), encoding="utf-8") as f:
            recs.append([json.loads(line) for line in f])
    return recs


class _Cases:
    """The three cases, on the runs of `backend`."""
    backend = None

    @classmethod
    def setUpClass(cls):
        out = trained()
        cls.tmp = _trained[0]
        cls.runs = {v: os.path.join(out, cls.backend, v) for v in VARIANTS}
        cls.steps = {v: os.path.join(out, "steps_" + v) for v in VARIANTS}

    def compare(self, candidate):
        return compare_runs(self.runs["eager"], self.runs[candidate])

    def first(self, report):
        return {r["rank"]: r for r in report["result"]["ranks"]}

    def assert_gelu_origin(self, rank_result, text):
        fd = rank_result["first_divergence"]
        self.assertEqual(fd["op"], "aten::gelu", text)
        self.assertEqual(fd["cause"], "origin", text)
        self.assertEqual(fd["step"], 1, text)
        self.assertEqual(fd["eager"]["module"], "mlp", text)
        self.assertEqual(fd["eager"]["phase"], "forward", text)
        self.assertEqual(os.path.basename(fd["eager"]["source"]["file"]), "op_recorder_train.py", text)
        self.assertEqual(fd["eager"]["source"]["line"], gelu_line(), text)

    def test_a_parity_of_eager_and_aot_autograd(self):
        code, rep, text = self.compare("compiled")
        self.assertEqual(code, 0, text)
        self.assertEqual(rep["result"]["decided_by"], "shard_v2")
        ranks = self.first(rep)
        self.assertEqual(sorted(ranks), [0, 1])
        for r in ranks.values():
            self.assertTrue(r["parity"], text)
            self.assertEqual(r["steps"], 2)
        self.assertGreater(rep["result"]["evidence"]["compared"], 100)

    def test_b_wrong_decomposition_on_every_rank_names_the_op_module_and_line(self):
        code, rep, text = self.compare("wrong_all")
        self.assertEqual(code, 1, text)
        ranks = self.first(rep)
        for rank in (0, 1):
            self.assert_gelu_origin(ranks[rank], text)
        divs = [f for f in rep["findings"] if f["kind"] == "op_divergence" and f["values"]["step"] == 1]
        self.assertEqual(len(divs), 2, text)
        for f in divs:
            ops = {c["op"] for c in f["values"]["compiled"]}
            self.assertEqual(f["values"]["paired_by"], "decomposition", text)
            self.assertTrue({"aten::tanh", "aten::mul.Tensor"} <= ops, ops)
            self.assertEqual(f["values"]["decided_by"], "shard_v2")
        # Step 2 starts from the weights step 1 updated: it follows.
        follows = [f for f in rep["findings"] if f["kind"] == "op_divergence_follows"]
        self.assertEqual(sorted(f["values"]["rank"] for f in follows), [0, 1], text)
        self.assertTrue(all(f["values"]["follows_step"] == 1 for f in follows))

    def test_c_wrong_decomposition_on_rank_1_is_received_by_rank_0(self):
        code, rep, text = self.compare("wrong_rank1")
        self.assertEqual(code, 1, text)
        ranks = self.first(rep)
        self.assert_gelu_origin(ranks[1], text)
        fd0 = ranks[0]["first_divergence"]
        self.assertEqual(fd0["op"], "c10d::allreduce_", text)
        self.assertEqual(fd0["cause"], "received", text)
        self.assertEqual(fd0["from_ranks"], [1], text)
        self.assertEqual(fd0["eager"]["phase"], "optimizer", text)
        self.assertEqual(fd0["origin"]["rank"], 1, text)
        self.assertEqual(fd0["origin"]["op"], "aten::gelu", text)
        self.assertTrue(fd0["origin"]["source"].endswith(f"op_recorder_train.py:{gelu_line()}"), fd0)
        # Everything rank 0 computed before the all-reduce agrees with the compiled run.
        r0 = [f for f in rep["findings"] if f["kind"] == "op_divergence" and f["values"]["rank"] == 0][0]
        self.assertEqual([i["state"] for i in r0["values"]["inputs"]], ["equal"], text)
        self.assertEqual(r0["values"]["causality"]["group"], "default")
        self.assertIn("received through c10d::allreduce_ from rank 1", r0["message"])
        # Rank 0 has no origin at all: its other all-reduces of the step are received too (their
        # local inputs are equal, rank 1's are not), and what reads them is propagated.
        self.assertEqual(r0["values"]["other_origin_total"], 0, text)
        self.assertEqual(r0["values"]["other_origins"], [], text)
        self.assertGreater(r0["values"]["other_received_total"], 0, text)
        self.assertTrue(all(o["op"] == "c10d::allreduce_" for o in r0["values"]["other_received"]), text)
        for f in rep["findings"]:
            if f["kind"].startswith("op_divergence") and f["values"]["rank"] == 0:
                self.assertNotEqual(f["values"].get("cause"), "origin", f["message"])
                self.assertEqual(f["values"].get("other_origin_total", 0), 0, f["message"])
        # The headline leads with the origin.
        self.assertIn("first at rank 1 step 1, aten::gelu", rep["headline"], text)



class OpRecorderTwoRanks(_Cases, unittest.TestCase):
    """The three cases and the gate, on the runs of the Python backend."""
    backend = "python"

    def gate(self, policy):
        path = os.path.join(self.tmp.name, "policy.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(policy, f)
        out = tempfile.mkdtemp(dir=self.tmp.name)
        r = subprocess.run([EXE, "gate", "--policy", path, "--out", out], capture_output=True, text=True)
        return r.returncode, out, r.stdout + r.stderr

    def test_d_the_gate_requires_op_level_parity(self):
        # Step traces alone cannot see where the compiled run left eager; the "ops" entry makes the
        # gate require op-level parity of the op runs too, with its own reports.
        code, out, text = self.gate({"baseline": self.steps["eager"], "candidate": self.steps["compiled"],
                                     "ops": {"baseline": self.runs["eager"], "candidate": self.runs["compiled"]}})
        self.assertEqual(code, 0, text)
        with open(os.path.join(out, "ops-report.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["exit_code"], 0)
        code, out, text = self.gate({"baseline": self.steps["eager"], "candidate": self.steps["compiled"],
                                     "ops": {"baseline": self.runs["eager"], "candidate": self.runs["wrong_rank1"]}})
        self.assertEqual(code, 1, text)
        with open(os.path.join(out, "ops-report.json"), encoding="utf-8") as f:
            rep = json.load(f)
        ranks = {r["rank"]: r for r in rep["result"]["ranks"]}
        self.assertEqual(ranks[1]["first_divergence"]["op"], "aten::gelu")
        self.assertEqual(ranks[0]["first_divergence"]["cause"], "received")
        with open(os.path.join(out, "ops-junit.xml"), encoding="utf-8") as f:
            self.assertIn("failure", f.read())
        # Op runs named as the gate's runs: compared op by op.
        code, out, text = self.gate({"baseline": self.runs["eager"], "candidate": self.runs["wrong_all"]})
        self.assertEqual(code, 1, text)
        with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["result"]["kind"], "ops")
        # An "ops" entry with one side, or naming runs that are not op runs: exit 2, named.
        code, _, text = self.gate({"baseline": self.steps["eager"], "candidate": self.steps["compiled"],
                                   "ops": {"baseline": self.runs["eager"]}})
        self.assertEqual(code, 2, text)
        self.assertIn('"ops" needs both', text)
        code, _, text = self.gate({"baseline": self.steps["eager"], "candidate": self.steps["compiled"],
                                   "ops": {"baseline": self.runs["eager"], "candidate": self.steps["compiled"]}})
        self.assertEqual(code, 2, text)
        self.assertIn("not op logs", text)


class OpRecorderTwoRanksCpp(_Cases, unittest.TestCase):
    """The same cases on the runs of the C++ backend (the gate reads op runs whichever backend
    wrote them: its test runs once, on the Python backend's)."""
    backend = "cpp"


class BackendsAgree(unittest.TestCase):
    """The C++ backend records what the Python backend records: the same eager training recorded
    by each is op-level parity, and the records share their ops, phases, modules and lines."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

    def test_both_backends_records_of_one_training_are_parity(self):
        out = trained()
        py, cpp = os.path.join(out, "python", "eager"), os.path.join(out, "cpp", "eager")
        code, rep, text = compare_runs(py, cpp)
        self.assertEqual(code, 0, text)
        self.assertEqual(rep["result"]["decided_by"], "shard_v2")
        for r in rep["result"]["ranks"]:
            self.assertTrue(r["parity"], text)
            self.assertEqual(r["steps"], 2)
        self.assertGreater(rep["result"]["evidence"]["compared"], 100)
        for rank, (p, c) in enumerate(zip(records(py), records(cpp))):
            # The forward is the same op sequence, module by module and line by line (the
            # backward differs in the Python mode's extra detaches: docs/ops.md).
            def forward(recs):
                return [(r["op"], r.get("module"), r.get("source", {}).get("line")) for r in recs
                        if r["phase"] == "forward" and r["step"] == 1]
            self.assertEqual(forward(p), forward(c), f"rank {rank}")
            self.assertGreater(len(forward(c)), 5)
            for recs in (p, c):
                self.assertEqual({r["phase"] for r in recs}, {"forward", "backward", "optimizer"})
                self.assertIn("c10d::allreduce_", {r["op"] for r in recs if r["phase"] == "optimizer"})
            # Every value the Python backend hashed as an op's output, the C++ backend hashed too.
            def outs(recs):
                return {o["shard"] for r in recs for o in r["outs"] if "shard" in o}
            self.assertEqual(outs(p), outs(c), f"rank {rank}")

    def test_an_in_place_output_read_by_the_next_op_is_its_id_in_both_backends(self):
        """Autograd bumps an in-place op's version counter after the op's kernel (ADInplaceOrView),
        so the Python backend's dispatch mode sees the version before it and the C++ backend's
        callback, at the op's end, the one after: the Python backend takes the bumped version at
        the next op (one bump, the op's own), so neither hashes again what the op wrote and hashed;
        a tensor written twice between records (an op the mode does not record) stays stale."""
        import torch
        import gparity
        recorded = {}
        for backend in ("python", "cpp"):
            with tempfile.TemporaryDirectory() as tmp:
                x, g = torch.ones(4, 3), torch.full((4, 3), 0.5)
                with gparity.record_ops(os.path.join(tmp, backend), step=1, rank=0, world_size=1, backend=backend):
                    x.mul_(3)                     # 0: x hashed as its output
                    y = x + 1                     # 1: reads x: its id, no hash
                    torch.add(y, g, out=x)        # 2: x written through out=
                    x * 2                         # 3: reads x: its id
                with open(os.path.join(tmp, backend, "rank-0.jsonl"), encoding="utf-8") as f:
                    recs = [json.loads(line) for line in f]
                self.assertEqual([r["op"] for r in recs],
                                 ["aten::mul_.Tensor", "aten::add.Tensor", "aten::add.out", "aten::mul.Tensor"])
                self.assertEqual(recs[1]["args"][0]["id"], recs[0]["outs"][0]["id"])
                self.assertNotIn("shard", recs[1]["args"][0], (backend, recs[1]))
                self.assertNotIn("shard", recs[3]["args"][0], (backend, recs[3]))
                self.assertEqual(recs[3]["args"][0]["id"], recs[2]["outs"][0]["id"])
                recorded[backend] = recs
        self.assertEqual(recorded["python"], recorded["cpp"])
        # The settling itself: one bump is the op's; two are another write too.
        from gparity.op_recorder import OpRecorder, _Known
        import weakref
        rec = OpRecorder.__new__(OpRecorder)
        t = torch.ones(2)
        k = _Known(weakref.ref(t), 0, t._version, True)
        for bumps, settled in ((1, True), (2, False)):
            k.version = t._version
            rec._unsettled = [(k, k.version)]
            for _ in range(bumps):
                t.add_(1)
            rec._settle()
            self.assertEqual(k.version == t._version, settled, bumps)


class Views(unittest.TestCase):
    """Issue 24's rule in both backends: a view is not hashed, its record names its base (a view
    of a view the first one's base); an input that is a view of a fresh hashed tensor is not
    hashed either; a write through a view makes its base stale (hashed again when read)."""

    @staticmethod
    def record(backend, hashes="shard"):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        import torch
        import gparity
        torch.manual_seed(0)
        lin = torch.nn.Linear(8, 8)
        x = torch.randn(4, 8)
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        with tempfile.TemporaryDirectory() as d:
            rec = gparity.OpRecorder(d, model=lin, rank=0, world_size=1, backend=backend, hashes=hashes)
            with rec.record(1):
                y = lin(x)
                z = y.view(32)[:16]  # a view of a view of a fresh output
                z.mul_(2)            # written through the view: y is stale
                (y.sum() + z.sum()).backward()
                opt.step()
            rec.close()
            with open(os.path.join(d, "rank-0.jsonl"), encoding="utf-8") as f:
                return [json.loads(line) for line in f]

    def check_hash_choice(self, backend):
        # The shard hash alone by default; XXH3 beside it only when asked, on the same values.
        def outs(recs):
            return [o for r in recs for o in r["outs"] if "shard" in o]
        recs = self.record(backend)
        shard_only, both = outs(recs), outs(self.record(backend, "xxh3+shard"))
        # An allocation's output holds whatever bytes were there: marked, never hashed.
        allocs = [r for r in recs if r["op"].split(".")[0] in ("aten::empty", "aten::new_empty", "aten::empty_like",
                                                              "aten::empty_strided", "aten::new_empty_strided")]
        self.assertTrue(allocs, backend)
        for r in allocs:
            self.assertEqual([(o.get("unhashed"), "shard" in o) for o in r["outs"]], [("uninitialized", False)],
                             (backend, r["op"]))
        self.assertTrue(shard_only, backend)
        self.assertFalse(any("xxh3" in o for o in shard_only), backend)
        self.assertTrue(all("xxh3" in o for o in both), backend)
        self.assertEqual([o["shard"] for o in shard_only], [o["shard"] for o in both], backend)

    def check(self, backend):
        self.check_hash_choice(backend)
        recs = self.record(backend)
        first = {}
        for r in recs:
            first.setdefault(r["op"], r)
            for t in r["args"] + r["outs"]:
                self.assertFalse("view" in t and "shard" in t, (backend, r))
        t_op = first["aten::t"]
        weight = t_op["args"][0]
        self.assertIn("shard", weight)
        self.assertEqual(t_op["outs"][0].get("view"), {"base": weight["id"]}, backend)
        self.assertNotIn("shard", t_op["outs"][0])
        addmm = first["aten::addmm"]
        y = addmm["outs"][0]
        self.assertIn("shard", y)
        self.assertEqual(addmm["args"][2], {**t_op["outs"][0]}, backend)  # read as a view of the weight
        self.assertEqual(first["aten::view"]["outs"][0]["view"], {"base": y["id"]}, backend)
        self.assertEqual(first["aten::slice.Tensor"]["outs"][0]["view"], {"base": y["id"]}, backend)
        mul = next(r for r in recs if r["op"].startswith("aten::mul_"))
        self.assertEqual(mul["args"][0]["view"], {"base": y["id"]}, backend)
        self.assertIn("shard", mul["outs"][0])  # written in place: its own value now
        self.assertNotIn("view", mul["outs"][0])
        after = recs[recs.index(mul) + 1:]
        y_read = next(t for r in after for t in r["args"] if t["id"] == y["id"])
        self.assertIn("shard", y_read, backend)  # stale after the write through the view
        # The optimizer reads gradients that are views of hashed backward outputs: not hashed.
        grads = [r["args"][1] for r in recs if r["phase"] == "optimizer" and r["op"].startswith("aten::add_")]
        self.assertEqual(len(grads), 2, backend)
        for g in grads:
            self.assertNotIn("shard", g, backend)
        return recs

    def test_views_are_not_hashed_and_name_their_base_in_both_backends(self):
        def shape(recs):  # which outputs are views, and of what (inputs after an in-place write
            # differ: the dispatch mode sees the write's output before autograd moves its version)
            return [(r["op"], [t.get("view") for t in r["outs"]]) for r in recs if r["phase"] == "forward"]
        py, cpp = self.check("python"), self.check("cpp")
        self.assertEqual(shape(py), shape(cpp))


class RngStateOutputs(unittest.TestCase):
    """The attention ops' RNG state and debug outputs (philox_seed, philox_offset, rng_state,
    debug_attn_mask: on CUDA with dropout 0 possibly uninitialized bytes) are recorded without
    hashes and marked "unhashed", in both backends, by their schema return names. torch 1.13 has
    no _scaled_dot_product_*_attention ops: an op of this test's own library with the cuDNN
    attention's return names stands in, its RNG state different at every call."""

    lib = None
    calls = [0]

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        import torch
        if cls.lib is None:
            cls.lib = torch.library.Library("gparity_rng_test", "DEF")
            cls.lib.define("attn(Tensor q) -> (Tensor output, Tensor logsumexp, Tensor philox_seed, "
                           "Tensor philox_offset, Tensor debug_attn_mask)")
            cls.lib.define("attn_backward(Tensor grad, Tensor philox_seed, Tensor philox_offset) -> Tensor")
            cls.lib.define("dropout(Tensor x) -> (Tensor, Tensor)")  # native_dropout's: unnamed, values

            def attn(q):
                cls.calls[0] += 1
                n = cls.calls[0]
                return (q * 2, q.sum(-1), torch.full((), n, dtype=torch.int64),
                        torch.full((), 1000 + n, dtype=torch.int64), torch.full((2,), float(n)))

            def attn_backward(grad, seed, offset):
                return grad * 2

            def dropout(x):
                return x * 1, x > 0

            cls.lib.impl("attn", attn, "CPU")
            cls.lib.impl("attn_backward", attn_backward, "CPU")
            cls.lib.impl("dropout", dropout, "CPU")

    def test_the_name_rule(self):
        from gparity import op_recorder
        for name in ("philox_seed", "philox_offset", "rng_state", "unused", "seed", "offset"):
            self.assertEqual(op_recorder._unhashed_return(name), "rng_state", name)
        self.assertEqual(op_recorder._unhashed_return("debug_attn_mask"), "debug")
        for name in ("", "output", "logsumexp", "softmax_logsumexp", "cum_seq_q", "mask", "seed_"):
            self.assertIsNone(op_recorder._unhashed_return(name), name)
        import torch
        marks = op_recorder._unhashed_outputs(torch.ops.gparity_rng_test.attn.default,
                                              torch.ops.gparity_rng_test.attn(torch.ones(2, 3)))
        self.assertEqual(marks, [None, None, "rng_state", "rng_state", "debug"])
        # native_dropout's mask is a value: unnamed returns, nothing marked.
        self.assertIsNone(op_recorder._unhashed_outputs(torch.ops.aten.native_dropout.default,
                                                        torch.native_dropout(torch.ones(3), 0.0, True)))

    def record(self, backend):
        import torch
        import gparity

        class Attention(torch.autograd.Function):
            """As SDPA's autograd: the RNG state outputs saved (not differentiable: autograd keeps
            the original tensors) and read by the backward op."""

            @staticmethod
            def forward(ctx, q):
                out, _, seed, offset, _ = torch.ops.gparity_rng_test.attn(q)
                ctx.mark_non_differentiable(seed, offset)
                ctx.save_for_backward(seed, offset)
                return out, seed, offset

            @staticmethod
            def backward(ctx, grad, *_):
                seed, offset = ctx.saved_tensors
                return torch.ops.gparity_rng_test.attn_backward(grad, seed, offset)

        q = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        qg = q.clone().requires_grad_()
        with tempfile.TemporaryDirectory() as d:
            rec = gparity.OpRecorder(d, rank=0, world_size=1, backend=backend)
            with rec.record(1):
                out, lse, seed, offset, mask = torch.ops.gparity_rng_test.attn(q)
                torch.ops.gparity_rng_test.attn_backward(out, seed, offset)
                torch.ops.gparity_rng_test.dropout(out)
                Attention.apply(qg)[0].sum().backward()
            rec.close()
            with open(os.path.join(d, "rank-0.jsonl"), encoding="utf-8") as f:
                return [json.loads(line) for line in f]

    def check(self, backend):
        records = self.record(backend)
        recs = {}
        for r in records:
            recs.setdefault(r["op"], r)
        attn = recs["gparity_rng_test::attn"]["outs"]
        self.assertEqual(len(attn), 5, backend)
        for t in attn[:2]:
            self.assertIn("shard", t, backend)
            self.assertNotIn("unhashed", t, backend)
        for t, mark in zip(attn[2:], ("rng_state", "rng_state", "debug")):
            self.assertEqual(t.get("unhashed"), mark, (backend, t))
            self.assertNotIn("shard", t, backend)
            self.assertNotIn("xxh3", t, backend)
        back = recs["gparity_rng_test::attn_backward"]["args"]
        self.assertEqual([t.get("unhashed") for t in back], [None, "rng_state", "rng_state"], backend)
        self.assertEqual([t["id"] for t in back[1:]], [attn[2]["id"], attn[3]["id"]], backend)
        for t in back[1:]:
            self.assertNotIn("shard", t, backend)
        drop = recs["gparity_rng_test::dropout"]["outs"]
        self.assertEqual([("shard" in t, t.get("unhashed")) for t in drop], [(True, None), (True, None)], backend)
        # Through autograd: the saved RNG state, read by the backward op, is marked and unhashed.
        backs = [r for r in records if r["op"] == "gparity_rng_test::attn_backward"]
        self.assertEqual(len(backs), 2, backend)
        self.assertEqual([t.get("unhashed") for t in backs[1]["args"]], [None, "rng_state", "rng_state"], backend)
        for t in backs[1]["args"][1:]:
            self.assertNotIn("shard", t, backend)

    def test_rng_state_outputs_are_unhashed_and_marked_in_both_backends(self):
        self.check("python")
        self.check("cpp")


class OpRecorderMesh2x2(unittest.TestCase):
    """4 ranks on a 2x2 mesh (tests/python/op_recorder_mesh.py): rank 3's gelu is the origin; the
    TP all-reduce of {2, 3} makes rank 2 received from rank 3, and ranks 0 and 1 (the other TP
    group) receive it only through their DP all-reduce, from rank 2 and rank 3 respectively."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        out = cls.tmp.name
        script = os.path.join(HERE, "op_recorder_mesh.py")
        store = os.path.join(out, "store")
        procs = [subprocess.Popen([sys.executable, script, out, store, str(r)], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for r in range(4)]
        for p in procs:
            log, _ = p.communicate(timeout=120)
            if p.returncode != 0:
                raise AssertionError("mesh rank failed:\n" + log)
        cls.out = out

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def collectives(self, run, rank):
        with open(os.path.join(self.out, run, f"rank-{rank}.jsonl"), encoding="utf-8") as f:
            recs = [json.loads(line) for line in f]
        return [r for r in recs if r.get("type") == "op" and r.get("collective")]

    def test_records_name_each_collectives_group_and_members(self):
        names = {}
        for rank in range(4):
            tp, dp = self.collectives("eager", rank)
            self.assertEqual((tp["op"], dp["op"]), ("c10d::allreduce_", "c10d::allreduce_"))
            self.assertEqual(tp["group_ranks"], [0, 1] if rank < 2 else [2, 3], tp)
            self.assertEqual(dp["group_ranks"], [0, 2] if rank % 2 == 0 else [1, 3], dp)
            for c in (tp, dp):
                self.assertNotEqual(c["group"], "default", c)
                names.setdefault(tuple(c["group_ranks"]), set()).add(c["group"])
        # One name per group on all of its members, and four different names.
        self.assertTrue(all(len(n) == 1 for n in names.values()), names)
        self.assertEqual(len({next(iter(n)) for n in names.values()}), 4, names)

    def test_the_senders_are_the_members_of_the_collectives_group(self):
        r = subprocess.run([EXE, "compare", os.path.join(self.out, "eager"), os.path.join(self.out, "wrong_rank3"),
                            "--json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        ranks = {x["rank"]: x["first_divergence"] for x in json.loads(r.stdout)["result"]["ranks"]}
        self.assertEqual(ranks[3]["op"], "aten::gelu")
        self.assertEqual(ranks[3]["cause"], "origin")
        # rank: (which all-reduce: 0 TP, 1 DP; its members; the sender). Without groups, ranks 0
        # and 1 were said to receive from both 2 and 3 (every rank whose input differed).
        expect = {2: (0, [2, 3], 3), 0: (1, [0, 2], 2), 1: (1, [1, 3], 3)}
        for rank, (which, members, sender) in expect.items():
            fd = ranks[rank]
            text = json.dumps(fd)
            collective = self.collectives("eager", rank)[which]
            self.assertEqual(fd["group"], {"name": collective["group"], "ranks": members}, text)
            self.assertEqual(fd["op"], "c10d::allreduce_", text)
            self.assertEqual(fd["cause"], "received", text)
            self.assertEqual(fd["from_ranks"], [sender], text)
            self.assertEqual(fd["origin"]["rank"], 3, text)
            self.assertEqual(fd["origin"]["op"], "aten::gelu", text)
            self.assertEqual(fd["eager"]["index"], collective["index"], text)


class KernelLaunches(unittest.TestCase):
    """Kernel records (issue 32): a Triton launch through Inductor's launcher is a record of kind
    "kernel" in both backends. Triton does not run here (Debian's torch 1.13 on a CPU), so a
    launcher with CachingAutotuner's interface (run(*args, stream=...), fn with __name__,
    arg_names and src) that really computes its outputs on the CPU is wrapped by the same hook
    (_KernelHook) that wraps Inductor's class on a GPU machine (tests/data/ops/record_kernels
    holds records of real Inductor runs)."""

    class Launcher:
        class _Fn:
            __name__ = "triton_poi_fused_add_mul_0"
            arg_names = ["in_ptr0", "in_out_ptr0", "out_ptr0", "xnumel"]
            src = "def triton_poi_fused_add_mul_0(in_ptr0, in_out_ptr0, out_ptr0, xnumel):\n    pass\n"

        fn = _Fn()
        mutated_arg_names = ["in_out_ptr0"]

        def run(self, in_ptr0, in_out_ptr0, out_ptr0, xnumel, stream=None):
            in_out_ptr0.add_(in_ptr0)
            out_ptr0.copy_(in_out_ptr0 * 3)

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        from gparity import op_recorder
        op_recorder._KernelHook._wrap(cls.Launcher)
        op_recorder._KernelHook._wrap(cls.StoreOnly)

    def record(self, backend):
        import torch
        import gparity
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        x = torch.arange(8, dtype=torch.float32)
        y = torch.linspace(0, 1, 8)                       # read by the kernel only
        launcher = self.Launcher()
        with gparity.record_ops(os.path.join(tmp.name, backend), step=1, rank=0, world_size=1, backend=backend):
            acc = x * 2                                   # an op: acc is a fresh output
            buf = torch.empty_strided((8,), (1,))         # Inductor's output buffer: uninitialized
            launcher.run(y, acc, buf, 8, stream=0)  # KERNEL LINE
            total = buf.sum()                             # reads what the kernel wrote
        with open(os.path.join(tmp.name, backend, "rank-0.jsonl"), encoding="utf-8") as f:
            recs = [json.loads(line) for line in f]
        return recs, (x, y, acc, buf, total)

    def check(self, backend):
        import torch
        import gparity
        recs, (x, y, acc, buf, total) = self.record(backend)
        kernels = [r for r in recs if r.get("kind") == "kernel"]
        self.assertEqual(len(kernels), 1, recs)
        k = kernels[0]
        self.assertEqual(k["op"], "triton_poi_fused_add_mul_0")
        self.assertEqual(k["phase"], "forward")
        with open(__file__, encoding="utf-8") as f:
            line = next(n for n, text in enumerate(f, 1) if "# KERNEL LINE" in text and "launcher.run" in text)
        self.assertEqual(k["kernel"]["site"]["line"], line)
        self.assertEqual(os.path.basename(k["kernel"]["site"]["file"]), "test_op_recorder.py")
        self.assertIn("launcher.run(", k["kernel"]["site"]["code"])
        self.assertEqual(len(k["kernel"]["source_hash"]), 16)
        self.assertEqual([(a["name"], a["role"]) for a in k["args"]],
                         [("in_ptr0", "in"), ("in_out_ptr0", "in_out"), ("out_ptr0", "out")])
        self.assertEqual([(a["name"], a["role"]) for a in k["outs"]], [("in_out_ptr0", "in_out"), ("out_ptr0", "out")])
        by_id = {}
        for r in recs:
            if r is k:
                break
            for t in r["outs"]:
                by_id[t["id"]] = (r["op"], t)
        # Read values: y (made before the step) hashed; acc a fresh output of the step (its
        # producer's hash holds it); the output buffer an allocation: never hashed before.
        self.assertIn("shard", k["args"][0])
        self.assertNotIn("shard", k["args"][1])
        self.assertEqual(by_id[k["args"][1]["id"]][0], "aten::mul.Tensor")
        self.assertEqual(k["args"][2].get("unhashed"), "uninitialized")
        self.assertEqual(by_id[k["args"][2]["id"]][0], "aten::empty_strided")
        # Written values, hashed after the launch: what the buffers hold now.
        self.assertEqual(k["outs"][0]["shard"], format(gparity.hash_tensor(acc, shard_spec=2)[1], "016x"))
        self.assertEqual(k["outs"][1]["shard"], format(gparity.hash_tensor(buf, shard_spec=2)[1], "016x"))
        self.assertEqual(k["args"][0]["shard"], format(gparity.hash_tensor(y, shard_spec=2)[1], "016x"))
        self.assertTrue(torch.equal(buf, (x * 2 + y) * 3))
        # The reader after it reads the kernel's output by id: no hash of its own.
        after = recs[recs.index(k) + 1]
        self.assertEqual(after["args"][0]["id"], k["outs"][1]["id"])
        self.assertNotIn("shard", after["args"][0])
        return recs

    def test_a_launch_is_a_kernel_record_in_both_backends(self):
        def shape(recs):  # every record: a Python scalar (x * 2) is no tensor in either backend
            return [(r["op"], r.get("kernel"), [(t.get("name"), t.get("unhashed"), t.get("shard")) for t in r["args"]],
                     [(t.get("name"), t.get("shard")) for t in r["outs"]]) for r in recs]
        self.assertEqual(shape(self.check("python")), shape(self.check("cpp")))

    def test_gparity_reads_kernel_records_as_launches(self):
        recs, _ = self.record("cpp")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "rank-0.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(json.dumps(r) + "\n" for r in recs))
            r = subprocess.run([EXE, "ops", "show", "--kernels", path, "--json"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("triton_poi_fused_add_mul_0", r.stdout)
            self.assertIn("out_ptr0", r.stdout)

    def test_a_kernel_writing_through_an_alias_makes_the_aliased_tensor_read_what_it_wrote(self):
        """Inductor hands kernels reinterpret_tensor()s: aliases that autograd does not know as
        views, so no version counter moves when a kernel writes through one. A tensor in the
        written storage must not keep its old hash as its value (a reader would be said to read
        what it no longer holds): its next reader reads the kernel's written output (a view of
        that hashed alias, which covers it), in both backends."""
        import torch
        import gparity
        for backend in ("python", "cpp"):
            with tempfile.TemporaryDirectory() as tmp:
                y = torch.linspace(0, 1, 8)
                a = torch.arange(8, dtype=torch.float32) + 0.5
                alias = torch.empty(0).set_(a.storage(), 0, a.shape, a.stride())  # not a view
                acc = torch.ones(8)
                with gparity.record_ops(os.path.join(tmp, backend), step=1, rank=0, world_size=1, backend=backend):
                    first = a * 2                                   # reads a: hashed
                    self.Launcher().run(y, acc, alias, 8, stream=0)  # writes a's bytes through the alias
                    second = a * 3                                  # reads a again: what it holds now
                with open(os.path.join(tmp, backend, "rank-0.jsonl"), encoding="utf-8") as f:
                    recs = [json.loads(line) for line in f]
                muls = [r for r in recs if r["op"] == "aten::mul.Tensor"]
                self.assertEqual(len(muls), 2, recs)
                self.assertIn("shard", muls[0]["args"][0], (backend, muls[0]))
                (kernel,) = [r for r in recs if r.get("kind") == "kernel"]
                written = {t["name"]: t for t in kernel["outs"]}["out_ptr0"]
                self.assertEqual(written["shard"], format(gparity.hash_tensor(a, shard_spec=2)[1], "016x"))
                self.assertNotEqual(muls[0]["args"][0]["shard"], written["shard"])
                self.assertNotIn("shard", muls[1]["args"][0], (backend, muls[1]))
                self.assertEqual(muls[1]["args"][0].get("view"), {"base": written["id"]}, (backend, muls[1]))
                self.assertTrue(torch.equal(second, a * 3) and not torch.equal(first, a * 2))

    def test_an_alias_inside_a_fresh_hashed_tensor_is_its_view_not_hashed_again(self):
        """Inductor reads parameters and buffers through reinterpret_tensor()s (a transposed
        weight for mm): an alias whose elements all lie in a fresh hashed contiguous tensor of its
        dtype holds values read there, and is recorded as that tensor's view (no hash: the same
        bytes, hashed again by a strided kernel, cost the recorded step most); one reaching past
        it is hashed. Both backends alike."""
        import torch
        import gparity
        shapes = {}
        for backend in ("python", "cpp"):
            with tempfile.TemporaryDirectory() as tmp:
                big = torch.arange(32, dtype=torch.float32) + 0.5
                a = torch.empty(0).set_(big.storage(), 0, (4, 4), (4, 1))    # elements 0..15
                t = torch.empty(0).set_(big.storage(), 0, (4, 4), (1, 4))    # a's transpose
                row = torch.empty(0).set_(big.storage(), 4, (4,), (1,))      # a's row 1
                past = torch.empty(0).set_(big.storage(), 12, (8,), (1,))    # 12..19: past a
                with gparity.record_ops(os.path.join(tmp, backend), step=1, rank=0, world_size=1, backend=backend):
                    a * 2          # reads a: hashed
                    t + 1          # a view of a
                    row * 3        # a view of a
                    past - 1       # hashed
                with open(os.path.join(tmp, backend, "rank-0.jsonl"), encoding="utf-8") as f:
                    recs = [json.loads(line) for line in f]
                self.assertEqual(len(recs), 4, recs)
                read = [r["args"][0] for r in recs]
                self.assertIn("shard", read[0])
                for r in read[1:3]:
                    self.assertEqual(r.get("view"), {"base": read[0]["id"]}, (backend, r))
                    self.assertNotIn("shard", r)
                self.assertIn("shard", read[3], (backend, read[3]))
                self.assertNotIn("view", read[3])
                shapes[backend] = [sorted(x) for x in read]
        self.assertEqual(shapes["python"], shapes["cpp"])

    def test_a_gone_dense_alias_covers_what_it_hashed_until_its_storage_is_written(self):
        """Inductor's forward reads a weight through a transposed reinterpret_tensor() (hashed:
        dense, a permutation of contiguous) that is gone when the backward reads the weight
        itself: the weight holds the values hashed there, so its record is a view of that hash
        (the weight's bytes are not hashed twice a step), until an op writes the storage; a gone
        alias that does not fill its range (a strided slice) covers nothing. Both backends alike."""
        import torch
        import gparity
        shapes = {}
        for backend in ("python", "cpp"):
            with tempfile.TemporaryDirectory() as tmp:
                w = torch.arange(32, dtype=torch.float32) + 0.5                  # a weight: [4, 8]
                w = w.view(4, 8)
                wt = torch.empty(0).set_(w.storage(), 0, (8, 4), (1, 8))           # its transpose, no view
                wcols = torch.empty(0).set_(w.storage(), 0, (4, 4), (8, 1))        # columns 0..3 of w
                v = torch.arange(32, dtype=torch.float32).view(4, 8)
                cols = torch.empty(0).set_(v.storage(), 0, (4, 4), (8, 1))         # columns 0..3 of v
                with gparity.record_ops(os.path.join(tmp, backend), step=1, rank=0, world_size=1, backend=backend):
                    wt * 2          # 0: hashes wt
                    cols * 2        # 1: hashes cols
                    del wt, cols    # gone
                    w + 1           # 2: a view of wt's hash
                    v + 1           # 3: cols fill no range: hashed
                    wcols.mul_(3)   # 4: writes w's storage (and fills no range of it)
                    w - 1           # 5: hashed again
                with open(os.path.join(tmp, backend, "rank-0.jsonl"), encoding="utf-8") as f:
                    recs = [json.loads(line) for line in f]
                self.assertEqual([r["op"] for r in recs], ["aten::mul.Tensor"] * 2 + ["aten::add.Tensor"] * 2 +
                                 ["aten::mul_.Tensor", "aten::sub.Tensor"], recs)
                read = [r["args"][0] for r in recs]
                self.assertIn("shard", read[0])
                self.assertEqual(read[2].get("view"), {"base": read[0]["id"]}, (backend, read[2]))
                self.assertNotIn("shard", read[2])
                self.assertIn("shard", read[3], (backend, read[3]))
                self.assertIn("shard", read[5], (backend, read[5]))
                self.assertNotIn("view", read[5])
                self.assertEqual(read[5]["shard"], format(gparity.hash_tensor(w, shard_spec=2)[1], "016x"))
                shapes[backend] = [[sorted(t) for t in r["args"] + r["outs"]] for r in recs]
        self.assertEqual(shapes["python"], shapes["cpp"])

    def test_an_out_buffer_is_named_out_and_never_hashed_as_an_input(self):
        """Inductor calls extern kernels with out= buffers it reuses: what the buffer held is no
        input of the op (two runs hold different garbage there), in both backends."""
        import torch
        import gparity
        shapes = {}
        for backend in ("python", "cpp"):
            with tempfile.TemporaryDirectory() as tmp:
                a, b = torch.randn(4, 4), torch.randn(4, 4)
                buf = torch.randn(4, 4)  # made before the step: it would be hashed as an input
                with gparity.record_ops(os.path.join(tmp, backend), step=1, rank=0, world_size=1, backend=backend):
                    torch.mm(a, b, out=buf)
                with open(os.path.join(tmp, backend, "rank-0.jsonl"), encoding="utf-8") as f:
                    (mm,) = [json.loads(line) for line in f]
                self.assertEqual(mm["op"], "aten::mm.out")
                self.assertEqual([t.get("name") for t in mm["args"]], [None, None, "out"], mm)
                self.assertNotIn("shard", mm["args"][2])
                self.assertEqual(mm["outs"][0]["id"], mm["args"][2]["id"])
                self.assertEqual(mm["outs"][0]["shard"], format(gparity.hash_tensor(buf, shard_spec=2)[1], "016x"))
                shapes[backend] = [sorted(t) for t in mm["args"] + mm["outs"]]
        self.assertEqual(shapes["python"], shapes["cpp"])

    class StoreOnly:
        """A persistent layer norm's shape: in_out_ptr0 only stored to (its old bytes no input)."""
        class _Fn:
            __name__ = "triton_per_fused_native_layer_norm_0"
            arg_names = ["in_out_ptr0", "in_ptr0", "xnumel"]
            src = ("def triton_per_fused_native_layer_norm_0(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):\n"
                   "    tmp0 = tl.load(in_ptr0 + (x0), xmask)\n"
                   "    tl.store(in_out_ptr0 + (x0), tmp0 * 2, xmask)\n")

        fn = _Fn()
        mutated_arg_names = ["in_out_ptr0"]

        def run(self, in_out_ptr0, in_ptr0, xnumel, stream=None):
            in_out_ptr0.copy_(in_ptr0 * 2)

    def test_an_in_out_argument_the_kernel_only_stores_to_is_recorded_as_out(self):
        """Its old bytes are whatever the allocator's block held (Inductor allocates outside the
        dispatcher): never hashed before the launch, never an input; what it wrote is hashed."""
        import torch
        import gparity
        shapes = {}
        for backend in ("python", "cpp"):
            with tempfile.TemporaryDirectory() as tmp:
                garbage, x = torch.randn(8), torch.arange(8, dtype=torch.float32)
                with gparity.record_ops(os.path.join(tmp, backend), step=1, rank=0, world_size=1, backend=backend):
                    self.StoreOnly().run(garbage, x, 8, stream=0)
                with open(os.path.join(tmp, backend, "rank-0.jsonl"), encoding="utf-8") as f:
                    (k,) = [json.loads(line) for line in f]
                self.assertEqual([(t["name"], t["role"]) for t in k["args"]], [("in_out_ptr0", "out"), ("in_ptr0", "in")])
                self.assertNotIn("shard", k["args"][0], (backend, k))
                self.assertIn("shard", k["args"][1])
                self.assertEqual([(t["name"], t["role"]) for t in k["outs"]], [("in_out_ptr0", "out")])
                self.assertEqual(k["outs"][0]["shard"], format(gparity.hash_tensor(x * 2, shard_spec=2)[1], "016x"))
                shapes[backend] = [sorted(t) for t in k["args"] + k["outs"]]
        self.assertEqual(shapes["python"], shapes["cpp"])

    def test_which_in_out_arguments_a_source_only_stores_to(self):
        from gparity.kernel_launches import _stored_only
        head = "def k(in_out_ptr0, in_out_ptr1, in_out_ptr2, in_out_ptr3, in_ptr0, xnumel):\n"
        body = ("    tmp0 = tl.load(in_out_ptr1 + (x0), xmask)\n"          # read
                "    p = tl.make_block_ptr(in_out_ptr2, [8], [1], [0], [8], [0])\n"  # a block pointer
                "    tl.store(in_out_ptr0 + (x0), tmp0, xmask)\n"
                "    tl.store(in_out_ptr1 + (x0), tmp0, xmask)\n"
                "    tl.store(p, tmp0)\n")                                 # in_out_ptr3 unused
        names = ["in_out_ptr0", "in_out_ptr1", "in_out_ptr2", "in_out_ptr3", "in_ptr0"]
        self.assertEqual(_stored_only(head + body, names), {"in_out_ptr0"})
        # The signature's own mention (and a decorator's) is not a use.
        self.assertEqual(_stored_only("@triton.jit(mutated=['in_out_ptr0'])\n" + head +
                                      "    tl.store(in_out_ptr0 + (x0), 1.0)\n", names), {"in_out_ptr0"})

    class Tuned(Launcher):
        """Autotuned: one launcher chosen (Inductor's CachingAutotuner.launchers), so a call site's
        id is kept and the next launch there goes straight to the C++ recorder."""
        launchers = [object()]

    def test_a_known_site_goes_straight_to_the_builtin_and_a_new_signature_there_registers_anew(self):
        """The C++ backend records a launch at a call site it knows inside the builtin launch hook
        (op_recorder_launches.cpp: no Python between Inductor's `call` and the launcher); a new
        site goes through the Python hook, which records it through two builtins given the
        launch's arguments as they are (the tensors are found there and must be where the call
        site's registered signature has them) and tells the builtin hook of the site. The same
        line launching with another pattern of tensors (a Python number where a tensor was) is
        refused (-2) and registered anew. The records are those of the Python hook alone
        (`_KernelHook.fast` False) and of the dispatcher path
        (torch.ops.gparity.oprec_kernel_begin), record for record."""
        import torch
        import gparity
        from gparity import op_recorder
        from gparity.kernel_launches import _KernelHook, _launch_hook
        lib = op_recorder._cpp_library()  # Tuned.run: Launcher's, which setUpClass wrapped
        if lib is None or lib.launch is None or _launch_hook() is None:
            self.skipTest("a C++ recorder without Python frames: the dispatcher path only")
        begin, end = lib.launch
        returned = []
        # Counts what the Python hook passes to the begin builtin; compiled under a name that is
        # no user file, so that the records' source lines are the launches' (the test's) alike.
        scope = {"begin": begin, "returned": returned}
        exec(compile("def counted_begin(site, args):\n    returned.append(begin(site, args))\n"
                     "    return returned[-1]\n", "<counting>", "exec"), scope)

        def run(tmp, name, launch, fast=True):
            lib.launch, _KernelHook.fast = launch, fast
            try:
                y, acc, buf = torch.linspace(0, 1, 8), torch.ones(8), torch.empty(8)
                tuned = self.Tuned()
                with gparity.record_ops(os.path.join(tmp, name), step=1, rank=0, world_size=1, backend="cpp"):
                    for first in (y, y, 0.5, 0.5):
                        tuned.run(first, acc, buf, 8, stream=0)
            finally:
                lib.launch, _KernelHook.fast = (begin, end), True
            with open(os.path.join(tmp, name, "rank-0.jsonl"), encoding="utf-8") as f:
                return [json.loads(line) for line in f], buf

        with tempfile.TemporaryDirectory() as tmp:
            hook, buf = run(tmp, "hook", (scope["counted_begin"], end))
            in_hook = list(returned)
            returned.clear()
            python, buf_python = run(tmp, "python", (scope["counted_begin"], end), fast=False)
            slow, buf_slow = run(tmp, "dispatcher", None)
        # The second and fourth launches: known to the builtin hook, never in Python.
        self.assertEqual([i < 0 for i in in_hook], [False, True, False], in_hook)
        self.assertEqual([i < 0 for i in returned], [False, False, True, False, False], returned)
        kernels = [r for r in hook if r.get("kind") == "kernel"]
        self.assertEqual([[a["name"] for a in k["args"]] for k in kernels],
                         [["in_ptr0", "in_out_ptr0", "out_ptr0"]] * 2 + [["in_out_ptr0", "out_ptr0"]] * 2)
        self.assertEqual(kernels[3]["outs"][1]["shard"], format(gparity.hash_tensor(buf, shard_spec=2)[1], "016x"))
        self.assertEqual({r["source"]["function"] for r in kernels}, {"run"})
        self.assertEqual(hook, python)
        self.assertEqual(hook, slow)
        self.assertTrue(torch.equal(buf, buf_slow) and torch.equal(buf, buf_python))
        # Misuse is a Python error, never a crash; outside a step a launch is no record (-1).
        one = torch.ones(2)
        for bad in ((0, [one]), ("site", (one,)), (0,)):
            with self.assertRaises(TypeError):
                begin(*bad)
        self.assertEqual(begin(0, (one,)), -1)
        self.assertIsNone(end(-1, True))
        hooks = _launch_hook()
        for bad in ((), (1, 2)):
            with self.assertRaises(TypeError):
                hooks.make(*bad)
        with self.assertRaises(ValueError):
            hooks.set_mode(7)
        with self.assertRaises(TypeError):
            hooks.remember(self.Tuned(), "not a frame", None, 0, True)

    class Failing(Tuned):
        """A launcher that raises on its second launch, and a new launcher (autotuned again)."""
        launchers = [object()]
        calls = 0

        def run(self, in_ptr0, in_out_ptr0, out_ptr0, xnumel, stream=None):
            type(self).calls += 1
            if type(self).calls == 2:
                raise RuntimeError("launch failed")
            out_ptr0.copy_(in_ptr0 + in_out_ptr0)

    def test_a_launch_that_raises_in_the_builtin_hook_ends_its_record_and_a_new_launcher_registers_anew(self):
        """A known site's launch that raises: the launcher's exception reaches the caller, the
        launch is recorded without outputs and the ops after it are recorded (the launch's
        exemption ended); a launcher chosen anew (another config) is a new site (its fields
        registered through the Python hook)."""
        import torch
        import gparity
        from gparity import op_recorder
        from gparity.kernel_launches import _KernelHook, _launch_hook
        lib = op_recorder._cpp_library()
        if lib is None or lib.launch is None or _launch_hook() is None:
            self.skipTest("a C++ recorder without Python frames")
        _KernelHook._wrap(self.Failing)
        self.Failing.calls = 0
        y, acc, buf = torch.linspace(0, 1, 8), torch.ones(8), torch.empty(8)
        k = self.Failing()
        with tempfile.TemporaryDirectory() as tmp:
            with gparity.record_ops(tmp, step=1, rank=0, world_size=1, backend="cpp"):
                for i in range(4):
                    if i == 2:
                        k.launchers = [object()]  # autotuned again: another launcher
                    try:
                        k.run(y, acc, buf, 8, stream=0)
                    except RuntimeError as e:
                        self.assertEqual(str(e), "launch failed")
                        after = y * 2  # recorded: no launch in flight
            with open(os.path.join(tmp, "rank-0.jsonl"), encoding="utf-8") as f:
                recs = [json.loads(line) for line in f]
        self.assertEqual(self.Failing.calls, 4)
        self.assertEqual([r["op"] for r in recs], ["triton_poi_fused_add_mul_0"] * 2 + ["aten::mul.Tensor"]
                         + ["triton_poi_fused_add_mul_0"] * 2)
        self.assertEqual([len(r["outs"]) for r in recs], [2, 0, 1, 2, 2])
        self.assertEqual(recs[4]["outs"][1]["shard"], format(gparity.hash_tensor(buf, shard_spec=2)[1], "016x"))
        self.assertTrue(torch.equal(after, y * 2))

    def test_no_launch_is_recorded_outside_a_step(self):
        import torch
        x = torch.ones(4)
        acc, buf = x.clone(), torch.zeros(4)
        self.Launcher().run(x, acc, buf, 4, stream=0)  # the hook passes through
        self.assertTrue(torch.equal(buf, torch.full((4,), 6.0)))


class ShardSpec(unittest.TestCase):
    """Op records are hashed with the shard hash of spec v2 unless asked for v1 (issue 32: one
    multiply an element on the GPU, docs/hashing.md), in both backends: every record of a v2 run
    says so, its hashes are the spec's (scripts/shard_hash_v2_ref.py, written from the spec, agrees),
    and a v1 run compared with a v2 run is nothing compared (exit 2), never a divergence."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts"))

    def run_step(self, tmp, name, backend, shard_spec):
        import torch
        import gparity
        torch.manual_seed(0)
        w = torch.randn(8, 8).to(torch.bfloat16)
        x = torch.randn(4, 8).to(torch.bfloat16)
        rec = gparity.OpRecorder(os.path.join(tmp, name), rank=0, world_size=1, backend=backend,
                                 shard_spec=shard_spec)
        with rec.record(1):
            y = torch.relu(x @ w)
        rec.close()
        with open(os.path.join(tmp, name, "rank-0.jsonl"), encoding="utf-8") as f:
            return [json.loads(line) for line in f], y

    def test_v2_records_say_so_and_hold_the_specs_hash(self):
        import shard_hash_v2_ref as ref
        with tempfile.TemporaryDirectory() as tmp:
            for backend in ("python", "cpp"):
                recs, y = self.run_step(tmp, backend, backend, 2)
                self.assertTrue(recs)
                self.assertTrue(all(r.get("shard_spec") == 2 for r in recs), recs)
                relu = [r for r in recs if r["op"].startswith("aten::relu")][-1]
                import torch
                expected = ref.shard_hash(bytes(y.contiguous().view(-1).view(torch.uint8).tolist()), 2)
                self.assertEqual(relu["outs"][0]["shard"], format(expected, "016x"), backend)
                recs1, y1 = self.run_step(tmp, backend + "_v1", backend, 1)
                self.assertTrue(all("shard_spec" not in r for r in recs1), recs1)
                relu1 = [r for r in recs1 if r["op"].startswith("aten::relu")][-1]
                import gparity
                self.assertEqual(relu1["outs"][0]["shard"], format(gparity.hash_tensor(y1)[1], "016x"))
                self.assertNotEqual(relu1["outs"][0]["shard"], relu["outs"][0]["shard"])
            same = subprocess.run([EXE, "compare", os.path.join(tmp, "python"), os.path.join(tmp, "cpp")],
                                  capture_output=True, text=True)
            self.assertEqual(same.returncode, 0, same.stdout + same.stderr)
            self.assertIn("shard_v2", same.stdout)
            mixed = subprocess.run([EXE, "compare", os.path.join(tmp, "cpp_v1"), os.path.join(tmp, "cpp")],
                                   capture_output=True, text=True)
            self.assertEqual(mixed.returncode, 2, mixed.stdout + mixed.stderr)
            self.assertIn("shard_spec", mixed.stdout + mixed.stderr)

    def test_a_bad_spec_is_refused(self):
        import gparity
        with tempfile.TemporaryDirectory() as tmp, self.assertRaises(ValueError):
            gparity.OpRecorder(tmp, rank=0, world_size=1, shard_spec=3)


class RecordText(unittest.TestCase):
    def test_names_with_quotes_backslashes_and_control_characters_are_json_escaped(self):
        """The C++ writer escapes what JSON needs escaped (a module name comes from the user's
        code): the reader gets the name back as it was."""
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        import torch
        import gparity
        from gparity import op_recorder
        lib = op_recorder._cpp_library()
        if lib is None:
            self.skipTest("no C++ recorder in this build")
        name = 'a"b\\c\x01d\te' + "é" * 3 + '"'
        with tempfile.TemporaryDirectory() as tmp:
            with gparity.record_ops(os.path.join(tmp, "r"), step=1, rank=0, world_size=1, backend="cpp"):
                lib.gparity_oprec_push_module(name.encode("utf-8"))
                torch.ones(2).neg()
                lib.gparity_oprec_pop_module()
            with open(os.path.join(tmp, "r", "rank-0.jsonl"), encoding="utf-8") as f:
                recs = [json.loads(line) for line in f]
        self.assertEqual([r.get("module") for r in recs], [name, name])


class ModuleHooks(unittest.TestCase):
    def test_the_same_hooks_under_the_same_keys_every_step_and_none_while_dynamo_traces(self):
        """The module path's global hooks (step_hooks._ModuleHooks): present only while a step
        is recorded, the same two functions under the same key at every step (releases whose
        Dynamo guards on the hooks' keys would otherwise compile anew at every recorded step),
        and doing nothing where torch.compiler.is_compiling() says Dynamo traces them (a call into
        the recorder there broke the compiled graph at every module: docs/ops.md)."""
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        import torch
        import gparity
        from gparity import op_recorder, step_hooks
        hooks = torch.nn.modules.module
        model = torch.nn.Sequential(torch.nn.Linear(3, 3))
        x = torch.ones(2, 3)
        seen = []
        for backend in ("python", "cpp"):
            if backend == "cpp" and op_recorder._cpp_library() is None:
                continue
            with self.subTest(backend=backend), tempfile.TemporaryDirectory() as tmp:
                rec = gparity.OpRecorder(os.path.join(tmp, "r"), model=model, rank=0, world_size=1,
                                         backend=backend)
                for step in (1, 2):
                    with rec.record(step):
                        seen.append((dict(hooks._global_forward_pre_hooks), dict(hooks._global_forward_hooks)))
                        model(x)
                    self.assertNotIn(step_hooks._ModuleHooks._KEY, hooks._global_forward_pre_hooks)
                    self.assertNotIn(step_hooks._ModuleHooks._KEY, hooks._global_forward_hooks)
                traced, step_hooks._is_compiling = step_hooks._is_compiling, lambda: True
                try:
                    with rec.record(3):
                        model(x)
                finally:
                    step_hooks._is_compiling = traced
                rec.close()
                with open(os.path.join(tmp, "r", "rank-0.jsonl"), encoding="utf-8") as f:
                    recs = [json.loads(line) for line in f]
                by_step = {}
                for r in recs:
                    by_step.setdefault(r["step"], set()).add(r.get("module"))
                self.assertEqual(by_step[1], {"0"})
                self.assertEqual(by_step[2], {"0"})
                self.assertEqual(by_step[3], {None})  # the hooks did nothing: no module path
        self.assertTrue(seen)
        for pre, post in seen:
            self.assertEqual(list(pre), [step_hooks._ModuleHooks._KEY])
            self.assertEqual(list(post), [step_hooks._ModuleHooks._KEY])
            self.assertIs(pre[step_hooks._ModuleHooks._KEY], seen[0][0][step_hooks._ModuleHooks._KEY])


class Compiling(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

    def recorded_ops(self, run):
        """{backend: [(step, op), ...]} of the steps `run(recorder, x)` records, each backend here."""
        import torch
        import gparity
        from gparity import op_recorder, step_hooks
        x = torch.arange(4.0)
        out = {}
        for backend in ("python", "cpp"):
            if backend == "cpp" and op_recorder._cpp_library() is None:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                rec = gparity.OpRecorder(os.path.join(tmp, "r"), rank=0, world_size=1, backend=backend)
                run(rec, x)
                rec.close()
                self.assertEqual(step_hooks._Compiling.depth, 0)
                with open(os.path.join(tmp, "r", "rank-0.jsonl"), encoding="utf-8") as f:
                    out[backend] = [(r["step"], r["op"]) for r in map(json.loads, f)]
        self.assertTrue(out)
        return out

    def test_what_runs_while_dynamo_compiles_is_not_recorded_and_cuda_graph_recording_is(self):
        """Between Dynamo's compile callbacks (step_hooks._Compiling, called here as Dynamo
        calls them: without arguments before torch 2.8's CallbackArgs, with its trigger after)
        no op is recorded, by either backend; a CUDA graph recording (reduce-overhead) is the
        step's program and is recorded; ops after the compile are recorded again."""
        import types
        from gparity import step_hooks

        def args(name):
            return types.SimpleNamespace(callback_trigger=types.SimpleNamespace(name=name))

        def run(rec, x):
            with rec.record(1):
                x.neg()
                step_hooks._Compiling._start()
                x.exp()  # a compile's own op: not recorded
                step_hooks._Compiling._start(args("LAZY_BACKWARD"))  # nested
                x.sin()
                step_hooks._Compiling._end(args("LAZY_BACKWARD"))
                x.cos()
                step_hooks._Compiling._end()
                step_hooks._Compiling._start(args("CUDAGRAPH_RECORDING"))
                x.abs()  # the step's program, captured
                step_hooks._Compiling._end(args("CUDAGRAPH_RECORDING"))
                x.sqrt()

        for backend, ops in self.recorded_ops(run).items():
            self.assertEqual(ops, [(1, "aten::neg"), (1, "aten::abs"), (1, "aten::sqrt")], backend)

    def test_a_compile_whose_end_never_came_holds_back_no_later_step(self):
        """A start callback without its end (torch 2.3 to 2.5 could leave it out): the next step
        starts with no compilation open and records its ops."""
        from gparity import step_hooks

        def run(rec, x):
            with rec.record(1):
                x.neg()
                step_hooks._Compiling._start()
                x.exp()
            with rec.record(2):
                x.sin()

        for backend, ops in self.recorded_ops(run).items():
            self.assertEqual(ops, [(1, "aten::neg"), (2, "aten::sin")], backend)


class CompileCallbacks(unittest.TestCase):
    def test_registered_once_with_dynamo_loaded_and_not_before(self):
        """_Compiling.register (at every step's start): nothing while torch._dynamo is not loaded
        (torch.compile loads it), then its start and end callbacks, once a process. Debian's torch
        1.13 has no Dynamo: a stand-in module with torch._dynamo.callback's handler interface."""
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        import types
        from gparity import step_hooks

        class Handler:
            def __init__(self):
                self.start, self.end = [], []

            def register_start_callback(self, fn):
                self.start.append(fn)

            def register_end_callback(self, fn):
                self.end.append(fn)

        self.assertFalse(step_hooks._Compiling.callbacks_complete("2.5.1+cu124"))  # the end may not come
        self.assertFalse(step_hooks._Compiling.callbacks_complete("1.13.1"))
        self.assertTrue(step_hooks._Compiling.callbacks_complete("2.6.0"))
        self.assertTrue(step_hooks._Compiling.callbacks_complete("2.11.0a0+git1234"))
        self.assertTrue(step_hooks._Compiling.callbacks_complete("3.0.0"))
        handler = Handler()
        callback = types.ModuleType("torch._dynamo.callback")
        callback.callback_handler = handler
        saved = {k: sys.modules.get(k) for k in ("torch._dynamo", "torch._dynamo.callback")}
        was = step_hooks._Compiling._registered
        complete = step_hooks._Compiling.callbacks_complete
        step_hooks._Compiling.callbacks_complete = staticmethod(lambda version: True)  # torch 1.13 here
        try:
            sys.modules.pop("torch._dynamo", None)
            step_hooks._Compiling._registered = False
            step_hooks._Compiling.register(None)
            self.assertEqual((handler.start, handler.end), ([], []))
            dynamo = types.ModuleType("torch._dynamo")
            dynamo.callback = callback
            sys.modules["torch._dynamo"], sys.modules["torch._dynamo.callback"] = dynamo, callback
            step_hooks._Compiling.register(None)
            step_hooks._Compiling.register(None)
            self.assertEqual(handler.start, [step_hooks._Compiling._start])
            self.assertEqual(handler.end, [step_hooks._Compiling._end])
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
            step_hooks._Compiling._registered = was
            step_hooks._Compiling.callbacks_complete = complete


class ProbeCallbacks(unittest.TestCase):
    def test_the_diagnostic_callback_is_refused_during_a_step_and_changes_no_record(self):
        """gparity_oprec_probe_callbacks (bench/ops_recorder_host_parts.py's rf_bare / rf_io): an
        empty global RecordFunction callback, set and removed outside a step; refused (-1) while
        a step is recorded; a step recorded with it set has the records of one without."""
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        import torch
        import gparity
        from gparity import op_recorder
        lib = op_recorder._cpp_library()
        if lib is None or not hasattr(lib, "gparity_oprec_probe_callbacks"):
            self.skipTest("no C++ recorder in this build")
        x = torch.arange(6.0).reshape(2, 3)
        with tempfile.TemporaryDirectory() as tmp:
            rec = gparity.OpRecorder(os.path.join(tmp, "r"), rank=0, world_size=1, backend="cpp")
            with rec.record(1):
                (x * 2).sum()
                self.assertEqual(lib.gparity_oprec_probe_callbacks(2), -1)
            try:
                self.assertEqual(lib.gparity_oprec_probe_callbacks(2), 0)
                self.assertEqual(float((x * 2).sum()), 30.0)
                with rec.record(2):
                    (x * 2).sum()
            finally:
                self.assertEqual(lib.gparity_oprec_probe_callbacks(0), 0)
            rec.close()
            with open(os.path.join(tmp, "r", "rank-0.jsonl"), encoding="utf-8") as f:
                recs = [json.loads(line) for line in f]

        def strip(r):
            return {k: v for k, v in r.items() if k != "step"}
        one = [strip(r) for r in recs if r["step"] == 1]
        two = [strip(r) for r in recs if r["step"] == 2]
        self.assertEqual([r["op"] for r in one], ["aten::mul.Tensor", "aten::sum"])
        self.assertEqual([r["op"] for r in two], [r["op"] for r in one])
        self.assertEqual([[a.get("shard") for a in r["outs"]] for r in two],
                         [[a.get("shard") for a in r["outs"]] for r in one])


class Bookkeeping(unittest.TestCase):
    """What the recorders keep between records and steps (call sites' lines, tensors by storage)
    gives the same records as looking everything up again would."""

    def test_source_lines_of_a_long_function_are_its_lines_in_every_step(self):
        """Records from a long function (Inductor's generated `call` is hundreds of lines) name
        the line of each call, step after step, in both backends (the C++ recorder keeps each
        call site's line across steps, by code object and bytecode offset)."""
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        import torch
        import gparity
        filler = "".join(f"    v{i} = n + {i}\n" for i in range(900))
        src = ("def call(x, n):\n" + filler + "    a = x.neg()\n" + filler.replace("v", "w") +
               "    b = a.exp()\n    return b\n")
        neg_line, exp_line = 2 + 900, 3 + 2 * 900
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "generated_call.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(src)
            scope = {}
            exec(compile(src, path, "exec"), scope)
            for backend in ("cpp", "python"):
                rec = gparity.OpRecorder(os.path.join(tmp, backend), rank=0, world_size=1, backend=backend)
                x = torch.ones(3)
                for step in (1, 2, 3):
                    with rec.record(step):
                        scope["call"](x, step)
                rec.close()
                with open(os.path.join(tmp, backend, "rank-0.jsonl"), encoding="utf-8") as f:
                    recs = [json.loads(line) for line in f]
                self.assertEqual([(r["step"], r["op"], r["source"]["line"]) for r in recs],
                                 [(s, op, line) for s in (1, 2, 3)
                                  for op, line in (("aten::neg", neg_line), ("aten::exp", exp_line))], backend)
                self.assertTrue(all(r["source"]["file"] == path for r in recs), recs)

    def test_a_storage_address_reused_in_the_step_starts_its_tensors_over(self):
        """The Python backend knows a tensor's storage by its address, which a storage freed in
        the step gives to the next: once none of an address's tensors lives, its list starts
        over, so 500 outputs that die at once leave one entry, not 500 walked by each output."""
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        import torch
        import gparity
        x = torch.randn(4)
        with tempfile.TemporaryDirectory() as tmp:
            rec = gparity.OpRecorder(os.path.join(tmp, "r"), rank=0, world_size=1, backend="python")
            with rec.record(1):
                for _ in range(500):
                    x.neg()
                kept = torch.neg(x)
                view = kept[1:]
                del kept  # its view lives: the list keeps it
                longest = max(len(v) for v in rec._by_storage.values())
                with_view = [v for v in rec._by_storage.values() if any(k.ref() is view for k in v)]
                view.exp()
            rec.close()
            with open(os.path.join(tmp, "r", "rank-0.jsonl"), encoding="utf-8") as f:
                recs = [json.loads(line) for line in f]
        self.assertLessEqual(longest, 3)
        self.assertEqual(len(with_view), 1)
        self.assertEqual(len(with_view[0]), 2)  # the dead base and its live view
        self.assertEqual(len(recs), 503)
        self.assertEqual(recs[-1]["args"][0].get("view"), {"base": recs[-3]["outs"][0]["id"]})

    def test_host_time_by_section_is_counted_only_when_asked_for(self):
        """GPARITY_OPREC_SECTIONS=1 (bench/ops_recorder_gpu_profile.py): the C++ recorder counts
        each part it runs; without it, nothing. A step of two ops with a fresh input: two op
        records started and ended, three tensors' refs, hashes asked for twice (the input, the
        outputs), one step text."""
        script = textwrap.dedent("""
            import ctypes, json, os, sys, tempfile
            sys.path.insert(0, sys.argv[1])
            import torch, gparity
            from gparity import op_recorder
            x = torch.ones(4)
            with tempfile.TemporaryDirectory() as tmp:
                with gparity.record_ops(os.path.join(tmp, "r"), step=1, rank=0, world_size=1, backend="cpp"):
                    x.neg().exp()
            lib = op_recorder._cpp_library()
            lib.gparity_oprec_section_name.restype = ctypes.c_char_p
            out = (ctypes.c_int64 * 64)()
            n = lib.gparity_oprec_sections(out, 32)
            print(json.dumps({lib.gparity_oprec_section_name(i).decode(): [out[2 * i], out[2 * i + 1]]
                              for i in range(n)}))
        """)
        python_dir = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
        runs = {}
        for on in ("1", "0"):
            env = dict(os.environ, GPARITY_OPREC_SECTIONS=on)
            r = subprocess.run([sys.executable, "-c", script, python_dir], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            runs[on] = json.loads(r.stdout.strip().splitlines()[-1])
        calls = {name: c for name, (_, c) in runs["1"].items()}
        self.assertEqual((calls["op_record_start"], calls["op_record_end"], calls["step_text"]), (2, 2, 1), calls)
        self.assertEqual(calls["tensor_refs"], 4, calls)  # neg's input and output, exp's input and output
        self.assertEqual(calls["hashes_asked"], 3, calls)  # x; neg's output; exp's output (its input is neg's)
        self.assertGreater(runs["1"]["op_record_start"][0], 0)
        self.assertEqual(set(map(tuple, runs["0"].values())), {(0, 0)})


class HashBatches(unittest.TestCase):
    """Hashes in batches (C++ backend): inside a batch a hash waits until something the recorder
    sees is about to write what it reads, then goes with the others in one launch. Python opens
    batches around Inductor's generated `call` through sys.monitoring (3.12+, a GPU machine);
    here the C entry opens one around eager CPU ops, whose writes the recorder sees as well. The
    records of a batched step are those of the same step unbatched, byte for byte."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
        from gparity import op_recorder
        cls.lib = op_recorder._cpp_library()
        if cls.lib is None or not getattr(cls.lib, "batches", False):
            raise unittest.SkipTest("no C++ recorder with batches in this build")
        op_recorder._KernelHook._wrap(KernelLaunches.Launcher)

    def record(self, program, batched, close=True):
        import gparity
        with tempfile.TemporaryDirectory() as tmp:
            with gparity.record_ops(os.path.join(tmp, "r"), step=1, rank=0, world_size=1, backend="cpp"):
                if batched:
                    self.lib.gparity_oprec_batch(1)
                try:
                    kept = program()
                finally:
                    if batched and close:
                        self.lib.gparity_oprec_batch(0)
            if batched and not close:
                self.lib.gparity_oprec_batch(0)  # after the step: nothing left to send
            with open(os.path.join(tmp, "r", "rank-0.jsonl"), encoding="utf-8") as f:
                return f.read(), kept

    @staticmethod
    def writes():
        """Every kind of write to what a pending hash reads: an in-place op on an op's output, an
        out= op into one, an in-place op through a view of one, a kernel launch writing through
        an alias autograd does not know (Inductor's reinterpret_tensor), an in-place op on a
        tensor made before the step (its input hash pending)."""
        import torch
        x = torch.linspace(-1, 1, 16)
        w = torch.arange(16, dtype=torch.float32)
        before = torch.ones(16)
        a = torch.arange(8, dtype=torch.float32) + 0.5
        alias = torch.empty(0).set_(a.storage(), 0, a.shape, a.stride())
        y = x.sin()
        y.add_(1)
        z = y * 2
        torch.mul(y, w, out=z)
        z[2:6].zero_()
        first = a * 2
        KernelLaunches.Launcher().run(torch.linspace(0, 1, 8), torch.ones(8), alias, 8, stream=0)
        second = a * 3
        before.mul_(w)
        return [z.sum(), first, second, before.sum()]

    def test_every_write_the_recorder_sees_sends_the_hashes_before_it(self):
        plain, _ = self.record(self.writes, batched=False)
        batched, _ = self.record(self.writes, batched=True)
        self.assertGreater(plain.count('"shard"'), 10)
        self.assertEqual(batched, plain)

    def test_a_batch_the_step_ends_in_sends_its_hashes(self):
        plain, _ = self.record(self.writes, batched=False)
        cut, _ = self.record(self.writes, batched=True, close=False)
        self.assertEqual(cut, plain)

    def test_only_a_module_of_triton_kernels_alone_gets_batches(self):
        from gparity.kernel_launches import _only_triton_kernels
        head = "from torch._inductor.async_compile import AsyncCompile\nasync_compile = AsyncCompile()\n"
        call = "def call(args):\n    triton_poi_fused_0.run(buf0, 8, stream=stream0)\n"
        triton = "triton_poi_fused_0 = async_compile.triton('triton_poi_fused_0', '...')\n"
        with tempfile.TemporaryDirectory() as tmp:
            def module(body):
                path = os.path.join(tmp, "m%d.py" % len(os.listdir(tmp)))
                with open(path, "w", encoding="utf-8") as f:
                    f.write(head + body)
                return path
            self.assertTrue(_only_triton_kernels(module(triton + "async_compile.wait(globals())\n" + call)))
            # C++ kernels (a CPU graph) and CUDA templates are launched without the launcher hook.
            self.assertFalse(_only_triton_kernels(
                module(triton + "cpp_fused_1 = async_compile.cpp_pybinding(['float*'], '...')\n" + call)))
            self.assertFalse(_only_triton_kernels(module(triton + "cuda_fused_2 = async_compile.cuda('...', 'so')\n" + call)))
            self.assertFalse(_only_triton_kernels(module(triton)))  # no call
            self.assertFalse(_only_triton_kernels(os.path.join(tmp, "absent.py")))

    def test_batches_need_sys_monitoring_and_are_the_default_where_they_can_be(self):
        import gparity

        def batches(env=None, **kw):
            saved = os.environ.pop("GPARITY_OPREC_BATCH", None)
            if env is not None:
                os.environ["GPARITY_OPREC_BATCH"] = env
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    rec = gparity.OpRecorder(os.path.join(tmp, "r"), rank=0, world_size=1, **kw)
                    rec.close()
                return rec.batch_hashes
            finally:
                os.environ.pop("GPARITY_OPREC_BATCH", None)
                if saved is not None:
                    os.environ["GPARITY_OPREC_BATCH"] = saved
        self.assertEqual(batches(backend="cpp", batch_hashes=True), hasattr(sys, "monitoring"))
        # The choice, wherever batches can be (sys.monitoring taken as present on older Pythons:
        # nothing here records a step).
        from gparity import op_recorder
        supported = op_recorder._Batches.supported
        op_recorder._Batches.supported = staticmethod(lambda: True)
        try:
            self.assertTrue(batches(backend="cpp"))  # the default
            self.assertTrue(batches("1", backend="cpp"))
            self.assertFalse(batches("0", backend="cpp"))
            self.assertTrue(batches("0", backend="cpp", batch_hashes=True))  # asked for: the argument wins
            self.assertFalse(batches(backend="cpp", batch_hashes=False))
            self.assertFalse(batches(backend="python"))  # the C++ recorder's alone
        finally:
            op_recorder._Batches.supported = supported

    def test_inside_a_batch_a_hash_reads_the_memory_when_it_goes(self):
        """The precondition batches rest on, shown: a write the recorder does not see (numpy
        through the same memory) lands in a pending hash. Python batches only Inductor's
        generated code, where every write is a launch or an op."""
        import torch

        def program():
            y = torch.linspace(-1, 1, 16).sin()
            y.numpy()[:] = 7.0  # unseen: no operator call, no launch
            return [y * 2]
        plain, (y_plain,) = self.record(program, batched=False)
        batched, (y_batched,) = self.record(program, batched=True)
        sin = [json.loads(line) for line in plain.splitlines()][1]
        self.assertEqual(sin["op"], "aten::sin")
        import gparity
        seven = format(gparity.hash_tensor(torch.full((16,), 7.0), shard_spec=2)[1], "016x")
        self.assertNotEqual(sin["outs"][0]["shard"], seven)
        self.assertEqual(json.loads(batched.splitlines()[1])["outs"][0]["shard"], seven)


if __name__ == "__main__":
    unittest.main()
