#!/usr/bin/env python3
"""`accel-launch env` on a real GPU: name, memory, compute capability, SMs, CUDA, cuDNN, NCCL.

The GPU facts and the driver's CUDA version come from libcuda alone and must be there as
accel-launch finds them. The CUDA runtime, cuDNN and NCCL are found by the dynamic loader; where
they live only inside a Python torch (pip's nvidia-* wheels), a C++ user runs with LibTorch's
libraries on LD_LIBRARY_PATH, so that run is checked too (ACCEL_TORCH_LIBRARY_PATH, set by the
device check from the libraries torch itself loaded). Both reports are printed.
"""
import json
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "testing"))
import gpu_case  # noqa: E402


def report(launch, extra_path=""):
    env = dict(os.environ)
    if extra_path:
        env["LD_LIBRARY_PATH"] = extra_path + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    for args in (["env"], ["env", "--json"]):
        proc = subprocess.run([launch] + args, capture_output=True, text=True, timeout=60, env=env)
        print(f"$ {'LD_LIBRARY_PATH=... ' if extra_path else ''}accel-launch {' '.join(args)}\n"
              + proc.stdout + proc.stderr, flush=True)
        if proc.returncode != 0:
            gpu_case.fail(f"accel-launch {' '.join(args)} exited {proc.returncode}")
    return json.loads(proc.stdout)


def main():
    launch = os.environ.get("ACCEL_LAUNCH", "")
    if not launch or not os.access(launch, os.X_OK):
        gpu_case.skip("no accel-launch binary in this build (a worker-only build needs the one "
                      "scripts/device-check/prepare carries)")
    plain = report(launch)
    if not plain["gpus"]:
        gpu_case.skip(f"accel-launch sees no GPU ({plain['gpu_error']})")
    problems = []
    for gpu in plain["gpus"]:
        if not gpu["name"] or gpu["total_mib"] < 1024 or gpu["compute_capability"][0] < 3 or gpu["sm_count"] < 1:
            problems.append(f"incomplete GPU facts: {gpu}")
    if not plain["cuda_driver"]["found"]:
        problems.append(f"no CUDA driver version: {plain['cuda_driver']['detail']}")
    libs = plain
    torch_path = os.environ.get("ACCEL_TORCH_LIBRARY_PATH", "")
    if torch_path:
        libs = report(launch, torch_path)
    for key in ("cuda_runtime", "cudnn", "nccl"):
        if not libs[key]["found"]:
            problems.append(f"{key} not found: {libs[key]['detail']}")
    found = {k: plain[k]["found"] for k in ("cuda_runtime", "cudnn", "nccl")}
    print(f"without LibTorch's library path accel-launch found: {found}")
    if problems:
        gpu_case.fail("; ".join(problems))
    print("PASSED: " + ", ".join(f"{k} {libs[k]['version']}" for k in
                                 ("cuda_driver", "cuda_runtime", "cudnn", "nccl")))


if __name__ == "__main__":
    main()
