#!/usr/bin/python3
"""Hang verdict trials (issue 35): N trials, each a worker SIGSTOPped in a two-machine job of
2 x 2 processes of train.bin (--hang_timeout 5), drawn in turn from the cases below, at a quiet
machine or under a load of busy loops of this script's own (--load N). A trial passes when the
job ends in time and both machines name the stopped rank by its process state; under --nnodes
1:2 (the elastic cases) when only the stopped rank's machine is evicted and the other trains on.

  cases: the fast steps (--batch-size 2, steps of milliseconds) and the fault suite's model
  (--batch-size 8), a worker of machine 1 or machine 0 stopped, machine 1's launcher starved of
  CPU past the other machine's report wait, and the elastic eviction at both step speeds.

Prints one line per trial and a table; exit 0 when every trial passed, 1 otherwise, 77 when the
namespaces cannot be made (tests/testing/skip.py). CI runs a few trials; the criterion's run is
`hang_trials.py --trials 50` and `--trials 50 --load 8`, a person's (README "Reliability").

Usage: hang_trials.py --launcher L --train T --intruder I [--trials N] [--load N] [--keep DIR]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))

from cluster import Cluster  # noqa: E402
from job import Tools  # noqa: E402
from run_faults import table  # noqa: E402
from scenarios import SCENARIOS, Context, Outcome  # noqa: E402
from skip import skip  # noqa: E402

# hang-5s is the fault suite's model with rank 3 (machine 1) stopped.
CASES = ["hang-stop-fast-m1", "hang-5s", "hang-stop-fast-m0", "hang-stop-model-m0",
         "hang-stop-starved-long-m1", "elastic-hang-evict", "elastic-hang-evict-model"]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--intruder", required=True)
    p.add_argument("--trials", type=int, default=len(CASES), help="in all, the cases in turn")
    p.add_argument("--load", type=int, default=0, help="busy loops running meanwhile")
    p.add_argument("--cases", default=",".join(CASES), help="comma list")
    p.add_argument("--keep", default="", help="copy the logs of failed trials here")
    args = p.parse_args()
    args.cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in args.cases if c not in SCENARIOS]
    if args.trials < 1 or args.load < 0 or unknown or not args.cases:
        p.error(f"--trials >= 1, --load >= 0, known cases only (unknown: {unknown})")
    return args


def start_load(n: int) -> list:
    """`n` busy loops, each its own process (ended by pid)."""
    loop = "while True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(n)]


def stop_load(procs: list) -> None:
    for p in procs:
        p.kill()
        p.wait()


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> int:
    args = parse_args()
    if os.geteuid() != 0:
        return skip(f"the hang trials need root for ip netns (euid {os.geteuid()})")
    if shutil.which("ip") is None:
        return skip("iproute2 missing")
    tools = Tools(args.launcher, args.train, args.intruder, "", "")
    cluster = Cluster()
    work = tempfile.mkdtemp(prefix="accel_hang_trials_")
    results = {c: [] for c in args.cases}
    load = []
    try:
        try:
            cluster.up()
        except Exception as e:  # noqa: BLE001 - any failure to build the namespaces skips
            return skip(f"cannot create network namespaces: {e}")
        ctx = Context(cluster, tools, work)
        load = start_load(args.load)
        for trial in range(args.trials):
            name = args.cases[trial % len(args.cases)]
            try:
                outcome = SCENARIOS[name](ctx)
            except Exception:  # noqa: BLE001 - a crash in a trial is a failed trial
                traceback.print_exc()
                outcome = Outcome(0, False, False, False, "the trial crashed")
            left = cluster.kill_all()
            if left:
                outcome.ok = False
                outcome.note += f" {left} process(es) left behind"
            good = outcome.ok and outcome.root_ok
            print(f"trial {trial + 1} {name}: {'ok' if good else 'FAILED'} {outcome.seconds:.2f} s"
                  f" load {loadavg()} {outcome.note}", file=sys.stderr, flush=True)
            if not good and args.keep and ctx.last_work:
                shutil.copytree(ctx.last_work, os.path.join(args.keep, f"{name}-{trial + 1}"),
                                dirs_exist_ok=True)
            results[name].append(outcome)
    finally:
        stop_load(load)
        cluster.down()
        shutil.rmtree(work, ignore_errors=True)
    rows = [(name, outcomes) for name, outcomes in results.items() if outcomes]
    print(table(rows))
    passed = sum(o.ok and o.root_ok for _, outcomes in rows for o in outcomes)
    print(f"{passed} of {args.trials} trials named the stopped rank (busy loops: {args.load})")
    return 0 if passed == args.trials else 1


if __name__ == "__main__":
    sys.exit(main())
