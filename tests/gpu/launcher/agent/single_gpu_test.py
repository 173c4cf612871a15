#!/usr/bin/env python3
"""accel-launch on one real GPU: the seed's single-T4 config, and two processes asked for.

  default_config   configs/default_config.yaml (fp16, 1 process): the plan says cuda:0 and fp16,
                   train.bin trains in fp16 (its progress shows the loss scale) and the loss falls.
  two_processes    the same config with --num_processes 2 and one visible GPU: accel-launch must
                   fall back to one process and say so (or refuse with a clear error), never start
                   two NCCL ranks on one device.

Paths come from CTest: ACCEL_LAUNCH (the accel-launch binary; in the worker-only build the one
scripts/device-check/prepare carried), ACCEL_TRAIN_BIN and ACCEL_SOURCE_DIR.
"""
import json
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "testing"))
import gpu_case  # noqa: E402

TRAIN_ARGS = ["--hidden", "256", "--batch-size", "128", "--steps", "80", "--log-every", "20"]


def launcher():
    path = os.environ.get("ACCEL_LAUNCH", "")
    if not path or not os.access(path, os.X_OK):
        gpu_case.skip("no accel-launch binary in this build (a worker-only build needs the one "
                      "scripts/device-check/prepare carries)")
    return path


def run(cmd, env=None, timeout=240):
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    print(proc.stdout + proc.stderr, flush=True)
    return proc


def require_gpu(launch):
    proc = run([launch, "env", "--json"])
    if proc.returncode != 0:
        gpu_case.fail(f"accel-launch env exited {proc.returncode}: the carried launcher does not run")
    report = json.loads(proc.stdout)
    if not report.get("gpus"):
        gpu_case.skip(f"accel-launch sees no GPU ({report.get('gpu_error', '')})")


def last_json(text):
    for line in reversed(text.splitlines()):
        if "{" in line and line.rstrip().endswith("}"):
            return json.loads(line[line.index("{"):])
    gpu_case.fail("no JSON summary line from train.bin")


def check_training(proc, what):
    if proc.returncode != 0:
        gpu_case.fail(f"{what}: accel-launch exited {proc.returncode}")
    summary = last_json(proc.stdout)
    if summary["world"] != 1:
        gpu_case.fail(f"{what}: world {summary['world']} on one GPU")
    if not summary["loss"] < summary["first_loss"]:
        gpu_case.fail(f"{what}: the loss did not fall ({summary['first_loss']} -> {summary['loss']})")
    if " scale " not in proc.stdout:
        gpu_case.fail(f"{what}: no loss scale in the progress output: not training in fp16")
    return summary


def default_config(launch, train, config):
    plan = run([launch, "--config_file", config, "--dry_run", train] + TRAIN_ARGS)
    if plan.returncode != 0:
        gpu_case.fail(f"--dry_run exited {plan.returncode}")
    for expected in ("cuda:0", "precision:           fp16", "world size 1"):
        if expected not in plan.stdout + plan.stderr:
            gpu_case.fail(f"the plan lacks '{expected}'")
    summary = check_training(run([launch, "--config_file", config, train] + TRAIN_ARGS),
                             "default config")
    print(f"PASSED: fp16 on cuda:0, loss {summary['first_loss']:.4f} -> {summary['loss']:.4f}")


def two_processes(launch, train, config):
    proc = run([launch, "--config_file", config, "--num_processes", "2", train] + TRAIN_ARGS,
               env={"CUDA_VISIBLE_DEVICES": "0"})
    text = proc.stdout + proc.stderr
    if "[rank 1]" in text or "world size 2" in text:
        gpu_case.fail("two ranks were started on one GPU")
    if proc.returncode == 2 and "GPU" in text:
        print("PASSED: refused clearly (exit 2)")
        return
    if "only 1 GPU(s) present; running 1 process(es)" not in text:
        gpu_case.fail("no fallback notice for 2 processes on 1 GPU")
    check_training(proc, "num_processes 2")
    print("PASSED: fell back to one process with a notice")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    cases = {"default_config": default_config, "two_processes": two_processes}
    if case not in cases:
        gpu_case.fail(f"usage: single_gpu_test.py {'|'.join(cases)}")
    launch = launcher()
    train = gpu_case.env_path("ACCEL_TRAIN_BIN")
    config = str(pathlib.Path(gpu_case.env_path("ACCEL_SOURCE_DIR")) / "configs/default_config.yaml")
    require_gpu(launch)
    cases[case](launch, train, config)


if __name__ == "__main__":
    main()
