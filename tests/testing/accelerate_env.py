#!/usr/bin/python3
"""What HF accelerate's Accelerator() sees in this worker, without accelerate installed.

usage: accelerate_env.py EXPECTED_JSON [--cpu] [--gradient-accumulation-steps N]
                         [--mixed-precision P] [--env-only]

EXPECTED_JSON maps every variable that accelerate's state.py and accelerator.py (and the helpers
they call) read while an Accelerator is built to its expected value, to "*" when it must be set
to anything (a rank, a port), or to null when it must be absent. The script fails unless the map names every one of them, then checks each against this
process's environment. It then derives, from those variables alone and by accelerate's rules,
what Accelerator(cpu=..., gradient_accumulation_steps=..., mixed_precision=...) would report --
distributed_type, num_processes, process_index, local_process_index, mixed_precision,
gradient_accumulation_steps, device -- and, for a distributed job, joins torch.distributed with
the backend accelerate would pick and checks the world size and ranks for real with an
all_reduce. Prints one line "ACCELERATOR {json}" and exits 0, or prints what differs and exits 1.
With --env-only (an environment built for GPUs this machine does not have) only the variables
are checked: "ENV OK".
"""
import argparse
import datetime
import json
import os
import sys

# Everything read from the environment while an Accelerator is built (PartialState,
# AcceleratorState, Accelerator.__init__, TorchDynamoPlugin, get_cpu_distributed_information).
READ_BY_ACCELERATE = [
    "ACCELERATE_TORCH_DEVICE", "ACCELERATE_DEBUG_MODE", "ACCELERATE_USE_SAGEMAKER",
    "ACCELERATE_SAGEMAKER_DISTRIBUTED_TYPE", "ACCELERATE_USE_DEEPSPEED", "ACCELERATE_USE_FSDP",
    "FSDP_OFFLOAD_PARAMS", "FSDP_STATE_DICT_TYPE", "ACCELERATE_USE_MEGATRON_LM",
    "ACCELERATE_USE_PARALLELISM_CONFIG", "ACCELERATE_USE_CPU", "ACCELERATE_MIXED_PRECISION",
    "ACCELERATE_DOWNCAST_BF16", "ACCELERATE_GRADIENT_ACCUMULATION_STEPS",
    "ACCELERATE_BYPASS_DEVICE_MAP", "ACCELERATE_FP8_BACKEND", "ACCELERATE_CPU_AFFINITY",
    "ACCELERATE_DYNAMO_BACKEND", "ACCELERATE_DYNAMO_MODE", "ACCELERATE_DYNAMO_USE_FULLGRAPH",
    "ACCELERATE_DYNAMO_USE_DYNAMIC", "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION",
    "FORK_LAUNCHED", "OMP_NUM_THREADS", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE",
    "LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_RANK",
    "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE",
    "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
]

TRUE_WORDS = ("y", "yes", "t", "true", "on", "1")
FALSE_WORDS = ("n", "no", "f", "false", "off", "0")


def flag(name, default=False):
    """accelerate's parse_flag_from_env: its str_to_bool, which rejects anything else."""
    value = os.environ.get(name, str(default)).lower()
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise SystemExit(f"{name}={os.environ[name]!r} is not a truth value accelerate reads")


def first_int(names, default):
    """accelerate's get_int_from_env: the first non-negative value, else the default."""
    for name in names:
        value = int(os.environ.get(name, -1))
        if value >= 0:
            return value
    return default


def check_variables(expected):
    missing = [name for name in READ_BY_ACCELERATE if name not in expected]
    if missing:
        raise SystemExit(f"the test does not say what to expect of {missing}")
    wrong = []
    for name in READ_BY_ACCELERATE:
        have = os.environ.get(name)
        if expected[name] == "*" and have is not None:
            continue
        if have != expected[name]:
            wrong.append(f"{name}: expected {expected[name]!r}, got {have!r}")
    return wrong


def accelerator_view(args):
    import torch

    cpu = args.cpu or flag("ACCELERATE_USE_CPU")
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    world_vars = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "WORLD_SIZE"]
    if local_rank != -1 and not cpu and torch.cuda.is_available():
        kind, backend = "MULTI_GPU", "nccl"
    elif cpu and (local_rank != -1 or first_int(world_vars, 1) > 1):
        kind, backend = "MULTI_CPU", "gloo"
    else:
        kind, backend = "NO", None
    view = {"distributed_type": kind}
    if kind == "NO":
        view.update(num_processes=1, process_index=0, local_process_index=0)
        use_cuda = not cpu and torch.cuda.is_available()
        view["device"] = "cuda" if use_cuda else "cpu"
    else:
        rank = first_int(["RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK"], 0)
        world = first_int(world_vars, 1)
        local = first_int(["LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "MV2_COMM_WORLD_LOCAL_RANK"], 0)
        view.update(num_processes=world, process_index=rank, local_process_index=local)
        view["device"] = f"cuda:{local}" if kind == "MULTI_GPU" else "cpu"
        join(backend, rank, world)
    view["mixed_precision"] = (args.mixed_precision.lower() if args.mixed_precision
                               else os.environ.get("ACCELERATE_MIXED_PRECISION", "no"))
    view["gradient_accumulation_steps"] = int(
        os.environ.get("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", args.gradient_accumulation_steps))
    view["dynamo_backend"] = os.environ.get("ACCELERATE_DYNAMO_BACKEND", "no")
    return view


def join(backend, rank, world):
    """Joins the process group as accelerate does (env://) and checks ranks with a sum."""
    import torch
    import torch.distributed as dist

    dist.init_process_group(backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    assert dist.get_rank() == rank and dist.get_world_size() == world
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    assert total.item() == world * (world + 1) / 2, total.item()
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("expected")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--gradient-accumulation-steps", type=int, default=1)
    parser.add_argument("--mixed-precision")
    parser.add_argument("--env-only", action="store_true")
    args = parser.parse_args()
    wrong = check_variables(json.loads(args.expected))
    if args.env_only:
        for line in wrong:
            print("WRONG " + line, flush=True)
        print("ENV OK" if not wrong else "ENV WRONG", flush=True)
        return 1 if wrong else 0
    view = accelerator_view(args)
    print("ACCELERATOR " + json.dumps(view, sort_keys=True), flush=True)
    for line in wrong:
        print("WRONG " + line, flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
