#!/usr/bin/env python3
"""fp16 and fp32 training speed, like for like: train.bin (libaccel) vs PyTorch AMP.

Both sides train the same MLP from the same initial weights on the same data: train.bin's
synthetic set (a fixed random teacher's labels), resident on the device (train.bin
--device-data; bench/torch_mlp.py --dataset teacher --device-data), batches gathered there in
the same order (libaccel's sampler), SGD stepping parameter by parameter on both sides (LibTorch's
SGD; torch.optim.SGD with foreach=False), the loss read only at the first step, the end of
warm-up and the end, the same number of steps. fp16 is autocast + dynamic loss scaling on both
sides (libaccel's LossScaler; torch.amp.GradScaler("cuda")). Rounds alternate the order of the
two sides; the table quotes medians. The first losses of the two sides must agree: that is the
check that they really train the same thing.

Writes --out (JSON) after every round, so an interrupted run still leaves its numbers; each run's
command and the end of its output go to stdout.
Usage: bench/gpu_speed.py --train-bin build/examples/train.bin --out speed.json
         [--rounds 5] [--quick] [--deadline UNIX_TIME] [--python PY]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

FULL = dict(input_dim=784, hidden=4096, layers=4, classes=10, batch=1024, samples=16384,
            steps=600, warmup=100, lr=0.01)
QUICK = dict(input_dim=784, hidden=256, layers=3, classes=10, batch=128, samples=2048,
             steps=40, warmup=5, lr=0.01)
CONFIGS = ["train.bin fp16", "torch fp16", "train.bin fp32", "torch fp32"]


def last_json(text):
    for line in reversed(text.splitlines()):
        if "{" in line and line.rstrip().endswith("}"):
            return json.loads(line[line.index("{"):])
    raise RuntimeError("no JSON line in the output")


def commands(a, s):
    common = ["--input-dim", str(s["input_dim"]), "--hidden", str(s["hidden"]), "--layers",
              str(s["layers"]), "--classes", str(s["classes"]), "--batch-size", str(s["batch"]),
              "--samples", str(s["samples"]), "--steps", str(s["steps"]), "--warmup",
              str(s["warmup"]), "--lr", str(s["lr"]), "--seed", "0", "--optimizer", "sgd"]
    ours = [a.train_bin] + common + ["--device-data", "--log-every", "0"]
    peer = [a.python, os.path.join(HERE, "torch_mlp.py")] + common + [
        "--dataset", "teacher", "--device-data", "--foreach", "off"]
    return {
        "train.bin fp16": (ours, {"ACCELERATE_MIXED_PRECISION": "fp16"}),
        "torch fp16": (peer + ["--precision", "fp16"], {}),
        "train.bin fp32": (ours, {"ACCELERATE_MIXED_PRECISION": "no"}),
        "torch fp32": (peer + ["--precision", "no"], {}),
    }


def run_one(cmd, env):
    """Runs one side once; prints its command and the end of its output (the bench log)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env=dict(os.environ, **env))
    wall = time.perf_counter() - start
    print(f"$ {' '.join(f'{k}={v}' for k, v in env.items())} {' '.join(cmd)}\n"
          f"{proc.stdout[-1500:]}{proc.stderr[-1500:]}(exit {proc.returncode}, {wall:.1f} s)",
          flush=True)
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-600:]}")
    result = last_json(proc.stdout)
    result["wall_s"] = wall
    return result


def ratio(x, y):
    return x / y if x and y else None


def summarize(runs, sizes, rounds_done, error):
    med = {c: statistics.median(r["samples_per_sec"] for r in runs[c]) if runs[c] else None
           for c in CONFIGS}
    first = {c: runs[c][0]["first_loss"] if runs[c] else None for c in CONFIGS}
    agree = {}
    for p, tol in (("fp32", 1e-3), ("fp16", 1e-2)):
        x, y = first[f"train.bin {p}"], first[f"torch {p}"]
        agree[p] = None if x is None or y is None else abs(x - y) <= tol * max(abs(y), 1e-9)
    out = {
        "sizes": sizes, "rounds": rounds_done, "error": error, "runs": runs,
        "median_samples_per_sec": med, "first_loss": first, "first_losses_agree": agree,
        "fp16_vs_torch_amp": ratio(med["train.bin fp16"], med["torch fp16"]),
        "fp32_vs_torch_fp32": ratio(med["train.bin fp32"], med["torch fp32"]),
        "train_fp16_over_fp32": ratio(med["train.bin fp16"], med["train.bin fp32"]),
        "torch_fp16_over_fp32": ratio(med["torch fp16"], med["torch fp32"]),
    }
    out["goals"] = {
        "fp16 step time <= PyTorch AMP's": None if out["fp16_vs_torch_amp"] is None
        else out["fp16_vs_torch_amp"] >= 1.0,
        "train.bin fp16 >= 1.5x fp32": None if out["train_fp16_over_fp32"] is None
        else out["train_fp16_over_fp32"] >= 1.5,
    }
    return out


def print_table(s):
    print(f"\n{'run':<16}{'median samples/s':>18}{'first loss':>12}{'runs':>6}")
    for c in CONFIGS:
        m = s["median_samples_per_sec"][c]
        f = s["first_loss"][c]
        print(f"{c:<16}{(f'{m:.0f}' if m else '-'):>18}{(f'{f:.4f}' if f else '-'):>12}"
              f"{len(s['runs'][c]):>6}")
    for key in ("fp16_vs_torch_amp", "fp32_vs_torch_fp32", "train_fp16_over_fp32",
                "torch_fp16_over_fp32"):
        v = s[key]
        print(f"{key:<24}{(f'{v:.2f}x' if v else '-'):>10}")
    print(f"first losses agree (same model, same data): {s['first_losses_agree']}")


def run_rounds(a, cmds, sizes, runs):
    """Runs up to --rounds rounds; returns (rounds done, error or None, whether a run failed)."""
    rounds_done, round_s = 0, 0.0
    for r in range(a.rounds):
        if a.deadline and time.time() + round_s > a.deadline:
            return rounds_done, f"stopped after {rounds_done} rounds: the next would pass the deadline", False
        start = time.time()
        # Alternate which side goes first, round by round.
        order = CONFIGS if r % 2 == 0 else ["torch fp16", "train.bin fp16", "torch fp32",
                                            "train.bin fp32"]
        for c in order:
            cmd, env = cmds[c]
            try:
                runs[c].append(run_one(cmd, env))
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                return rounds_done, f"round {r + 1} {c}: {e}", True
            print(f"round {r + 1} {c}: {runs[c][-1]['samples_per_sec']:.0f} samples/s", flush=True)
        rounds_done += 1
        round_s = time.time() - start
        with open(a.out, "w") as f:
            json.dump(summarize(runs, sizes, rounds_done, None), f, indent=1)
    return rounds_done, None, False


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train-bin", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="small sizes (a dry run on CPU)")
    p.add_argument("--deadline", type=float, default=0, help="unix time: start no round after it")
    p.add_argument("--python", default=sys.executable)
    a = p.parse_args()
    sizes = QUICK if a.quick else FULL
    runs = {c: [] for c in CONFIGS}
    rounds_done, error, failed = run_rounds(a, commands(a, sizes), sizes, runs)
    summary = summarize(runs, sizes, rounds_done, error)
    with open(a.out, "w") as f:
        json.dump(summary, f, indent=1)
    print_table(summary)
    if error:
        print(f"bench: {error}", file=sys.stderr)
    return 1 if failed or rounds_done == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
