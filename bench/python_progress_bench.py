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
--micro measures the module's own CPU time per step in one process instead (DDP with world size
1: the same hooks run, nothing to wait for), paired the same way.
Usage: /usr/bin/python3 bench/python_progress_bench.py [--build build] [--rounds 7]
       [--steps 300] [--models 64-128x3-10,784-1024x3-10] [--worlds 2] [--micro]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

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


# --micro: the module's own cost per step, in one process (DDP over gloo with world size 1: the
# same hooks run, no peer to wait for), as CPU time (time.process_time), which other processes on
# the machine disturb far less than wall time.
MICRO = r"""
import json, os, sys, time
import torch, torch.distributed as dist
d, h, layers, c, b, steps, warm = (int(x) for x in sys.argv[1:8])
dist.init_process_group("gloo")
torch.manual_seed(0)
mods = [torch.nn.Linear(d, h), torch.nn.ReLU()]
for _ in range(layers - 2):
    mods += [torch.nn.Linear(h, h), torch.nn.ReLU()]
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*mods, torch.nn.Linear(h, c)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(b, d), torch.randint(0, c, (b,))
for i in range(steps + warm):
    if i == warm:
        cpu, wall = time.process_time(), time.perf_counter()
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print(json.dumps({"cpu_us": (time.process_time() - cpu) / steps * 1e6,
                  "wall_us": (time.perf_counter() - wall) / steps * 1e6}))
"""


def micro_side(model, steps, progress, work):
    d, h, layers, c, b, _ = MODELS[model]
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(29400 + os.getpid() % 500), OMP_NUM_THREADS="1")
    if progress:  # what the launcher gives a Python worker (launcher/python/ from the source)
        env.update(PYTHONPATH=os.path.join(ROOT, "launcher", "python"),
                   ACCEL_PROGRESS_FILE=os.path.join(work, "progress"))
    out = subprocess.run([PY, "-c", MICRO, str(d), str(h), str(layers), str(c), str(b),
                          str(steps), str(steps // 10)], env=env, capture_output=True, text=True,
                         timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def micro(a):
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for model in a.models.split(","):
            on, off, ratios = [], [], []
            for r in range(a.rounds):
                order = (True, False) if r % 2 == 0 else (False, True)
                got = {flag: micro_side(model, a.steps, flag, work)["cpu_us"] for flag in order}
                on.append(got[True])
                off.append(got[False])
                ratios.append(got[True] / got[False])
                print(f"micro {model} round {r + 1}: CPU per step on {got[True]:.1f} us off "
                      f"{got[False]:.1f} us, ratio {ratios[-1]:.4f}", file=sys.stderr, flush=True)
            rows.append({"model": model, "rounds": a.rounds, "steps": a.steps,
                         "on_cpu_us": statistics.median(on), "off_cpu_us": statistics.median(off),
                         "cpu_ratio_median": statistics.median(ratios), "cpu_ratios": ratios,
                         "added_us_median": statistics.median(
                             [x - y for x, y in zip(on, off)])})
    print(f"{'model':<16}{'CPU/step on':>13}{'off':>9}{'added':>9}{'on/off paired':>15}")
    for r in rows:
        print(f"{r['model']:<16}{r['on_cpu_us']:>11.1f}us{r['off_cpu_us']:>7.1f}us"
              f"{r['added_us_median']:>7.1f}us{r['cpu_ratio_median']:>15.4f}")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "python_progress_micro.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--worlds", default="2")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--micro", action="store_true",
                   help="the module's CPU cost per step in one process (world size 1)")
    a = p.parse_args()
    if a.micro:
        return micro(a)
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
