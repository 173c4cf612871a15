#!/usr/bin/python3
"""A plain torch.distributed DDP training script (gloo, CPU), as a user writes one for torchrun:
it knows nothing of accel-launch. An MLP on a synthetic set, DistributedSampler, SGD.

Usage: torch_ddp.py [--steps N] [--hidden H] [--batch B] [--spin-rank R --spin-at S]
                   [--print-steps]
  --steps 0 trains until stopped. --spin-rank/--spin-at make rank R spin forever (`while True:
  pass`) after step S, as a rank stuck in a Python loop would, while the others wait in DDP's
  all-reduce. Prints one line at the end: {"rank": ..., "steps": ..., "checksum": ...} (the sum
  of every parameter, in double), and "spinning" when it starts to spin. --print-steps prints
  "step S world W rank R time T" (T: time.time()) after every optimizer step, so a benchmark can
  tell when the first step at a new world size completed (bench/recovery_bench.py).
"""
import argparse
import json
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--spin-rank", type=int, default=-1)
    parser.add_argument("--spin-at", type=int, default=0)
    parser.add_argument("--print-steps", action="store_true")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    data = torch.randn(4096, 32)
    labels = (data.sum(dim=1) > 0).long()
    dataset = TensorDataset(data, labels)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch, sampler=sampler, drop_last=True)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(32, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()

    steps = 0
    epoch = 0
    while args.steps == 0 or steps < args.steps:
        sampler.set_epoch(epoch)
        epoch += 1
        for x, y in loader:
            if rank == args.spin_rank and steps == args.spin_at:
                print("spinning", flush=True)
                while True:
                    pass
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
            steps += 1
            if args.print_steps:
                print(f"step {steps} world {dist.get_world_size()} rank {rank} time {time.time():.4f}",
                      flush=True)
            if args.steps and steps >= args.steps:
                break
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(json.dumps({"rank": rank, "steps": steps, "checksum": checksum}), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
