#!/usr/bin/env python3
"""What the job's status costs the training: train.bin under accel-launch with the status on
(status_interval 1 s: ranks sampled and published every second, machine 0's status line drawn)
against the same run with it off (status_interval 0; hang detection on, as by default, so the
workers write the same progress file), and with everything off (status_interval 0,
hang_timeout 0: no progress file at all), alternating the order every round, --runs rounds.

Two measures of the cost:
  - samples/s: the median of each variant, and the median over rounds of the ratio within a
    round (each round runs every variant back to back, so a slow drift of the machine cancels);
  - the launcher's own CPU time (utime + stime of the accel-launch process, all its threads,
    read from /proc every 20 ms while it runs), per second of the run: what the status can take
    from the workers at most, on a machine whose cores the workers fill.

By default each launcher's stderr is a pseudo-terminal, so the live line is redrawn in place as
a user sees it (--pipe: stderr is a pipe, plain status lines every 5 s instead).
Prints a table, writes bench/results/status_bench.{csv,json}. Not a test: numbers, not verdicts.
Usage: /usr/bin/python3 bench/status_bench.py [--build build] [--runs 5] [--steps 20000] [--quick]
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
    "status off": ["--status_interval", "0"],
    "all off": ["--status_interval", "0", "--hang_timeout", "0"],
}
TICKS = os.sysconf("SC_CLK_TCK")


def own_cpu_seconds(pid):
    """utime + stime of `pid` itself (all its threads, not its children); None once gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


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
    launcher_cpu = 0.0
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=follower if tty else subprocess.PIPE, text=True)
        # Drain both pipes on threads while this one samples the launcher's CPU time.
        pipes = {"stdout": [], "stderr": []}
        drains = [threading.Thread(target=lambda n=n, f=f: pipes[n].append(f.read()), daemon=True)
                  for n, f in (("stdout", proc.stdout), ("stderr", proc.stderr)) if f]
        for t in drains:
            t.start()
        while proc.poll() is None:
            cpu = own_cpu_seconds(proc.pid)
            if cpu is not None:
                launcher_cpu = cpu
            if time.perf_counter() - start > timeout:
                proc.kill()
                raise RuntimeError(f"{' '.join(cmd)} ran past {timeout} s")
            time.sleep(0.02)
        for t in drains:
            t.join()
        proc.stdout = "".join(pipes["stdout"])
        proc.stderr = "".join(pipes["stderr"])
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
    result["launcher_cpu_s"] = launcher_cpu
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--runs", type=int, default=5, help="rounds; each runs every variant once")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--pipe", action="store_true", help="stderr is a pipe, not a terminal")
    p.add_argument("--quick", action="store_true", help="2 rounds, 40 steps: checks it runs")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    a = p.parse_args()
    runs, steps, warmup = (2, 40, 5) if a.quick else (a.runs, a.steps, a.warmup)
    results = {v: [] for v in VARIANTS}
    for i in range(runs):
        order = list(VARIANTS) if i % 2 == 0 else list(reversed(VARIANTS))
        for variant in order:
            r = run_once(a.build, variant, a.processes, steps, warmup, not a.pipe, 900)
            results[variant].append(r)
            print(f"round {i + 1}/{runs} {variant:<11} {r['samples_per_sec']:10.1f} samples/s "
                  f"({r['wall_s']:.1f} s, launcher CPU {r['launcher_cpu_s']:.2f} s)", flush=True)

    def med(v, key):
        return statistics.median(r[key] for r in results[v])

    def cpu_share(v):  # the launcher's CPU per second of the run, in % of the machine's cores
        return statistics.median(r["launcher_cpu_s"] / r["wall_s"] for r in results[v]) * 100 / (
            os.cpu_count() or 1)

    def paired_cost(base):  # median over rounds of (base - on) / base, in %
        return statistics.median(
            (b["samples_per_sec"] - o["samples_per_sec"]) / b["samples_per_sec"] * 100
            for o, b in zip(results["status on"], results[base]))

    summary = {}
    print(f"\n{'variant':<12}{'median samples/s':>18}{'launcher CPU s':>16}"
          f"{'% of cores':>12}   samples/s of each round")
    for v in VARIANTS:
        summary[v] = {"median_samples_per_sec": med(v, "samples_per_sec"),
                      "median_launcher_cpu_s": med(v, "launcher_cpu_s"),
                      "launcher_cpu_percent_of_cores": cpu_share(v)}
        print(f"{v:<12}{summary[v]['median_samples_per_sec']:>18.1f}"
              f"{summary[v]['median_launcher_cpu_s']:>16.2f}{cpu_share(v):>11.3f}%   "
              f"{' '.join('%.0f' % r['samples_per_sec'] for r in results[v])}")
    costs = {}
    for base in ("status off", "all off"):
        costs[base] = {
            "medians_percent": (med(base, "samples_per_sec") - med("status on", "samples_per_sec"))
            / med(base, "samples_per_sec") * 100,
            "paired_percent": paired_cost(base),
            "launcher_cpu_percent_of_cores": cpu_share("status on") - cpu_share(base),
        }
        print(f"status on vs {base}: {costs[base]['medians_percent']:+.2f}% samples/s (medians), "
              f"{costs[base]['paired_percent']:+.2f}% (median of the rounds' ratios); the launcher's "
              f"extra CPU {costs[base]['launcher_cpu_percent_of_cores']:+.3f}% of the cores "
              f"(positive = slower / more with the status on; goal < 1%)")
    print(f"{'pipe' if a.pipe else 'terminal'}, {a.processes} processes, {steps} steps, "
          f"{os.cpu_count()} cores")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "status_bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "round", "samples_per_sec", "wall_s", "launcher_cpu_s"])
        for v in VARIANTS:
            for i, r in enumerate(results[v]):
                w.writerow([v, i, r["samples_per_sec"], r["wall_s"], r["launcher_cpu_s"]])
    with open(os.path.join(a.out, "status_bench.json"), "w") as f:
        json.dump({"steps": steps, "processes": a.processes, "tty": not a.pipe,
                   "summary": summary, "cost_of_status_vs": costs,
                   "runs": {v: [{k: r[k] for k in ("samples_per_sec", "wall_s", "launcher_cpu_s")}
                                for r in results[v]] for v in VARIANTS},
                   "nproc": os.cpu_count()}, f, indent=2)
    print(f"wrote {a.out}/status_bench.csv and status_bench.json")


if __name__ == "__main__":
    sys.exit(main())
