#!/usr/bin/env python3
"""The progress module's cost inside one training run: a worker program for accel-launch
(python_progress_bench.py --blocks starts it). It trains ddp_bench's Python side (the MLP of
torch_mlp.py, DDP over gloo, SGD, teacher data, accumulation through no_sync) and switches the
module's wrappers and DDP hooks (its _switch) off and on every --block optimizer steps, all ranks
at the same step, in ABBA order, with a barrier before each block. Each pair of blocks (one on, one off) gives
a paired ratio of samples/s that cancels whatever the machine did over longer than a block (other
engineers' builds), and the CPU time of each block: what the wrappers cost, per step, in the
process that runs them. The record stays mapped either way, so the launcher sees the same files;
start-up is not measured (as torch_mlp.py, which times only after its warm-up).

Rank 0 prints one JSON line: per pair, the wall seconds and CPU seconds of both blocks (CPU summed
over the ranks).
"""
import argparse
import contextlib
import faulthandler
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_mlp  # noqa: E402  (bench/torch_mlp.py: the same model and data)


def module_switch():
    """The progress module's _switch(on): its wrappers and DDP hooks on or off. Reached through
    its DDP.__init__ wrapper's globals (sitecustomize takes the module out of sys.modules)."""
    ddp = torch.nn.parallel.DistributedDataParallel
    switch = (getattr(ddp.__init__, "__globals__", {}).get("_switch") or
              getattr(ddp.forward, "__globals__", {}).get("_switch"))  # an older module's
    if switch is None:
        sys.exit("the progress module is not installed (DDP.__init__ is not its wrapper)")
    return switch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="64-128x3-10")
    p.add_argument("--block", type=int, default=50, help="optimizer steps per block")
    p.add_argument("--pairs", type=int, default=40)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--stuck-after", type=float, default=300,
                   help="print every thread's stack and exit after this many seconds")
    a = p.parse_args()
    faulthandler.dump_traceback_later(a.stuck_after, exit=True)
    d, h, layers, c, b, accum = torch_mlp_model(a.model)
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    if "MASTER_ADDR" in os.environ:
        dist.init_process_group("gloo")
    else:  # one process: the launcher sets no rendezvous; DDP over gloo with itself
        # the file store in a private temporary directory, removed at exit (not the cwd)
        store_dir = tempfile.TemporaryDirectory(prefix="accel_blocks_")
        dist.init_process_group("gloo", init_method=f"file://{store_dir.name}/store",
                                world_size=1, rank=0)
    switch = module_switch()

    data_args = argparse.Namespace(seed=0, input_dim=d, classes=c, samples=64 * b * world,
                                   batch_size=b)
    data, target = torch_mlp.teacher_set(data_args)
    batches = torch_mlp.teacher_batches(data_args, data, target, torch.device("cpu"), world, rank)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch_mlp.build_mlp(d, h, layers, c))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def one_step():  # torch_mlp.py's step without AMP (CPU): the same calls
        for micro in range(accum):
            x, y = next(batches)
            ctx = model.no_sync() if micro + 1 < accum else contextlib.nullcontext()
            with ctx:
                loss = F.cross_entropy(model(x), y) / accum
                loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    for _ in range(a.warmup):
        one_step()
    pairs = []
    for i in range(a.pairs):
        got = {}
        for on in ((True, False) if i % 2 == 0 else (False, True)):
            switch(on)
            dist.barrier()
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(a.block):
                loss = one_step()
            float(loss)
            got[on] = (time.perf_counter() - wall, time.process_time() - cpu)
        pairs.append(got)
    switch(True)
    everyone = [None] * world
    dist.all_gather_object(everyone, [[p[True][1], p[False][1]] for p in pairs])
    if rank == 0:
        rows = [{"wall_on": p[True][0], "wall_off": p[False][0],
                 "cpu_on": sum(r[i][0] for r in everyone), "cpu_off": sum(r[i][1] for r in everyone)}
                for i, p in enumerate(pairs)]
        print(json.dumps({"model": a.model, "world": world, "block": a.block,
                          "samples_per_block": a.block * accum * b * world,
                          "pairs": rows}), flush=True)
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)  # no teardown: gloo's and the reducer's destructors hung here once in 3 runs


def torch_mlp_model(name):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ddp_bench import MODELS  # noqa: E402
    return MODELS[name]


if __name__ == "__main__":
    main()
