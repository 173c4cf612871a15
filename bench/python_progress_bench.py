#!/usr/bin/env python3
"""What the Python progress module (launcher/python/) costs: ddp_bench's Python side
(bench/torch_mlp.py, DDP over gloo on CPU, same models, same OMP_NUM_THREADS rule) under
accel-launch with the module on and off (python_progress), in alternating rounds. Each round runs
both, in an order that alternates from round to round; the paired ratio on/off of a round's
samples/s cancels what the machine was doing meanwhile. Reports the median ratio over --rounds
(default 7) per model and process count, with each side's median; the criterion is
median ratio >= 0.99 (less than 1 % slower). It also reports the paired ratio of the CPU time the
run took (launcher and workers, from getrusage), which a loaded machine disturbs less than wall
time: the CPU the module costs, whatever else runs.

Prints a table and writes bench/results/python_progress_bench.json. Not a test: numbers.
Usage: /usr/bin/python3 bench/python_progress_bench.py [--build build] [--rounds 7]
       [--steps 300] [--models 64-128x3-10,784-1024x3-10] [--worlds 2]
"""
import argparse
import json
import os
import resource
import statistics
import sys

from ddp_bench import HERE, MODELS, PY, run, threads_per_process, torch_mlp

ROOT = os.path.dirname(HERE)


def python_side(build, model, world, steps, warmup, progress):
    """Returns (samples/s, CPU seconds of the launcher and its workers together)."""
    cmd = [f"{build}/launcher/accel-launch", "--use_cpu", "--num_processes", str(world),
           "--mixed_precision", "no", "--python", PY, f"--python_progress={str(progress).lower()}"]
    cmd += torch_mlp(model, world, steps, warmup)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    samples = run(cmd, {"OMP_NUM_THREADS": threads_per_process(world)})["samples_per_sec"]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return samples, cpu


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--worlds", default="2")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    a = p.parse_args()
    rows = []
    for model in a.models.split(","):
        for world in (int(w) for w in a.worlds.split(",")):
            on, off, ratios, cpu_ratios = [], [], [], []
            for r in range(a.rounds):
                order = (True, False) if r % 2 == 0 else (False, True)
                got = {flag: python_side(a.build, model, world, a.steps, a.warmup, flag)
                       for flag in order}
                on.append(got[True][0])
                off.append(got[False][0])
                ratios.append(got[True][0] / got[False][0])
                cpu_ratios.append(got[True][1] / got[False][1])
                print(f"{model} x{world} round {r + 1}: on {got[True][0]:.0f} off "
                      f"{got[False][0]:.0f} samples/s, ratio {ratios[-1]:.4f}; CPU s on "
                      f"{got[True][1]:.2f} off {got[False][1]:.2f}", file=sys.stderr, flush=True)
            rows.append({"model": model, "processes": world, "rounds": a.rounds,
                         "steps": a.steps, "on_median": statistics.median(on),
                         "off_median": statistics.median(off),
                         "ratio_median": statistics.median(ratios), "ratios": ratios,
                         "cpu_ratio_median": statistics.median(cpu_ratios),
                         "cpu_ratios": cpu_ratios, "on": on, "off": off})
    print(f"{'model':<16}{'procs':>6}{'on samples/s':>14}{'off samples/s':>15}"
          f"{'on/off paired':>15}{'min':>7}{'max':>7}{'CPU on/off paired':>19}")
    for r in rows:
        print(f"{r['model']:<16}{r['processes']:>6}{r['on_median']:>14.0f}{r['off_median']:>15.0f}"
              f"{r['ratio_median']:>15.4f}{min(r['ratios']):>7.3f}{max(r['ratios']):>7.3f}"
              f"{r['cpu_ratio_median']:>19.4f}")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "python_progress_bench.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
