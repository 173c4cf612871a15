#!/usr/bin/env python3
"""The README main job's shape on a GPU: train.bin against PyTorch AMP eager and a CUDA-graph bound.

Three sides train the README main job's model (784-512-512-10, batch 64, fp16, SGD) on the same
teacher set, resident on the device: train.bin --device-data (libaccel), bench/torch_mlp.py
(PyTorch AMP eager with GradScaler: the peer) and bench/torch_mlp.py --cuda-graph (the same step
captured once and replayed with a static loss scale: an upper bound, not a peer). Rounds
alternate the order; the table quotes medians. First the README's main job itself runs under
accel-launch (all 20 epochs) while nvidia-smi samples the GPU's utilization every 200 ms:
the busy % is the mean of the samples taken while it trained.

Merges its results under "main_job" into --out (the device check's bench.json, which
bench/gpu_speed.py writes first), after every round.
Usage: bench/gpu_main_job.py --train-bin B --accel-launch L --out bench.json [--rounds 5]
         [--quick] [--deadline UNIX_TIME] [--python PY]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gpu_speed import run_one  # noqa: E402  (one side once, its command and output logged)

FULL = dict(hidden=512, layers=3, batch=64, samples=60000, steps=2000, warmup=300)
QUICK = dict(hidden=64, layers=3, batch=64, samples=2048, steps=60, warmup=10)
SIDES = ["train.bin", "train.bin eager", "torch AMP eager", "torch CUDA graph"]


def commands(a, s):
    common = ["--input-dim", "784", "--hidden", str(s["hidden"]), "--layers", str(s["layers"]),
              "--classes", "10", "--batch-size", str(s["batch"]), "--samples", str(s["samples"]),
              "--steps", str(s["steps"]), "--warmup", str(s["warmup"]), "--lr", "0.01",
              "--seed", "0", "--optimizer", "sgd"]
    peer = [a.python, os.path.join(HERE, "torch_mlp.py")] + common + [
        "--dataset", "teacher", "--device-data", "--foreach", "off", "--precision", "fp16"]
    return {
        "train.bin": ([a.train_bin] + common + ["--device-data", "--log-every", "0"],
                      {"ACCELERATE_MIXED_PRECISION": "fp16"}),
        "train.bin eager": ([a.train_bin] + common + ["--device-data", "--log-every", "0",
                                                      "--cuda-graph", "off"],
                            {"ACCELERATE_MIXED_PRECISION": "fp16"}),
        "torch AMP eager": (peer, {}),
        "torch CUDA graph": (peer + ["--cuda-graph"], {}),
    }


def gpu_busy(a):
    """Runs the README main job under accel-launch; returns (busy %, samples, error)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, 0, "no nvidia-smi (no GPU)"
    samples = []
    sampler = subprocess.Popen([smi, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                "-i", "0", "-lms", "200"], stdout=subprocess.PIPE, text=True)

    def read():
        for line in sampler.stdout:
            if line.strip().isdigit():
                samples.append((time.monotonic(), int(line)))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    epochs = "1" if a.quick else "20"  # the README's main job, whole
    cmd = [a.accel_launch, "--config_file", os.path.join(ROOT, "configs/default_config.yaml"),
           a.train_bin, "--samples", "60000", "--hidden", "512", "--epochs", epochs]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    end = time.monotonic()
    sampler.terminate()
    sampler.wait()
    reader.join(timeout=2)
    print(f"$ {' '.join(cmd)}\n{proc.stdout[-800:]}{proc.stderr[-800:]}(exit {proc.returncode}, "
          f"{end - start:.1f} s)", flush=True)
    if proc.returncode != 0:
        return None, 0, f"main job exit {proc.returncode}"
    # Leave out the first 2 s (process start, CUDA context) and the last sample.
    busy = [u for t, u in samples if start + 2 <= t <= end - 0.2]
    if not busy:
        return None, 0, "no utilization sample while it trained"
    return statistics.mean(busy), len(busy), None


