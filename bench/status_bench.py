#!/usr/bin/env python3
"""What the job's status costs the training: train.bin under accel-launch with the status on
(status_interval 1 s: ranks sampled and published every second, machine 0's status line drawn)
against the same run with it off (status_interval 0, hang_timeout 0: no progress file at all),
alternating the two, --runs times each; the median samples/s of each and the difference.

By default each launcher's stderr is a pseudo-terminal, so the live line is redrawn in place as
a user sees it (--pipe: stderr is a pipe, plain status lines every 5 s instead).
Prints a table, writes bench/results/status_bench.{csv,json}. Not a test: numbers, not verdicts.
Usage: /usr/bin/python3 bench/status_bench.py [--build build] [--runs 5] [--steps 300] [--quick]
"""
import argparse
import csv
import json
import os
import pty
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# input_dim, hidden, layers, classes, batch: small enough that a step is a few milliseconds, so
# that the status's share of the CPU would show.
SIZES = ["--input-dim", "64", "--hidden", "128", "--layers", "4", "--classes", "10",
         "--batch-size", "16"]
VARIANTS = {
    "status on": ["--status_interval", "1"],
    "status off": ["--status_interval", "0", "--hang_timeout", "0"],
}


def last_json(text):
    for line in reversed(text.splitlines()):
        if "{" in line and '"samples_per_sec"' in line:
            return json.loads(line[line.index("{"):])
    raise RuntimeError("no JSON line in output:\n" + text[-2000:])


def run_once(build, variant, processes, steps, warmup, tty, timeout):
    cmd = [f"{build}/launcher/accel-launch", "--use_cpu", "--num_processes", str(processes),
           "--mixed_precision", "no", *VARIANTS[variant], f"{build}/examples/train.bin", *SIZES,
           "--steps", str(steps), "--warmup", str(warmup), "--samples", str(64 * 16 * processes)]
    drained = []
    reader = None
    if tty:  # a thread drains the terminal while the launcher runs (a full one would block it)
        leader, follower = pty.openpty()

        def drain():
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                drained.append(chunk)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=follower if tty else subprocess.PIPE, text=True,
                              timeout=timeout)
    finally:
        if tty:
            os.close(follower)
            reader.join(timeout=5)
            os.close(leader)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        err = proc.stderr if not tty else b"".join(drained).decode(errors="replace")
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-3000:]}")
    result = last_json(proc.stdout)
    result["wall_s"] = wall
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--runs", type=int, default=5, help="runs of each variant, alternating")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--pipe", action="store_true", help="stderr is a pipe, not a terminal")
    p.add_argument("--quick", action="store_true", help="2 runs each, 40 steps: checks it runs")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    a = p.parse_args()
    runs, steps, warmup = (2, 40, 5) if a.quick else (a.runs, a.steps, a.warmup)
    samples = {v: [] for v in VARIANTS}
    for i in range(runs):
        order = list(VARIANTS) if i % 2 == 0 else list(reversed(VARIANTS))
        for variant in order:
            r = run_once(a.build, variant, a.processes, steps, warmup, not a.pipe, 600)
            samples[variant].append(r["samples_per_sec"])
            print(f"run {i + 1}/{runs} {variant:<11} {r['samples_per_sec']:10.1f} samples/s "
                  f"({r['wall_s']:.1f} s)", flush=True)
    on = statistics.median(samples["status on"])
    off = statistics.median(samples["status off"])
    cost = (off - on) / off * 100
    print(f"\n{'variant':<12}{'median samples/s':>18}{'runs':>40}")
    for v in VARIANTS:
        print(f"{v:<12}{statistics.median(samples[v]):>18.1f}   "
              f"{' '.join(f'{x:.0f}' for x in samples[v])}")
    print(f"status cost: {cost:+.2f}% samples/s (positive = slower with the status on; "
          f"goal < 1%), {'pipe' if a.pipe else 'terminal'}, {a.processes} processes, "
          f"{steps} steps")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "status_bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "run", "samples_per_sec"])
        for v in VARIANTS:
            for i, x in enumerate(samples[v]):
                w.writerow([v, i, x])
    with open(os.path.join(a.out, "status_bench.json"), "w") as f:
        json.dump({"steps": steps, "processes": a.processes, "tty": not a.pipe,
                   "median": {"status on": on, "status off": off}, "cost_percent": cost,
                   "runs": samples, "nproc": os.cpu_count()}, f, indent=2)
    print(f"wrote {a.out}/status_bench.csv and status_bench.json")


if __name__ == "__main__":
    sys.exit(main())
