#!/usr/bin/python3
"""Issue 25's "told plainly" after in-place membership changes, under accel-launch: 3 machines
(network namespaces on one bridge) x 2 train.bin workers, --min_machines 1 --elastic_in_place
--hang_timeout 4 (a start-up starved of CPU on a loaded host is not a hang: the start-up grace,
--startup_timeout, issue 35). Two changes in one job:

1. Machine 1 (a LOWER machine) leaves: its two workers are SIGKILLed once every rank trained
   --warm_steps steps. Machine 2's workers (ranks 4, 5) go on as ranks 2, 3 of world 4.
   `accel-launch status --json`, run on machine 0, must then show generation 1, world 4, 2
   machines and exactly ranks 0-3: ranks 2 and 3 with machine 2's (unchanged) worker pids, none of
   machine 1's. Machine 0's membership line names machine 1 and the world 6 -> 4.
2. Machine 2's local rank 1 (rank 5 at start, rank 3 now) is SIGSTOPped: hang detection across
   the machines of generation 1 must find it and name it as rank 3 on machine 2, on machine 2
   (its failure report and its eviction line) and on machine 0 (the membership line of
   generation 2: "evicted: the job's hang verdict names its rank 3"); machine 2 exits 1, machine 0
   goes on at world 2 with the same worker pids, and status shows generation 2, world 2, ranks
   0-1.
Finally machine 0's launcher is interrupted (SIGTERM); no process may be left.

The job trains in generation 0: a restart before the first change (a start-up judged a hang) fails
the trial.

Before this change the status kept generation 0 and world 6 with machine 2's ranks as 4 and 5,
and an in-place job had no hang exchange between machines. Prints one line per trial; exit 1 when
a trial failed, 77 (skipped) without root or ip netns.

Usage: sudo python3 tests/faults/in_place_told.py --launcher build/launcher/accel-launch \\
           --train build/examples/train.bin [--trials N] [--keep DIR]
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))

from cluster import kill_pids  # noqa: E402
from in_place import Run, workers  # noqa: E402
from many_machines import run_trials  # noqa: E402



def newest_attempt(work, run_id, machine):
    """The number of machine `machine`'s newest attempt directory (-1: none)."""
    found = glob.glob(os.path.join(glob.escape(work), f"accel-{run_id}-m{machine}-*"))
    attempts = glob.glob(os.path.join(glob.escape(found[0]), "attempt_*")) if found else []
    return max((int(a.rsplit("_", 1)[1]) for a in attempts), default=-1)


def newest_progress(work, run_id, machine, rank):
    """The step in rank `rank`'s progress file of machine `machine`'s newest attempt (-1: none).
    A start-up starved of CPU on a loaded host may be judged a hang and restart the job, so the
    attempt the workers run in is not always attempt_0."""
    found = glob.glob(os.path.join(glob.escape(work), f"accel-{run_id}-m{machine}-*"))
    attempts = glob.glob(os.path.join(glob.escape(found[0]), "attempt_*")) if found else []
    if not attempts:
        return -1
    newest = max(attempts, key=lambda a: int(a.rsplit("_", 1)[1]))
    try:
        with open(os.path.join(newest, f"rank_{rank}", "progress"), "rb") as f:
            data = f.read(8)
        return int.from_bytes(data, "little") if len(data) == 8 else -1
    except OSError:
        return -1


def status(args, bridge, work, run_id):
    """`accel-launch status --json` on machine 0 (its run directory), parsed; None on failure."""
    found = glob.glob(os.path.join(glob.escape(work), f"accel-{run_id}-m0-*"))
    if not found:
        return None
    out = subprocess.run(["ip", "netns", "exec", bridge.ns[0], args.launcher, "status", found[0],
                          "--json"], capture_output=True, text=True, timeout=30)
    try:
        return json.loads(out.stdout) if out.returncode == 0 else None
    except json.JSONDecodeError:
        return None


def status_table(args, bridge, work, run_id):
    """`accel-launch status` (the table) on machine 0; "" on failure."""
    found = glob.glob(os.path.join(glob.escape(work), f"accel-{run_id}-m0-*"))
    if not found:
        return ""
    out = subprocess.run(["ip", "netns", "exec", bridge.ns[0], args.launcher, "status", found[0]],
                         capture_output=True, text=True, timeout=30)
    return out.stdout if out.returncode == 0 else ""