def summarize(runs, sizes, rounds_done, busy, error):
    med = {c: statistics.median(r["samples_per_sec"] for r in runs[c]) if runs[c] else None
           for c in SIDES}
    ours, _, eager, graph = (med[c] for c in SIDES)
    out = {"sizes": sizes, "rounds": rounds_done, "error": error, "runs": runs,
           "median_samples_per_sec": med,
           "vs_torch_amp_eager": ours / eager if ours and eager else None,
           "of_cuda_graph_bound": ours / graph if ours and graph else None,
           "gpu_busy_percent": busy[0], "gpu_busy_samples": busy[1], "gpu_busy_error": busy[2]}
    out["goals"] = {
        ">= 5x PyTorch AMP eager": None if out["vs_torch_amp_eager"] is None
        else out["vs_torch_amp_eager"] >= 5.0,
        ">= 50% of the CUDA-graph bound": None if out["of_cuda_graph_bound"] is None
        else out["of_cuda_graph_bound"] >= 0.5,
        "GPU busy >= 60%": None if busy[0] is None else busy[0] >= 60.0,
    }
    return out


def merge(path, summary):
    data = {}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    data["main_job"] = summary
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def print_table(s):
    print(f"\nREADME main job's shape (784-{s['sizes']['hidden']}-{s['sizes']['hidden']}-10, "
          f"batch {s['sizes']['batch']}, fp16), {s['rounds']} alternating rounds")
    print(f"{'side':<20}{'median samples/s':>18}{'runs':>6}")
    for c in SIDES:
        m = s["median_samples_per_sec"][c]
        print(f"{c:<20}{(f'{m:.0f}' if m else '-'):>18}{len(s['runs'][c]):>6}")
    for key in ("vs_torch_amp_eager", "of_cuda_graph_bound"):
        v = s[key]
        print(f"{key:<24}{(f'{v:.2f}x' if v else '-'):>10}")
    busy = s["gpu_busy_percent"]
    print(f"GPU busy during the main job: {f'{busy:.0f} %' if busy is not None else '-'}"
          f"{'' if not s['gpu_busy_error'] else ' (' + s['gpu_busy_error'] + ')'}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train-bin", required=True)
    p.add_argument("--accel-launch", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="small sizes (a dry run on CPU)")
    p.add_argument("--deadline", type=float, default=0, help="unix time: start no round after it")
    p.add_argument("--python", default=sys.executable)
    a = p.parse_args()
    sizes = QUICK if a.quick else FULL
    cmds = commands(a, sizes)
    runs = {c: [] for c in SIDES}
    # Where no GPU is seen the graph side cannot run: the dry run says so and goes on.
    sides = SIDES if shutil.which("nvidia-smi") else SIDES[:3]
    busy, error, rounds_done, round_s = (None, 0, "not run"), None, 0, 0.0
    # The GPU's busy share first: it is one run, and a deadline that ends the rounds early must
    # not leave it out (the device check's second H200 run lost it that way).
    busy = gpu_busy(a)
    stopped = None
    for r in range(a.rounds):
        if a.deadline and time.time() + round_s > a.deadline:
            stopped = f"stopped after {rounds_done} rounds: the next would pass the deadline"
            break
        t0 = time.time()
        for c in (sides if r % 2 == 0 else list(reversed(sides))):
            try:
                runs[c].append(run_one(*cmds[c]))
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                error = f"round {r + 1} {c}: {e}"
                break
        if error:
            break
        rounds_done += 1
        round_s = time.time() - t0
        merge(a.out, summarize(runs, sizes, rounds_done, busy, None))
    summary = summarize(runs, sizes, rounds_done, busy, error or stopped)
    merge(a.out, summary)
    print_table(summary)
    if error or stopped:
        print(f"bench: {error or stopped}", file=sys.stderr)
    # Fewer rounds than asked is a shorter table, not a failure; a side that failed is.
    return 1 if error or (rounds_done == 0 and a.rounds > 0) else 0


if __name__ == "__main__":
    sys.exit(main())
