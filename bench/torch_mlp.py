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
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="adamw")
    p.add_argument("--samples", type=int, default=8192,
                   help="synthetic samples from a fixed random teacher, as train.bin")
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
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    else:
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

    # The same data path as train.bin: a synthetic set labelled by a random teacher, sharded
    # like DistributedSampler (randperm seeded by seed + epoch, every world-th index), batches
    # gathered with index_select.
    g = torch.Generator().manual_seed(a.seed + 1)
    xs = torch.randn(a.samples, a.input_dim, generator=g)
    with torch.no_grad():
        ys = build_mlp(a.input_dim, 64, 2, a.classes)(xs).argmax(1)
    xs, ys = xs.to(device), ys.to(device)
    per_rank = (a.samples + world - 1) // world
    batches = per_rank // a.batch_size
    if batches < 1:
        p.error("--samples too small for one batch per rank")
    loss_fn = nn.CrossEntropyLoss()
    order = {"epoch": -1, "idx": None}

    def batch(k):
        epoch, b = divmod(k, batches)
        if epoch != order["epoch"]:
            perm = torch.randperm(a.samples, generator=torch.Generator().manual_seed(a.seed + epoch))
            order["epoch"], order["idx"] = epoch, perm.repeat(2)[rank:per_rank * world:world]
        idx = order["idx"][b * a.batch_size:(b + 1) * a.batch_size].to(device)
        return xs.index_select(0, idx), ys.index_select(0, idx)

    def one_step(i):
        for micro in range(a.grad_accum):
            x, y = batch(i * a.grad_accum + micro)
            last = micro + 1 == a.grad_accum
            ctx = model.no_sync() if (world > 1 and not last) else contextlib.nullcontext()
            with ctx:
                with autocast():
                    loss = loss_fn(model(x), y) / a.grad_accum
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
