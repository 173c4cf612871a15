#!/usr/bin/python3
"""soak_check.py on synthetic traces: a run with a lost machine and a joiner, written as
train.bin --trace writes it (the sampler's strided split, re-split at every change, wrap-around
padding), passes; the same run with one sample dropped, one sample trained twice, one replica's
parameters different, a step applied twice, a restart from step 0 or a stall of more than a
minute fails with that finding."""
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import soak_check  # noqa: E402

SAMPLES = 25  # over 3 ranks: padding at each epoch's end
BATCH = 2


def order(epoch):
    perm = list(range(SAMPLES))
    random.Random(epoch).shuffle(perm)
    return perm


class Sim:
    """Writes trace lines of processes m<machine>.<pid> as libaccel's sampler would split the
    data. phase(gen, procs, steps, ...) trains `steps` steps at world len(procs)."""

    def __init__(self):
        self.lines = {}
        self.epoch, self.start, self.taken = 0, 0, 0
        self.step, self.t, self.world = 0, 1000.0, 0
        self.last = {}

    def put(self, proc, line):
        self.lines.setdefault(proc, []).append(line)

    def resplit(self, world):
        if self.world:
            self.start += self.taken * self.world
            if self.start >= SAMPLES:
                self.epoch, self.start = self.epoch + 1, 0
        self.world, self.taken = world, 0

    def phase(self, gen, procs, steps, joiners=(), after=None, params=None, die=None, stall=0):
        """`procs` in rank order; `joiners` start (the others regroup); `after`: the step the
        generation continues from (default the last completed); `die`: a process that fetches
        one more step and is killed, the others fetching it and failing."""
        self.step = self.step if after is None else after
        self.resplit(len(procs))
        for rank, p in enumerate(procs):
            kind = "start" if p in joiners or gen == 0 else "regroup"
            h = (params or {}).get(p, f"{self.step:016x}")
            if kind == "start":
                self.put(p, f"start gen {gen} world {len(procs)} rank {rank} step {self.step} "
                            f"epoch {self.epoch} pid 1 time {self.t:.6f} params {h}")
            else:
                self.put(p, f"regroup gen {gen} world {len(procs)} rank {rank} step {self.step} "
                            f"epoch {self.epoch} time {self.t:.6f} params {h}")
        self.t += 2.0
        for n in range(steps + (1 if die else 0)):
            if n == steps // 2:
                self.t += stall
            per_rank = -(-(SAMPLES - self.start) // self.world)
            count = min(BATCH, per_rank - self.taken)
            perm = order(self.epoch)
            for rank, p in enumerate(procs):
                pos = [self.start + rank + (self.taken + k) * self.world for k in range(count)]
                got = [perm[x % SAMPLES] for x in pos]
                pad = sum(x >= SAMPLES for x in pos)
                self.put(p, f"fetch step {self.step + 1} gen {gen} epoch {self.epoch} rank {rank} "
                            f"samples {' '.join(map(str, got))} pad {pad}")
            if die and n == steps:
                for p in procs:
                    if p != die:
                        self.put(p, f"error gen {gen} step {self.step} time {self.t:.6f}")
                return
            self.step += 1
            self.taken += count
            self.t += 0.1
            for rank, p in enumerate(procs):
                self.put(p, f"step {self.step} gen {gen} world {len(procs)} rank {rank} "
                            f"time {self.t:.6f}")
            if self.taken == per_rank:
                self.epoch, self.start, self.taken = self.epoch + 1, 0, 0

    def write(self, directory):
        for proc, lines in self.lines.items():
            with open(os.path.join(directory, proc), "w") as f:
                f.write("\n".join(lines) + "\n")


def run(mutate=None, twice=False, stall=0):
    """A 3-machine run: machine 2 killed in its 31st step, the two others go on, a replacement
    machine 2 joins; returns soak_check's result (after `mutate(lines)`)."""
    sim = Sim()
    a, b, c, d = "m0.10", "m1.11", "m2.12", "m2.13"
    sim.phase(0, [a, b, c], 30, die=c)
    sim.phase(1, [a, b], 17)
    sim.phase(2, [a, b, d], 40, joiners=[d], after=sim.step - 1 if twice else None, stall=stall)
    if mutate:
        mutate(sim.lines)
    events = [{"time": 999.0, "action": "start", "machine": m} for m in range(3)]
    events.append({"time": 999.5 + 2 + 3.1, "action": "kill", "machine": 2, "kind": "kill"})
    events.append({"time": sim.t - 9, "action": "start", "machine": 2, "kind": "join"})
    with tempfile.TemporaryDirectory() as tmp:
        sim.write(tmp)
        traces = soak_check.load(tmp)
    return soak_check.check(traces, events, SAMPLES, sim.t + 0.1, 2)


def edit_fetch(lines, proc, nth, edit):
    """Applies `edit(samples)` to the samples of `proc`'s nth fetch line."""
    fetch = [i for i, line in enumerate(lines[proc]) if line.startswith("fetch")][nth]
    w = lines[proc][fetch].split()
    s, p = w.index("samples"), w.index("pad")
    lines[proc][fetch] = " ".join(w[:s + 1] + edit(w[s + 1:p]) + w[p:])


class SoakCheckTest(unittest.TestCase):
    def test_clean_run_passes(self):
        r = run()
        self.assertEqual(soak_check.problems(r), [])
        self.assertEqual(r["generations"], 3)
        self.assertEqual(r["steps"], 87)
        self.assertGreater(r["padding"], 0)
        self.assertGreaterEqual(r["epochs_complete"], 10)
        self.assertEqual([x["lost_steps"] for x in r["recoveries"]], [0, 0])
        self.assertEqual(r["recoveries"][0]["cause"], "kill m2 (kill)")
        self.assertTrue(0.5 < r["effective"] < 1.0)

    def test_lost_sample(self):
        r = run(lambda lines: edit_fetch(lines, "m1.11", 3, lambda s: s[1:]))
        self.assertTrue(r["lost"], r)
        self.assertTrue(any(p.startswith("samples lost") for p in soak_check.problems(r)))

    def test_repeated_sample(self):
        def repeat(lines):
            first = [line for line in lines["m0.10"] if line.startswith("fetch")][0].split()
            edit_fetch(lines, "m1.11", 0, lambda s: [first[first.index("samples") + 1]] + s[1:])
        r = run(repeat)
        self.assertTrue(r["repeated"], r)
        self.assertTrue(any(p.startswith("samples repeated") for p in soak_check.problems(r)))

    def test_replica_mismatch(self):
        def other(lines):
            i = [n for n, line in enumerate(lines["m1.11"]) if line.startswith("regroup")][0]
            lines["m1.11"][i] = lines["m1.11"][i][:-1] + "f"
        r = run(other)
        self.assertTrue(r["mismatch"], r)
        self.assertTrue(any(p.startswith("replicas differ") for p in soak_check.problems(r)))

    def test_step_applied_twice(self):
        r = run(twice=True)
        self.assertTrue(r["twice"], r)
        self.assertTrue(any(p.startswith("step applied twice") for p in soak_check.problems(r)))

    def test_stall(self):
        r = run(stall=61)
        self.assertEqual(len(r["stalls"]), 1, r["stalls"])
        self.assertTrue(any(p.startswith("stall") for p in soak_check.problems(r)))
        self.assertEqual(run(stall=59)["stalls"], [])

    def test_job_end_and_restart_from_zero(self):
        def restart(lines):
            for proc in ("m0.10", "m1.11", "m2.13"):
                for i, line in enumerate(lines[proc]):
                    if line.startswith(("start gen 2", "regroup gen 2")):
                        w = line.split()
                        w[w.index("step") + 1] = "0"
                        lines[proc][i] = " ".join(w)
        r = run(restart)
        self.assertTrue(any("from step 0" in x for x in r["job_ends"]), r["job_ends"])


if __name__ == "__main__":
    unittest.main()
