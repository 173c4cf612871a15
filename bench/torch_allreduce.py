#!/usr/bin/env python3
"""The peer of allreduce_bench: torch.distributed (gloo) all_reduce of float32 SUM under torchrun,
the same sizes and iteration counts, median per size; rank 0 also times a copy of the same size.
Prints one JSON line per size on rank 0: {"bytes", "iters", "median_us", "memcpy_us"}.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--min-bytes", type=int, default=4096)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--budget-mb", type=int, default=512)
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    size = a.min_bytes
    while size <= a.max_bytes:
        iters = min(max((a.budget_mb << 20) // size, 5), 2000)
        t = torch.ones(size // 4)
        for _ in range(3):
            dist.all_reduce(t)
        dist.barrier()
        times = []
        for _ in range(iters):
            start = time.perf_counter()
            dist.all_reduce(t)
            times.append((time.perf_counter() - start) * 1e6)
        if rank == 0:
            src = torch.ones(size, dtype=torch.uint8)
            dst = torch.empty_like(src)
            copies = []
            for _ in range(iters):
                start = time.perf_counter()
                dst.copy_(src)
                copies.append((time.perf_counter() - start) * 1e6)
            print(json.dumps({"bytes": size, "iters": iters, "median_us": statistics.median(times),
                              "memcpy_us": statistics.median(copies)}), flush=True)
        dist.barrier()
        size *= 2
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
