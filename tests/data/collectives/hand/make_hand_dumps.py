#!/usr/bin/env python3
"""Writes the hand-made Flight Recorder dumps of tests/data/collectives/hand/ (issue 34).

Each folder is one job, one dump per rank, named as PyTorch names its dumps: the prefix given in
TORCH_FR_DUMP_TEMP_FILE followed by the rank ("nccl_trace_rank_0"), in the JSON form of
torch._C._distributed_c10d._dump_nccl_trace_json (format 2.10: no rank field; pg_status values
are strings; time_discovered_*_ns is 0 when not seen). The schedules are written by hand to the
shape of the hangs they stand for; the real NCCL dumps are in ../fr_device/ when recorded.

  healthy_4rank/     world (pg 0) + tp pairs (pg 1: [0, 1], pg 2: [2, 3]): 3 steps, all completed
  inversion_4rank/   step 3: rank 0 issues the world all_reduce before its tp all_reduce, the others
                     tp first: ranks 0 and 1 deadlock, ranks 2 and 3 wait in the world all_reduce
  inversion_2rank/   world + tp over [0, 1]: rank 1 issues tp before world in step 3, rank 0 world first
  skip_2rank/        rank 1 skips the tp all_reduce of step 3 and goes on to the world all_reduce
  never_arrived_2rank/ rank 1 stops after step 2: rank 0 waits in the world all_reduce of step 3

Run: python3 make_hand_dumps.py (writes next to itself).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1_795_351_358_000_000_000
TORCH = "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/"


def frames(fn, line, op):
    return [
        {"name": op, "filename": TORCH + "distributed_c10d.py", "line": 2950},
        {"name": "wrapper", "filename": TORCH + "c10d_logger.py", "line": 83},
        {"name": fn, "filename": "/work/job/train.py", "line": line},
        {"name": "main", "filename": "/work/job/train.py", "line": 120},
    ]


# Where the program issues each collective of a step (function, line), and its size.
SITES = {"tp": ("tp_block", 41, [4, 1024]), "world": ("sync_grads", 63, [8192])}


class Rank:
    def __init__(self, rank, groups):
        self.rank = rank
        self.groups = groups  # name -> (pg_id, desc, ranks)
        self.entries = []
        self.seq = {name: 0 for name in groups}

    def issue(self, group, state, site=None):
        pg_id, desc, _ = self.groups[group]
        self.seq[group] += 1
        kind = "tp" if desc == "tp" else "world"
        fn, line, size = SITES[kind]
        if site:
            fn, line = site
        rid = len(self.entries)
        t = T0 + rid * 1_000_000
        self.entries.append({
            "record_id": rid, "pg_id": pg_id, "process_group": [group, desc],
            "thread_name": "pt_main_thread", "thread_id": "139737596211520",
            "collective_seq_id": self.seq[group], "p2p_seq_id": 0, "op_id": self.seq[group],
            "profiling_name": "nccl:all_reduce", "time_created_ns": t,
            "input_sizes": [size], "input_dtypes": ["Float"], "output_sizes": [size], "output_dtypes": ["Float"],
            "state": state,
            "time_discovered_started_ns": t + 1000 if state in ("started", "completed") else 0,
            "time_discovered_completed_ns": t + 2000 if state == "completed" else 0,
            "retired": state == "completed", "timeout_ms": 60000, "is_p2p": False,
            "frames": frames(fn, line, "all_reduce"),
        })

    def dump(self):
        status = {}
        for name, (pg_id, _, _) in self.groups.items():
            mine = [e for e in self.entries if e["process_group"][0] == name]
            done = [e["collective_seq_id"] for e in mine if e["state"] == "completed"]
            started = [e["collective_seq_id"] for e in mine if e["state"] in ("started", "completed")]
            status[str(pg_id)] = {"last_enqueued_collective": str(self.seq[name]),
                                  "last_started_collective": str(max(started, default=-1)),
                                  "last_completed_collective": str(max(done, default=-1))}
        return {"version": "2.10", "comm_lib_version": "2.27.5",
                "pg_config": {n: {"name": n, "desc": d, "ranks": str(r)} for n, (_, d, r) in self.groups.items()},
                "pg_status": status, "entries": self.entries}


def four_rank_groups(rank):
    tp = "1" if rank < 2 else "2"
    return {"0": (0, "default_pg", [0, 1, 2, 3]), tp: (1, "tp", [0, 1] if rank < 2 else [2, 3])}


def two_rank_groups(rank):
    return {"0": (0, "default_pg", [0, 1]), "1": (1, "tp", [0, 1])}


def write(name, ranks):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    for r in ranks:
        with open(os.path.join(d, f"nccl_trace_rank_{r.rank}"), "w") as f:
            json.dump(r.dump(), f, indent=1)


def steps(r, n):
    tp = [g for g in r.groups if g != "0"][0]
    for _ in range(n):
        r.issue(tp, "completed")
        r.issue("0", "completed")
    return tp


def healthy():
    ranks = [Rank(k, four_rank_groups(k)) for k in range(4)]
    for r in ranks:
        steps(r, 3)
    write("healthy_4rank", ranks)


def inversion_4rank():
    ranks = [Rank(k, four_rank_groups(k)) for k in range(4)]
    for r in ranks:
        tp = steps(r, 2)
        if r.rank == 0:  # world first: blocks in it, its tp all_reduce queued behind
            r.issue("0", "started", site=("sync_grads_early", 58))
            r.issue(tp, "scheduled")
        elif r.rank == 1:  # tp first: blocks in it (rank 0's is queued), world queued behind
            r.issue(tp, "started")
            r.issue("0", "scheduled")
        else:  # the other pair completes its tp all_reduce and waits in the world one
            r.issue(tp, "completed")
            r.issue("0", "started")
    write("inversion_4rank", ranks)


def inversion_2rank():
    ranks = [Rank(k, two_rank_groups(k)) for k in range(2)]
    for r in ranks:
        steps(r, 2)
    ranks[0].issue("0", "started", site=("sync_grads_early", 58))
    ranks[0].issue("1", "scheduled")
    ranks[1].issue("1", "started")
    ranks[1].issue("0", "scheduled")
    write("inversion_2rank", ranks)


def skip_2rank():
    ranks = [Rank(k, two_rank_groups(k)) for k in range(2)]
    for r in ranks:
        steps(r, 2)
    ranks[0].issue("1", "started")
    ranks[0].issue("0", "scheduled")
    ranks[1].issue("0", "started")  # no tp all_reduce in step 3
    write("skip_2rank", ranks)


def never_arrived_2rank():
    ranks = [Rank(k, two_rank_groups(k)) for k in range(2)]
    for r in ranks:
        steps(r, 2)
    ranks[0].issue("1", "completed")  # rank 1 must have issued it too ...
    ranks[1].issue("1", "completed")
    ranks[0].issue("0", "started")  # ... but it never issues the world all_reduce
    write("never_arrived_2rank", ranks)


if __name__ == "__main__":
    healthy()
    inversion_4rank()
    inversion_2rank()
    skip_2rank()
    never_arrived_2rank()
