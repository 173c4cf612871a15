#!/usr/bin/env python3
"""The peer for train.bin: the same MLP in Python PyTorch.

One process: plain training (CUDA AMP with GradScaler when --precision fp16 on a GPU).
Under torchrun (WORLD_SIZE > 1): DistributedDataParallel over gloo (CPU) or nccl (GPU), with
gradient accumulation through no_sync(), as accelerate does it.

Data: --dataset random (16 random batches per rank, resident on the device) or --dataset teacher:
train.bin's synthetic set made the same way (the same seeds, the same fixed random teacher
network, so the same labels) and read the same way as libaccel's loader (a per-epoch
randperm seeded with seed + epoch on the CPU, each batch's indices copied to the device and
gathered there); --device-data keeps that set on the device as `train.bin --device-data` does.
With the same --seed the model starts from the same weights as train.bin's, so the two first
losses agree when both sides really train the same thing.

Prints one JSON line at the end with the same keys as train.bin:
{"world", "grad_accum", "steps", "samples_per_sec", "loss", "first_loss", "param_checksum"}.
The loss is read (a device sync) only at the first step, at the end of warm-up and at the end.
"""
import argparse
import contextlib
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def build_mlp(input_dim, hidden, layers, classes):
    dims = [input_dim] + [hidden] * (layers - 1) + [classes]
    mods = []
    for i in range(layers):
        mods.append(nn.Linear(dims[i], dims[i + 1]))
        if i + 1 < layers:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


def teacher_set(a):
    """train.bin's SyntheticData: inputs ~ N(0, 1), labels = argmax of a fixed random teacher."""
    with torch.no_grad():
        torch.manual_seed(a.seed + 1000003)
        teacher = build_mlp(a.input_dim, 64, 2, a.classes)
        torch.manual_seed(a.seed + 1)
        data = torch.randn(a.samples, a.input_dim)
        return data, teacher(data).argmax(1)


def teacher_batches(a, data, target, device, world, rank):
    """Yields (x, y) forever, in libaccel's DistributedSampler + DataLoader order."""
    n = data.shape[0]
    per_rank = (n + world - 1) // world
    epoch = 0
    while True:
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(a.seed + epoch))
        padded = torch.cat([perm, perm[: per_rank * world - n]])
        mine = padded[rank::world]
        for begin in range(0, per_rank, a.batch_size):
            idx = mine[begin:begin + a.batch_size]
            yield (data.index_select(0, idx.to(data.device)).to(device),
                   target.index_select(0, idx.to(target.device)).to(device))
        epoch += 1


def random_batches(a, device, rank):
    g = torch.Generator().manual_seed(a.seed + 1 + rank)
    xs = torch.randn(16, a.batch_size, a.input_dim, generator=g).to(device)
    ys = torch.randint(0, a.classes, (16, a.batch_size), generator=g).to(device)
    k = 0
    while True:
        yield xs[k % 16], ys[k % 16]
        k += 1


def make_scaler(enabled):
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):  # torch >= 2.3
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def make_optimizer(a, params):
    kw = {} if a.foreach == "default" else {"foreach": a.foreach == "on"}
    if a.optimizer == "sgd":
        return torch.optim.SGD(params, lr=a.lr, **kw)
    return torch.optim.AdamW(params, lr=a.lr, **kw)


def parse_args():
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
    p.add_argument("--dataset", choices=["random", "teacher"], default="random")
    p.add_argument("--samples", type=int, default=8192, help="teacher set size (train.bin's)")
    p.add_argument("--device-data", action="store_true", help="teacher set on the device")
    p.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    p.add_argument("--foreach", choices=["default", "on", "off"], default="default",
                   help="the optimizer's multi-tensor path; off = per parameter, like LibTorch")
    p.add_argument("--cuda-graph", action="store_true",
                   help="one process on a GPU: capture the whole step (forward, backward, SGD) "
                        "in a CUDA graph and replay it, with a static loss scale: an upper "
                        "bound for the step, not a peer (no overflow check, no skip)")
    a = p.parse_args()
    if not 0 <= a.warmup < a.steps:
        p.error("--warmup must be in [0, --steps)")
    if a.cuda_graph and (not torch.cuda.is_available() or a.grad_accum != 1
                         or int(os.environ.get("WORLD_SIZE", "1")) != 1):
        p.error("--cuda-graph needs a GPU, one process and --grad-accum 1")
    return a


