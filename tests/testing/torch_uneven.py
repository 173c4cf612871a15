#!/usr/bin/python3
"""A torch.distributed (gloo) script with uneven inputs: every rank all-reduces once per batch,
but the last rank has one batch fewer. It finishes its batches and waits in a barrier while the
others compute their extra batch and wait in an all-reduce it never joins: they all wait forever
(gloo's default timeout is 30 minutes). The last rank goes idle first. Prints one line per rank
when it enters the call it never leaves ("torch_uneven rank R waits"; the job hangs once every
rank has printed it) and, for the last rank, when its batches are done.
Usage: torch_uneven.py [BATCHES] (default 3)."""
import os
import sys
import time

import torch
import torch.distributed as dist


def busy(seconds: float) -> None:
    """Computes for about `seconds` (one core)."""
    end = time.monotonic() + seconds
    x = torch.randn(128, 128)
    while time.monotonic() < end:
        x = torch.tanh(x @ x)


def main() -> int:
    dist.init_process_group("gloo")  # no timeout given: torch's default
    rank, world = dist.get_rank(), dist.get_world_size()
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    mine = batches + (0 if rank == world - 1 else 1)
    grad = torch.zeros(1024)
    for step in range(mine):
        busy(0.1 if step < batches else 2.0)  # the extra batch is long: the last rank idles first
        if step == batches:
            print(f"torch_uneven rank {rank} waits", flush=True)
        dist.all_reduce(grad)
    print(f"torch_uneven rank {rank} finished its {mine} batches (pid {os.getpid()})", flush=True)
    print(f"torch_uneven rank {rank} waits", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
