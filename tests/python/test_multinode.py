"""python/gparity across nodes, on one machine: two "nodes" are two torchrun launches on
localhost (`python3 -m torch.distributed.run --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d`,
Gloo, CPU) writing one shared run folder. Two runs compare in parity; a run whose node is
killed whole mid-run is INCOMPLETE in `gparity compare`, that node and its ranks named.

Run by ctest with /usr/bin/python3; GPARITY_TORCHOPS and GPARITY_EXE point at the build.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "multinode_worker.py")
EXE = os.environ["GPARITY_EXE"]
STEPS = 4


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """One torchrun launch (one "node"), in a session of its own so that killing it kills its
    agent and its workers, as a node's death does."""

    def __init__(self, run_dir, node, port, log, hang=()):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", str(node),
               "--nproc_per_node", "2", "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}",
               "--rdzv_id", "gparity-test", "--rdzv_conf", f"is_host={'true' if node == 0 else 'false'}",
               "--max_restarts", "0", "--monitor_interval", "0.2",  # (default 5 s: polls its workers)
               # torch 1.13 on Python 3.11 cannot read its own default "0" here (enum.IntFlag no
               # longer lists NONE): stdout to a log and to the console ("1"), stderr left alone.
               "--redirects", "1", "--tee", "1", WORKER, run_dir, str(STEPS), *map(str, hang)]
        self.log = log
        # The agent's tee writes the workers' lines to its stdout, a file here, without flushing:
        # unbuffered, they reach the log when the worker prints them, not when the agent exits.
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, env=env)

    def output(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout):
        """Exit status; the launch is killed after `timeout` seconds (a test never hangs)."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
            return None


def run_two_nodes(run_dir, logs):
    port = free_port()
    nodes = [Node(run_dir, n, port, os.path.join(logs, f"{os.path.basename(run_dir)}.node{n}.log")) for n in (0, 1)]
    statuses = [n.wait(90) for n in nodes]
    if statuses != [0, 0]:
        raise AssertionError(f"torchrun launches ended {statuses}:\n" + "\n".join(n.output() for n in nodes))


def steps_recorded(run_dir, rank):
    try:
        with open(os.path.join(run_dir, f"rank-{rank}.jsonl"), encoding="utf-8") as f:
            return sum(1 for line in f if '"type":"step"' in line)
    except FileNotFoundError:
        return 0


class TwoTorchrunNodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.baseline = os.path.join(cls.tmp.name, "baseline")
        run_two_nodes(cls.baseline, cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_two_runs_compare_in_parity_and_the_manifest_places_every_rank(self):
        again = os.path.join(self.tmp.name, "again")
        run_two_nodes(again, self.tmp.name)
        with open(os.path.join(self.baseline, "manifest.json"), encoding="utf-8") as f:
            m = json.load(f)
        self.assertEqual(m["world_size"], 4)
        self.assertEqual(m["steps"], STEPS)
        self.assertEqual([r["rank"] for r in m["ranks"]], [0, 1, 2, 3])
        # torchrun numbers the nodes at the rendezvous (GROUP_RANK) and the ranks node by node.
        self.assertEqual([r["node"] for r in m["ranks"]], [0, 0, 1, 1])
        self.assertEqual([r["local_rank"] for r in m["ranks"]], [0, 1, 0, 1])
        self.assertEqual({r["host"] for r in m["ranks"]}, {socket.gethostname()})
        out = subprocess.run([EXE, "compare", self.baseline, again], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("ranks 0-3 identical", out.stdout)

    def test_a_node_killed_mid_run_is_incomplete_with_its_ranks_named(self):
        killed = os.path.join(self.tmp.name, "killed")
        port = free_port()
        # Rank 2 stops (alive) at the start of step 3: that only pins the moment of the kill,
        # after every rank recorded step 2, so that the test does not race the run.
        nodes = [Node(killed, n, port, os.path.join(self.tmp.name, f"killed.node{n}.log"), hang=(2, 3))
                 for n in (0, 1)]
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (steps_recorded(killed, 2) < 2 or steps_recorded(killed, 3) < 2):
                time.sleep(0.05)
            self.assertGreaterEqual(steps_recorded(killed, 3), 2, nodes[0].output() + nodes[1].output())
            # The launch whose workers hold ranks 2-3 (torchrun, not --node_rank, numbers nodes).
            # Its line reaches the launch's log through torchrun's tee, which polls the worker's
            # own log (every 0.1 s): it can come after the steps did, so wait for it.
            victim = None
            while victim is None and time.monotonic() < deadline + 30:
                victim = next((n for n in nodes if "gparity-test: rank 2 on node" in n.output()), None)
                time.sleep(0.05)
            self.assertIsNotNone(victim, nodes[0].output() + nodes[1].output())
            survivor = next(n for n in nodes if n is not victim)
            victim.kill()
            self.assertIsNotNone(victim.wait(10))
            self.assertNotEqual(survivor.wait(60), 0, survivor.output())
        finally:
            for n in nodes:
                n.kill()
                n.wait(10)
        # Against the complete run: INCOMPLETE, exit 1, the lost node named with its ranks in the
        # headline; the steps the run lacks are missing evidence, not a divergence.
        out = subprocess.run([EXE, "compare", self.baseline, killed], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertRegex(out.stdout, r"INCOMPLETE: evidence is missing: candidate node 1 \(host [^,]*, ranks 2-3\) "
                                     r"was lost; no divergence in what was compared")
        self.assertNotIn("DIVERGENCE", out.stdout)
        self.assertRegex(out.stdout, r"incomplete \[rank 2\]: candidate node 1 \(host [^,]*, ranks 2-3\) was lost: "
                                     r"its ranks stopped by step 2")
        self.assertNotIn("node 0 (", out.stdout)
        # The survivors said what they saw.
        self.assertIn("candidate rank 0 failed at step 3", out.stdout)
        # On its own (against itself) the run is INCOMPLETE: nothing differs, evidence is missing.
        alone = subprocess.run([EXE, "compare", killed, killed], capture_output=True, text=True, timeout=60)
        self.assertEqual(alone.returncode, 1, alone.stdout + alone.stderr)
        self.assertIn("INCOMPLETE: evidence is missing", alone.stdout)
        self.assertRegex(alone.stdout, r"baseline node 1 \(host [^,]*, ranks 2-3\) was lost")


if __name__ == "__main__":
    unittest.main()
