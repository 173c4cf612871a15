#!/usr/bin/python3
"""Issue 35's membership changes one after another, for workers the launcher restarts: 3 machines
(network namespaces on one bridge) x 2 train.bin workers, --min_machines 1 --rdzv_backend c10d
--max_restarts 0 --elastic_in_place=false; machine 0 starts alone, machine 1 joins once it
trains (generation 1, world 4), machine 2 once both train (generation 2, world 6).

A trial passes when every rank of generation 2 trains (its attempt's progress file counts
--steps_each steps), no launcher ends before the ^C that stops the job, and each launcher leaves
no process behind. Joins spend no restart, so TORCHELASTIC_RESTART_COUNT stays 0 in every
generation: a worker that picked its store namespace from it read generation 1's keys in
generation 2 (gloo "address size mismatch 136 vs 68", "Connection refused").
Prints one line per trial; exit 1 when a trial failed, 77 (skipped) without root or ip netns.

Usage: sudo python3 tests/faults/elastic_joins.py --launcher build/launcher/accel-launch \\
           --train build/examples/train.bin [--trials N] [--keep DIR]
"""
import argparse
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))

from in_place import Run, progress  # noqa: E402
from job import FOREVER, TRAIN_ARGS  # noqa: E402
from many_machines import run_trials  # noqa: E402


def wait_for(condition, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def trial(args, bridge, number, work_root):
    work = os.path.join(work_root, f"trial-{number}")
    os.makedirs(work)
    port = 29600 + (number * 3) % 90
    run_id = f"joins-{port}"
    job = Run(args, bridge, work, "joins", 3, port,
              ["--min_machines", "1", "--rdzv_backend", "c10d", "--max_restarts", "0",
               "--elastic_in_place=false"],
              ["--steps", str(FOREVER)], start=[0], train_args=TRAIN_ARGS)
    notes = []
    began = time.monotonic()

    def trains(generation, machines):
        return all(progress(work, run_id, r // 2, r, attempt=generation) >= args.steps_each
                   for r in range(2 * machines))

    def ended():
        return [m for m, p in enumerate(job.procs) if p is not None and p.poll() is not None]

    for generation in range(3):
        if generation > 0:
            job.start_machine(generation)
        if not wait_for(lambda: trains(generation, generation + 1) or ended(),
                        args.start_timeout) or ended():
            notes.append(f"generation {generation} (world {2 * generation + 2}) never trained"
                         + (f"; launchers {ended()} ended" if ended() else ""))
            break
    seconds = time.monotonic() - began
    try:
        os.kill(job.procs[0].pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    codes = job.wait(60)
    if None in codes:
        notes.append(f"launchers still running 60 s after ^C: {codes}")
        bridge.kill_all()
        job.wait(10)
    ok = not notes
    if not ok and args.keep:
        shutil.copytree(work, os.path.join(args.keep, f"trial-{number}"), dirs_exist_ok=True)
    line = f"{seconds:.1f} s to generation 2 training (load {os.getloadavg()[0]:.1f})"
    if not ok:
        line += "; " + "; ".join(notes) + "".join(
            f"; m{m} tail {job.log(m)[-500:]!r}" for m in range(3) if job.procs[m] is not None)
    shutil.rmtree(work, ignore_errors=True)
    return ok, line, None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--steps_each", type=int, default=5,
                   help="steps every rank of a generation trains before the next machine starts")
    p.add_argument("--start_timeout", type=float, default=120)
    p.add_argument("--keep", default="", help="copy the logs of failed trials here")
    args = p.parse_args()
    trials = run_trials(3, args.trials, "accel_elastic_joins_",
                        lambda number, bridge, work_root: trial(args, bridge, number, work_root))
    if isinstance(trials, int):
        return trials
    results = [ok for ok, _ in trials]
    print(f"elastic joins: {sum(results)}/{len(results)} trials passed")
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