def await_status(args, bridge, work, run_id, want, timeout):
    """Polls status until want(json) holds; returns (json, seconds) or (last json, None)."""
    start = time.monotonic()
    last = None
    while time.monotonic() < start + timeout:
        last = status(args, bridge, work, run_id)
        if last is not None and want(last):
            return last, time.monotonic() - start
        time.sleep(0.2)
    return last, None


def await_log(run, m, pattern, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, run.log(m))
        if found:
            return found
        time.sleep(0.02)
    return None


def shape(j):
    """The status JSON in short: generation, world, machines, {rank: (machine, pid)}."""
    if j is None:
        return None
    return (j.get("generation"), j.get("world_size"), j.get("num_machines"),
            {r["rank"]: (r["machine"], r["pid"]) for r in j.get("ranks", [])})


def trial(args, bridge, number, work_root):
    work = os.path.join(work_root, f"trial-{number}")
    os.makedirs(work)
    port = 29800 + (number * 3) % 90
    run_id = f"told-{port}"
    job = Run(args, bridge, work, "told", 3, port,
              ["--min_machines", "1", "--max_restarts", "2", "--elastic_in_place",
               "--hang_timeout", "4", "--status_interval", "1"],
              ["--steps", "1000000"])
    notes = []
    prefixes = "output prefixes not checked (train.bin printed no line after the change)"
    deadline = time.monotonic() + args.start_timeout
    while time.monotonic() < deadline and not all(
            newest_progress(work, run_id, r // 2, r) >= args.warm_steps for r in range(6)):
        if any(p.poll() is not None for p in job.procs):
            break
        time.sleep(0.01)
    m0, m1, m2 = (workers(bridge, m) for m in range(3))
    if len(m0) != 2 or len(m1) != 2 or len(m2) != 2:
        bridge.kill_all()
        job.wait(10)
        if args.keep:
            shutil.copytree(work, os.path.join(args.keep, f"trial-{number}"), dirs_exist_ok=True)
        return False, f"not training: workers {m0} {m1} {m2}: {job.log(0)[-400:]!r}"
    at_start = {r: (m, pid) for m, ranks in enumerate((m0, m1, m2)) for r, pid in ranks.items()}
    first, _ = await_status(args, bridge, work, run_id, lambda j: shape(j)[1:] == (6, 3, at_start),
                            20)
    # Generation 0: no restart at start-up (the start-up grace), or the trial fails.
    g = shape(first)[0] if first is not None else 0
    if g != 0 or newest_attempt(work, run_id, 0) != 0:
        notes.append(f"restarted before any change: generation {g}, "
                     f"attempt {newest_attempt(work, run_id, 0)}")
    if shape(first) != (g, 6, 3, at_start):
        notes.append(f"status before any change: {shape(first)}")
    hangs_before = job.log(0).count("hang detected")

    # 1. Machine 1 leaves: machine 2's ranks 4, 5 become 2, 3.
    before_kill = len(job.log(2))
    kill_pids(list(m1.values()))
    if not await_log(job, 0, rf"\[accel\] generation {g + 1}: world 6 -> 4, continuing", 60):
        notes.append(f"no generation {g + 1} line on machine 0")
    want1 = (g + 1, 4, 2, {0: (0, m0[0]), 1: (0, m0[1]), 2: (2, m2[4]), 3: (2, m2[5])})
    got1, seconds1 = await_status(args, bridge, work, run_id, lambda j: shape(j) == want1, 10)
    if seconds1 is None:
        notes.append(f"status after machine 1 left: {shape(got1)}, want {want1}")
    table = status_table(args, bridge, work, run_id)
    if not re.search(rf"^run \S+, generation {g + 1}, 2 machines, 4 ranks$", table, re.M):
        notes.append(f"status table after machine 1 left: {table[:200]!r}")
    # A machine's local rank 0 of train.bin says "DDP overlap off" (on a machine with few cores)
    # when it builds DDP, also after the change: machine 2's must then carry its new prefix.
    overlap = "[accel] DDP overlap off"
    if f"[rank 4] {overlap}" in job.log(2)[:before_kill]:
        await_log(job, 2, re.escape(f"[rank 2] {overlap}"), 10)
        after = job.log(2)[before_kill:]
        if f"[rank 4] {overlap}" in after or f"[rank 2] {overlap}" not in after:
            notes.append("machine 2's output after the change is not prefixed [rank 2]")
        else:
            prefixes = "machine 2's local rank 0 printed as [rank 4], then as [rank 2]"
    if not re.search(rf"membership: generation {g + 1}: machine 1 \(host \S+\) left: evicted: "
                     r"its rank [23] failed; world 6 -> 4 \(2 machines\)", job.log(0)):
        notes.append(f"machine 0 has no membership line for generation {g + 1}")

    # 2. Rank 3 (machine 2's local rank 1) stops: found across machines, named as rank 3.
    os.kill(m2[5], signal.SIGSTOP)
    stopped = time.monotonic()
    codes12 = [None, None]
    while time.monotonic() < stopped + 60 and None in codes12:
        codes12 = [job.procs[1].poll(), job.procs[2].poll()]
        time.sleep(0.05)
    hang_seconds = time.monotonic() - stopped
    if codes12 != [1, 1]:
        notes.append(f"machines 1 and 2 exit codes {codes12} (want [1, 1])")
    if not re.search(rf"hang detected \(attempt {g + 1}\), root cause first:", job.log(2)):
        notes.append(f"machine 2 has no hang report for attempt {g + 1}")
    if not re.search(r"membership: machine 2 \(host \S+\) evicted: the job's hang verdict names "
                     r"its rank 3;", job.log(2)):
        notes.append("machine 2 did not say it was evicted for rank 3")
    if not await_log(job, 0, rf"membership: generation {g + 2}: machine 2 \(host \S+\) left: "
                     r"evicted: the job's hang verdict names its rank 3; world 4 -> 2 "
                     r"\(1 machine\)", 20):
        notes.append("machine 0 has no membership line naming machine 2's rank 3")
    if not await_log(job, 0, rf"\[accel\] generation {g + 2}: world 4 -> 2, continuing", 20):
        notes.append(f"no generation {g + 2} line on machine 0")
    if job.log(0).count("hang detected") != hangs_before:
        notes.append("machine 0 reported a hang of its own")
    want2 = (g + 2, 2, 1, {0: (0, m0[0]), 1: (0, m0[1])})
    got2, seconds2 = await_status(args, bridge, work, run_id, lambda j: shape(j) == want2, 10)
    if seconds2 is None:
        notes.append(f"status after machine 2 left: {shape(got2)}, want {want2}")
    if workers(bridge, 0) != m0:
        notes.append(f"machine 0's worker pids changed: {m0} -> {workers(bridge, 0)}")

    job.procs[0].send_signal(signal.SIGTERM)
    codes = job.wait(60)
    if codes[0] is None:
        notes.append("machine 0 did not stop on SIGTERM")
    ok = not notes
    def secs(x):
        return x if x is None else round(x, 2)
    summary = (f"start at generation {g}, status at generation {g + 1} after {secs(seconds1)} s, "
               f"SIGSTOP -> machine 2 evicted {hang_seconds:.2f} s, status at generation {g + 2} "
               f"after {secs(seconds2)} s, exit codes {codes}"
               f", {prefixes}; machine 0: "
               + "; ".join(re.findall(r"(?:recovered in|first step at world) [^\n]*", job.log(0))))
    if not ok:
        summary += "; " + "; ".join(notes) + "".join(
            f"; m{m} tail {job.log(m)[-700:]!r}" for m in range(3))
        if args.keep:
            shutil.copytree(work, os.path.join(args.keep, f"trial-{number}"), dirs_exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    return ok, summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--warm_steps", type=int, default=8)
    p.add_argument("--start_timeout", type=float, default=120)
    p.add_argument("--keep", default="", help="copy the logs of failed trials here")
    args = p.parse_args()
    def one(number, bridge, work_root):
        ok, note = trial(args, bridge, number, work_root)
        return ok, f"(load {os.getloadavg()[0]:.1f}) {note}", None

    trials = run_trials(3, args.trials, "accel_in_place_told_", one)
    if isinstance(trials, int):
        return trials
    results = [ok for ok, _ in trials]
    print(f"in place, told: {sum(results)}/{len(results)} trials passed")
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
