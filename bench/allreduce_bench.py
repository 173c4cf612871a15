#!/usr/bin/env python3
"""All-reduce latency: libaccel (shared memory between the ranks of one machine, and Gloo with
ACCEL_SHM=off) vs torch.distributed Gloo all_reduce under torchrun, float32 SUM, 2 processes,
4 KB to 64 MB, with a plain memcpy of each size (timed by allreduce_bench in the same run) as
the floor. The three variants run alternately, --runs times (default 5); the table holds the
median over runs of each run's median.

Writes bench/results/allreduce_bench.{csv,json} and, when gnuplot is installed,
bench/results/allreduce_bench.png. Not a test: numbers, not verdicts.
Usage: /usr/bin/python3 bench/allreduce_bench.py [--build build] [--runs 5] [--quick]
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"


def run(cmd, env=None, timeout=900):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    rows = {}
    for line in proc.stdout.splitlines():
        line = line.strip()
        if "{" in line and line.endswith("}"):
            r = json.loads(line[line.index("{"):])
            rows[r["bytes"]] = r
    if not rows:
        raise RuntimeError(f"no results from {' '.join(cmd)}:\n{proc.stdout[-2000:]}")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="4 KB to 256 KB, 1 run: end-to-end check")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    a = p.parse_args()
    sizes = ["--min-bytes", "4096", "--max-bytes", str(256 << 10 if a.quick else 64 << 20)]
    if a.quick:
        sizes += ["--budget-mb", "16"]
    runs = 1 if a.quick else a.runs
    launch = [f"{a.build}/launcher/accel-launch", "--use_cpu", "--num_processes", str(a.world),
              f"{a.build}/bench/allreduce_bench"] + sizes
    variants = {
        "accel shm": lambda: run(launch),
        "accel gloo": lambda: run(launch, {"ACCEL_SHM": "off"}),
        "torch gloo": lambda: run([PY, f"{HERE}/torchrun_compat.py", "--standalone",
                                   f"--nproc_per_node={a.world}", "--monitor_interval", "0.1",
                                   f"{HERE}/torch_allreduce.py"] + sizes,
                                  {"OMP_NUM_THREADS": "1"}),
    }
    results = {name: [] for name in variants}
    for i in range(runs):
        order = list(variants) if i % 2 == 0 else list(reversed(variants))
        for name in order:
            results[name].append(variants[name]())
            print(f"run {i + 1}/{runs} {name} done", file=sys.stderr)

    def med(name, size, key="median_us"):
        return statistics.median(r[size][key] for r in results[name])

    rows = []
    for size in sorted(results["accel shm"][0]):
        rows.append({"bytes": size, "accel_shm_us": med("accel shm", size),
                     "accel_gloo_us": med("accel gloo", size),
                     "torch_gloo_us": med("torch gloo", size),
                     "memcpy_us": med("accel shm", size, "memcpy_us")})
    print(f"\n{'bytes':>10}{'accel shm us':>14}{'accel gloo us':>15}{'torch gloo us':>15}"
          f"{'memcpy us':>11}{'shm/memcpy':>12}{'torch/shm':>11}")
    for r in rows:
        print(f"{r['bytes']:>10}{r['accel_shm_us']:>14.1f}{r['accel_gloo_us']:>15.1f}"
              f"{r['torch_gloo_us']:>15.1f}{r['memcpy_us']:>11.1f}"
              f"{r['accel_shm_us'] / r['memcpy_us']:>11.2f}x"
              f"{r['torch_gloo_us'] / r['accel_shm_us']:>10.2f}x")
    os.makedirs(a.out, exist_ok=True)
    csv_path = os.path.join(a.out, "allreduce_bench.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "allreduce_bench.json"), "w") as f:
        json.dump({"world": a.world, "runs": runs, "rows": rows, "nproc": os.cpu_count()}, f,
                  indent=2)
    if shutil.which("gnuplot"):
        png = os.path.join(a.out, "allreduce_bench.png")
        script = f"""set terminal png size 900,600
set output '{png}'
set datafile separator ','
set logscale xy
set key top left
set xlabel 'bytes (float32 SUM, {a.world} processes)'
set ylabel 'median microseconds'
plot '{csv_path}' every ::1 using 1:2 with linespoints title 'accel shm', \\
     '' every ::1 using 1:3 with linespoints title 'accel gloo', \\
     '' every ::1 using 1:4 with linespoints title 'torch gloo', \\
     '' every ::1 using 1:5 with lines dashtype 2 title 'memcpy'
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"wrote {png}")
    print(f"wrote {csv_path}")


if __name__ == "__main__":
    sys.exit(main())
