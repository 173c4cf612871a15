#!/usr/bin/env python3
"""No-regression check of a libaccel change: ddp_bench's train.bin runs (accel-launch --use_cpu,
2 processes, both MLPs, accumulation 2, SGD) and allreduce_bench's all-reduces (shared memory,
and Gloo with ACCEL_SHM=off; 4 KB to 4 MB) with two builds of libaccel.so, alternating A, B,
A, B, ... --runs times; the same accel-launch, train.bin and allreduce_bench binaries (from
--build), only LD_LIBRARY_PATH differs (their RUNPATH yields to it). Prints every run's numbers
and the medians. Not a test.

Usage: /usr/bin/python3 bench/libaccel_ab.py --build ../base/build \\
           --a ../base/build/worker --b build/worker [--runs 5] [--steps 200] [--warmup 10]
           [--only ddp|allreduce]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import allreduce_bench  # noqa: E402
import ddp_bench  # noqa: E402


def allreduce_ab(a):
    """allreduce_bench's median microseconds per size, A vs B, for shm and Gloo."""
    launch = [f"{a.build}/launcher/accel-launch", "--use_cpu", "--num_processes", str(a.world),
              f"{a.build}/bench/allreduce_bench", "--min-bytes", "4096",
              "--max-bytes", str(4 << 20)]
    for variant, extra in (("shm", {}), ("gloo", {"ACCEL_SHM": "off"})):
        got = {"A": [], "B": []}
        for _ in range(a.runs):
            for side, lib in (("A", a.a), ("B", a.b)):
                env = dict(extra, LD_LIBRARY_PATH=os.path.abspath(lib))
                got[side].append(allreduce_bench.run(launch, env))
        print(f"all-reduce over {variant}, {a.world} processes (median us of {a.runs} runs' "
              f"medians; every run's):")
        for size in sorted(got["A"][0]):
            runs = {side: [r[size]["median_us"] for r in got[side]] for side in "AB"}
            ma, mb = statistics.median(runs["A"]), statistics.median(runs["B"])
            print(f"  {size:>8} B: A {ma:8.1f}  B {mb:8.1f}  (B/A {mb / ma:.3f})   A "
                  + " ".join(f"{v:.0f}" for v in runs["A"]) + "  B "
                  + " ".join(f"{v:.0f}" for v in runs["B"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, help="build dir with accel-launch and train.bin")
    p.add_argument("--a", required=True, help="directory of libaccel.so A (the baseline)")
    p.add_argument("--b", required=True, help="directory of libaccel.so B (the change)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--only", choices=["ddp", "allreduce"])
    a = p.parse_args()
    if a.only != "ddp":
        allreduce_ab(a)
    if a.only == "allreduce":
        return 0
    for model in ddp_bench.MODELS:
        got = {"A": [], "B": []}
        for _ in range(a.runs):
            for side, lib in (("A", a.a), ("B", a.b)):
                env = {"LD_LIBRARY_PATH": os.path.abspath(lib)}
                r = ddp_bench.ours(a.build, model, a.world, a.steps, a.warmup, env)
                got[side].append(r["samples_per_sec"])
        ma, mb = statistics.median(got["A"]), statistics.median(got["B"])
        print(f"{model}, {a.world} processes: A median {ma:,.0f} samples/s, B median {mb:,.0f} "
              f"(B/A {mb / ma:.3f})")
        for side in "AB":
            print(f"  {side} runs: " + " ".join(f"{v:,.0f}" for v in got[side]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