def graphed_step(a, model, opt, batches, autocast):
    """Returns one_step() replaying a CUDA graph of the step (the static-shape upper bound).

    The recipe of PyTorch's "whole network capture": warm-up on a side stream, gradients set to
    None before capture so backward allocates them from the graph's pool, then each replay
    overwrites them. The loss is multiplied by a static scale and the learning rate divided by
    it, which is SGD on the unscaled gradient without an unscale kernel. An epoch's short last
    batch is left out (one graph, one shape)."""
    scale = 1024.0 if a.precision == "fp16" else 1.0
    for group in opt.param_groups:
        group["lr"] = a.lr / scale
    x0, y0 = next(batches)
    static_x, static_y = x0.clone(), y0.clone()

    def eager():
        with autocast():
            loss = F.cross_entropy(model(static_x), static_y)
        (loss * scale).backward()
        opt.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            eager()
    torch.cuda.current_stream().wait_stream(side)
    opt.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = eager()

    def one_step():
        x, y = next(batches)
        while x.shape != static_x.shape:  # an epoch's short last batch: a bound replays full ones
            x, y = next(batches)
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        return static_loss.detach()
    return one_step


def main():
    a = parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl" if use_cuda else "gloo")

    if a.dataset == "teacher":
        data, target = teacher_set(a)
        if a.device_data:
            data, target = data.to(device), target.to(device)
        batches = teacher_batches(a, data, target, device, world, rank)
    else:
        batches = random_batches(a, device, rank)

    torch.manual_seed(a.seed)
    model = build_mlp(a.input_dim, a.hidden, a.layers, a.classes).to(device)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = make_optimizer(a, model.parameters())
    amp = a.precision == "fp16" and use_cuda
    scaler = make_scaler(amp)
    dtype = torch.float16 if a.precision == "fp16" else torch.bfloat16
    # fp16 autocast exists on CUDA only (as in train.bin: fp32 on CPU); torch 1.13 rejects even a
    # disabled CPU autocast with dtype fp16, so no autocast context at all then.
    use_autocast = a.precision == "bf16" or (a.precision == "fp16" and use_cuda)

    def autocast():
        if not use_autocast:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=dtype)

    def one_step():
        for micro in range(a.grad_accum):
            x, y = next(batches)
            last = micro + 1 == a.grad_accum
            ctx = model.no_sync() if (world > 1 and not last) else contextlib.nullcontext()
            with ctx:
                with autocast():
                    loss = F.cross_entropy(model(x), y) / a.grad_accum
                scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        return loss.detach() * a.grad_accum

    if a.cuda_graph:
        one_step = graphed_step(a, model, opt, batches, autocast)
    # As in train.bin: --steps counts every optimizer step, the first --warmup are not timed.
    first_loss = float(one_step())
    for _ in range(1, a.warmup):
        one_step()
    if use_cuda:
        torch.cuda.synchronize()
    if world > 1:
        dist.barrier()
    start = time.perf_counter()
    timed = a.steps - max(a.warmup, 1)
    for _ in range(timed):
        loss = one_step()
    last_loss = float(loss)  # waits for the device, as torch.cuda.synchronize() would
    if use_cuda:
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    samples = timed * a.grad_accum * a.batch_size * world
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    if rank == 0:
        print(json.dumps({"world": world, "grad_accum": a.grad_accum, "steps": a.steps,
                          "samples_per_sec": samples / elapsed, "loss": last_loss,
                          "first_loss": first_loss, "param_checksum": checksum}), flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
