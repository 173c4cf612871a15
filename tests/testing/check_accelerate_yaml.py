#!/usr/bin/python3
"""Loads a config file as HF accelerate does (PyYAML's safe_load) and checks every value's type.

usage: check_accelerate_yaml.py FILE [ALLOWED_EXTRA_KEY...]

Fails when a key holds a type accelerate's ClusterConfig does not expect (a bare NO read as the
boolean False, a GPU id read as an int, ...), or when the file has a key accelerate 1.x would
refuse as unknown, other than the ALLOWED_EXTRA_KEYs (accel-launch's own additions, written only
when they differ from their defaults). Prints "OK <key>=<python type> ..." on success.
"""
import sys

import yaml

STR, INT, BOOL, LIST, DICT = str, int, bool, list, dict
EXPECTED = {
    "compute_environment": (STR, {"LOCAL_MACHINE"}),
    "distributed_type": (STR, {"NO", "MULTI_CPU", "MULTI_GPU"}),
    "mixed_precision": (STR, {"no", "fp16", "bf16"}),
    "use_cpu": (BOOL, None), "debug": (BOOL, None), "enable_cpu_affinity": (BOOL, None),
    "same_network": (BOOL, None), "tpu_use_cluster": (BOOL, None), "tpu_use_sudo": (BOOL, None),
    "downcast_bf16": ((STR, BOOL), None),
    "num_processes": (INT, None), "num_machines": (INT, None), "machine_rank": (INT, None),
    "main_process_port": (INT, None),
    "gpu_ids": (STR, None), "main_process_ip": (STR, None), "rdzv_backend": (STR, None),
    "main_training_function": (STR, None),
    "tpu_env": (LIST, None), "tpu_vm": (LIST, None), "commands": (LIST, None),
    "tpu_name": (STR, None), "tpu_zone": (STR, None), "command_file": (STR, None),
    "dynamo_config": (DICT, None), "deepspeed_config": (DICT, None), "fsdp_config": (DICT, None),
    "megatron_lm_config": (DICT, None), "mpirun_config": (DICT, None), "fp8_config": (DICT, None),
    "parallelism_config": (DICT, None), "ipex_config": (DICT, None),
}


def main():
    path, allowed = sys.argv[1], set(sys.argv[2:])
    with open(path, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    problems, seen = [], []
    for key, value in config.items():
        if key not in EXPECTED:
            if key not in allowed:
                problems.append(f"{key}: accelerate would refuse this unknown key")
            continue
        kind, choices = EXPECTED[key]
        if isinstance(value, bool) and kind is INT or not isinstance(value, kind):
            problems.append(f"{key}: {value!r} is a {type(value).__name__}, accelerate expects "
                            f"{getattr(kind, '__name__', kind)}")
        elif choices is not None and value not in choices:
            problems.append(f"{key}: {value!r} is not one of {sorted(choices)}")
        seen.append(f"{key}={type(value).__name__}")
    for problem in problems:
        print("PROBLEM " + problem)
    if problems:
        return 1
    print("OK " + " ".join(sorted(seen)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
