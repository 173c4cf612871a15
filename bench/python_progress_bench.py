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

Prints a table (with the load average over the rounds) and writes
bench/results/python_progress_bench.json. Not a test: numbers.
--blocks measures on and off inside one run instead (python_progress_blocks.py: the module's
wrappers switched every --block steps on every rank; --pairs paired ratios a fraction of a second
apart, which resolve well under 1 % where whole runs, seconds apart, do not on a shared machine),
with the CPU time per step they add.
--module-dir DIR measures the module in DIR (launcher/python) instead of accel-launch's own.
Usage: /usr/bin/python3 bench/python_progress_bench.py [--build build] [--rounds 7]
       [--steps 300] [--models 64-128x3-10,784-1024x3-10] [--worlds 2] [--module-dir DIR]
       /usr/bin/python3 bench/python_progress_bench.py --blocks [--block 50] [--pairs 40]
"""
import argparse
import json
import os
import resource
import statistics
import sys

from ddp_bench import HERE, MODELS, PY, run, threads_per_process, torch_mlp

ROOT = os.path.dirname(HERE)


def launch(a, world, progress):
    """accel-launch's command line and environment for a run with the module on or off. With
    --module-dir the launcher's own module is off both ways and "on" puts that directory (e.g. the
    source's launcher/python) first on PYTHONPATH, as the launcher would: a change to the module
    is measured without rebuilding accel-launch."""
    cmd = [f"{a.launcher or a.build + '/launcher/accel-launch'}", "--use_cpu", "--num_processes",
           str(world), "--mixed_precision", "no", "--python", PY]
    env = {"OMP_NUM_THREADS": threads_per_process(world)}
    if a.module_dir:
        cmd.append("--python_progress=false")
        if progress:
            env["PYTHONPATH"] = os.pathsep.join(
                [os.path.abspath(a.module_dir)] + ([os.environ["PYTHONPATH"]]
                                                   if os.environ.get("PYTHONPATH") else []))
    else:
        cmd.append(f"--python_progress={str(progress).lower()}")
    return cmd, env


def python_side(a, model, world, progress):
    """Returns (samples/s, CPU seconds of the launcher and its workers together)."""
    cmd, env = launch(a, world, progress)
    cmd += torch_mlp(model, world, a.steps, a.warmup)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    samples = run(cmd, env)["samples_per_sec"]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return samples, cpu


# --blocks: the module's cost inside one run (bench/python_progress_blocks.py): its wrappers
# switched off and on every --block steps, all ranks together, in ABBA order; each pair of blocks
# is one paired ratio, a fraction of a second apart, so the machine's drift cancels far better
# than between whole runs.
def blocks(a):
    rows = []
    for model in a.models.split(","):
        for world in (int(w) for w in a.worlds.split(",")):
            if world == 1:  # the module's own CPU per step: no launcher, no peer, one thread
                cmd = [PY]
                env = {"OMP_NUM_THREADS": "1", "ACCEL_PROGRESS_FILE": os.path.join(
                    a.out, f"progress.{os.getpid()}"), "PYTHONPATH": os.path.abspath(
                        a.module_dir or os.path.join(ROOT, "launcher", "python"))}
                os.makedirs(a.out, exist_ok=True)
            else:
                cmd, env = launch(a, world, True)
            cmd += [os.path.join(HERE, "python_progress_blocks.py"), "--model", model,
                    "--block", str(a.block), "--pairs", str(a.pairs)]
            load = os.getloadavg()[0]
            got = run(cmd, env)
            ratios = [p["wall_off"] / p["wall_on"] for p in got["pairs"]]
            steps = a.block * world  # optimizer steps per block, all processes together
            added = [(p["cpu_on"] - p["cpu_off"]) / steps * 1e6 for p in got["pairs"]]
            cpu_ratios = [p["cpu_on"] / p["cpu_off"] for p in got["pairs"]]
            off_step = statistics.median(p["wall_off"] for p in got["pairs"]) / a.block * 1e6
            # Interference only ever adds time: each side's fastest tenth of blocks is what the
            # code itself costs, the least disturbed; their ratio is a second estimate.
            low = {on: decile([p["wall_on" if on else "wall_off"] for p in got["pairs"]])
                   for on in (True, False)}
            low_cpu = {on: decile([p["cpu_on" if on else "cpu_off"] for p in got["pairs"]])
                       for on in (True, False)}
            rows.append({"model": model, "processes": world, "block": a.block,
                         "pairs": len(ratios),
                         "load_before": load, "load_after": os.getloadavg()[0],
                         "ratio_median": statistics.median(ratios),
                         "ratio_quartiles": quartiles(ratios), "ratios": ratios,
                         "off_step_us": off_step,
                         "added_cpu_us_per_step_median": statistics.median(added),
                         "added_cpu_us_quartiles": quartiles(added),
                         "cpu_ratio_median": statistics.median(cpu_ratios),
                         "low_decile_ratio": low[False] / low[True],
                         "low_decile_cpu_added_us": (low_cpu[True] - low_cpu[False]) / steps * 1e6,
                         "raw": got["pairs"]})
    print(f"{'model':<16}{'procs':>6}{'pairs':>6}{'on/off samples/s':>18}{'quartiles':>16}"
          f"{'step off':>10}{'CPU/step added':>16}{'quartiles':>16}{'fastest 10%: ratio':>20}"
          f"{'CPU added':>11}{'load':>11}")
    for r in rows:
        q, c = r["ratio_quartiles"], r["added_cpu_us_quartiles"]
        print(f"{r['model']:<16}{r['processes']:>6}{r['pairs']:>6}{r['ratio_median']:>18.4f}"
              f"{q[0]:>8.4f}{q[1]:>8.4f}{r['off_step_us']:>8.0f}us"
              f"{r['added_cpu_us_per_step_median']:>14.1f}us{c[0]:>8.1f}{c[1]:>8.1f}"
              f"{r['low_decile_ratio']:>20.4f}{r['low_decile_cpu_added_us']:>9.1f}us"
              f"{r['load_before']:>5.1f}-{r['load_after']:<5.1f}")
    write(a, "python_progress_blocks.json", rows)
    return 0


def decile(xs):
    """The mean of the lowest tenth (at least one)."""
    xs = sorted(xs)[:max(1, len(xs) // 10)]
    return sum(xs) / len(xs)


def quartiles(xs):
    q = statistics.quantiles(xs, n=4)
    return [q[0], q[2]]


def write(a, name, rows):
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, name), "w") as f:
        json.dump(rows, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--worlds", default="2")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--launcher", help="accel-launch to run (default: BUILD/launcher/accel-launch)")
    p.add_argument("--module-dir", help="measure this copy of the module (e.g. launcher/python) "
                   "through PYTHONPATH, accel-launch's own off both ways")
    p.add_argument("--blocks", action="store_true",
                   help="on and off inside one run, every --block steps (python_progress_blocks.py)")
    p.add_argument("--block", type=int, default=50)
    p.add_argument("--pairs", type=int, default=40)
    a = p.parse_args()
    if a.blocks:
        return blocks(a)
    rows = []
    for model in a.models.split(","):
        for world in (int(w) for w in a.worlds.split(",")):
            on, off, ratios, cpu_ratios, loads = [], [], [], [], []
            for r in range(a.rounds):
                loads.append(os.getloadavg()[0])
                order = (True, False) if r % 2 == 0 else (False, True)
                got = {flag: python_side(a, model, world, flag) for flag in order}
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
                         "cpu_ratios": cpu_ratios, "on": on, "off": off,
                         "ratio_quartiles": quartiles(ratios), "load": loads})
    print(f"{'model':<16}{'procs':>6}{'on samples/s':>14}{'off samples/s':>15}"
          f"{'on/off paired':>15}{'min':>7}{'max':>7}{'CPU on/off paired':>19}{'load':>11}")
    for r in rows:
        print(f"{r['model']:<16}{r['processes']:>6}{r['on_median']:>14.0f}{r['off_median']:>15.0f}"
              f"{r['ratio_median']:>15.4f}{min(r['ratios']):>7.3f}{max(r['ratios']):>7.3f}"
              f"{r['cpu_ratio_median']:>19.4f}{min(r['load']):>5.1f}-{max(r['load']):<5.1f}")
    write(a, "python_progress_bench.json", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
