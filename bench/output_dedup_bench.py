#!/usr/bin/python3
"""output_dedup_bench: what console de-duplication costs a chatty job.

One machine, N CPU ranks (default 8) of a Python worker that does a fixed amount of work per step
and prints, every step, the same warning as every other rank and a loss line of its own (the
pattern de-duplication is for). Runs the job alternately with de-duplication on (the default) and
off (--no-dedup_output), --reps times each, console to a file, and reports per mode the median
wall time of the job and the launcher's own CPU seconds (utime + stime, from /proc, sampled until
it exits), and the paired on/off wall-time ratio. Writes bench/results/output_dedup_bench.json.
Take `flock` on a shared machine so that nothing else runs meanwhile, and note the load.

Usage: bench/output_dedup_bench.py --launcher build/launcher/accel-launch [--ranks 8]
       [--steps 2000] [--work 20000] [--reps 5]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = r'''
import os, sys
steps, work = int(sys.argv[1]), int(sys.argv[2])
rank = int(os.environ["RANK"])
acc = 0
for step in range(steps):
    acc += sum(i * i for i in range(work)) % 7
    print(f"UserWarning: the same warning from every rank, step {step % 10}", flush=True)
    print(f"rank {rank} step {step} loss {acc / (step + 1):.4f}", flush=True)
'''


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(args, work: str, dedup: bool) -> tuple:
    argv = [args.launcher, "--use_cpu", "--num_processes", str(args.ranks), "--hang_timeout", "0",
            "--status_interval", "0"]
    if not dedup:
        argv.append("--no-dedup_output")
    argv += [f"{work}/worker.py", str(args.steps), str(args.work)]
    with open(f"{work}/out", "w") as out, open(f"{work}/err", "w") as err:
        start = time.monotonic()
        p = subprocess.Popen(argv, stdout=out, stderr=err)
        cpu = 0.0
        while p.poll() is None:
            try:
                cpu = cpu_seconds(p.pid)
            except (OSError, IndexError):
                pass
            time.sleep(0.02)
        wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"the job failed ({p.returncode}): {open(f'{work}/err').read()[-2000:]}")
    lines = sum(1 for _ in open(f"{work}/out"))
    return wall, cpu, lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--work", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    rows = {True: [], False: []}
    with tempfile.TemporaryDirectory() as work:
        with open(f"{work}/worker.py", "w") as f:
            f.write(WORKER)
        for rep in range(args.reps):
            for dedup in ((True, False) if rep % 2 == 0 else (False, True)):
                rows[dedup].append(run(args, work, dedup))
    ratios = [on[0] / off[0] for on, off in zip(rows[True], rows[False])]
    result = {"ranks": args.ranks, "steps": args.steps, "work": args.work, "reps": args.reps,
              "load_before_after": os.getloadavg()[0]}
    print(f"{args.ranks} ranks x {args.steps} steps, 2 lines per rank and step, {args.reps} reps")
    print("| dedup | median wall s | median launcher CPU s | console lines |")
    print("|---|---|---|---|")
    for dedup in (True, False):
        walls = [r[0] for r in rows[dedup]]
        cpus = [r[1] for r in rows[dedup]]
        name = "on" if dedup else "off"
        result[name] = {"wall_s": walls, "launcher_cpu_s": cpus, "lines": rows[dedup][0][2]}
        print(f"| {name} | {statistics.median(walls):.3f} | {statistics.median(cpus):.3f} | "
              f"{rows[dedup][0][2]} |")
    result["paired_wall_ratio_median"] = statistics.median(ratios)
    print(f"paired wall ratio on/off: median {statistics.median(ratios):.4f} "
          f"(min {min(ratios):.4f}, max {max(ratios):.4f}); load {os.getloadavg()}")
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/output_dedup_bench.json", "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
