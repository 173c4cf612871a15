#!/usr/bin/env python3
"""The peer for train.bin: the same MLP in Python PyTorch.

One process: plain training (CUDA AMP with GradScaler when --precision fp16 on a GPU).
Under torchrun (WORLD_SIZE > 1): DistributedDataParallel over gloo (CPU) or nccl (GPU), with
gradient accumulation through no_sync(), as accelerate does it.
Prints one JSON line at the end with the same keys as train.bin:
{"world", "grad_accum", "steps", "samples_per_sec", "loss", "param_checksum"}.
"""
import argparse
import contextlib
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def build_mlp(input_dim, hidden, layers, classes):
    dims = [input_dim] + [hidden] * (layers - 1) + [classes]
    mods = []
    for i in range(layers):
        mods.append(nn.Linear(dims[i], dims[i + 1]))
        if i + 1 < layers:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--input-dim", type=int, default=784)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--precision", choices=["no", "fp16", "bf16"], default="no")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl" if use_cuda else "gloo")

    torch.manual_seed(a.seed)
    model = build_mlp(a.input_dim, a.hidden, a.layers, a.classes).to(device)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    amp = a.precision == "fp16" and use_cuda
    scaler = torch.cuda.amp.GradScaler(enabled=amp)
    dtype = torch.float16 if a.precision == "fp16" else torch.bfloat16
    # fp16 autocast exists on CUDA only (as in train.bin: fp32 on CPU); torch 1.13 rejects even a
    # disabled CPU autocast with dtype fp16, so no autocast context at all then.
    use_autocast = a.precision == "bf16" or (a.precision == "fp16" and use_cuda)

    def autocast():
        if not use_autocast:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=dtype)

    g = torch.Generator().manual_seed(a.seed + 1 + rank)
    n_batches = 16
    xs = torch.randn(n_batches, a.batch_size, a.input_dim, generator=g).to(device)
    ys = torch.randint(0, a.classes, (n_batches, a.batch_size), generator=g).to(device)
    loss_fn = nn.CrossEntropyLoss()

    def one_step(i):
        for micro in range(a.grad_accum):
            k = (i * a.grad_accum + micro) % n_batches
            last = micro + 1 == a.grad_accum
            ctx = model.no_sync() if (world > 1 and not last) else contextlib.nullcontext()
            with ctx:
                with autocast():
                    loss = loss_fn(model(xs[k]), ys[k]) / a.grad_accum
                scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        return loss.detach() * a.grad_accum

    # As in train.bin: --steps counts every optimizer step, the first --warmup are not timed.
    if not 0 <= a.warmup < a.steps:
        p.error("--warmup must be in [0, --steps)")
    for i in range(a.warmup):
        one_step(i)
    if use_cuda:
        torch.cuda.synchronize()
    if world > 1:
        dist.barrier()
    start = time.perf_counter()
    for i in range(a.warmup, a.steps):
        loss = one_step(i)
    if use_cuda:
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    samples = (a.steps - a.warmup) * a.grad_accum * a.batch_size * world
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    if rank == 0:
        print(json.dumps({"world": world, "grad_accum": a.grad_accum, "steps": a.steps,
                          "samples_per_sec": samples / elapsed, "loss": float(loss),
                          "param_checksum": checksum}), flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
