#!/usr/bin/python3
"""Checks the contract fuzzer's reference (tests/testing/contract/reference.h) against PyTorch
itself: replays each sequence that `contract_rank export` wrote (the calls, the initial
parameters, every rank's data, and the reference's answer) at the same world size with PyTorch's
own DistributedDataParallel (gloo, find_unused_parameters=True, no_sync() on micro-steps that do
not sync) and torch 1.13's GradScaler logic (on CPU, with tests/testing/gradscaler_sequence.py's
transcriptions of its two CUDA kernels), and compares every parameter, every gradient (when the
last backward synchronised), each step's stepped/skipped, each clip_grad_norm and the final scale.

One DDP bug of torch 1.13 is corrected here, as PyTorch 2.4 fixed it: with
find_unused_parameters=True, a parameter that some rank used in a no_sync() pass of a window but
no rank used in the synchronising pass was left unreduced (each rank kept its own gradient: the
replicas diverge; pytorch/pytorch#69031, fixed by #124193). After such a pass this script
averages that gradient over the ranks itself (all_reduce / world), which is what the fixed DDP
computes, and counts the sequences where it did so.

What is not PyTorch's and is written here by hand, as libaccel defines it (docs/libaccel.md):
accelerate's micro-step counting and skip rules (accelerate is not installed), unscaling the
gradients of parameters in no optimizer before clipping, forgetting an unscale_ that no step
followed at the next backward (GradScaler would raise), the step zeroing its optimizer's
gradients, and load_state as a restart (no gradients).

Usage: ddp_check.py EXPORT.jsonl [--rtol 1e-5]
       ddp_check.py --contract-rank BIN --first SEED --count N --world W [--rtol 1e-5]
         (runs `BIN export` itself; CTest's mp_worker_contract_ddp_check_*)
Prints one line per sequence ("ok SEED" or "DIFF SEED: what") and a summary; exit 1 on a DIFF.
Every sequence in the file must have the same world size. Exit 77 (skipped; a failure under CI)
when torch.distributed has no gloo.
"""
import argparse
import copy
import json
import math
import os
import queue as queue_module
import subprocess
import sys
import tempfile
import traceback

os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # DDP's unused-parameter notice
os.environ.setdefault("GLOG_minloglevel", "2")
import torch  # noqa: E402
import torch.distributed as dist
import torch.multiprocessing as mp  # noqa: E402
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gradscaler_sequence  # noqa: E402,F401  (patches GradScaler for CPU on import)
import skip  # noqa: E402
from torch.cuda.amp import GradScaler  # noqa: E402


class FuzzNet(torch.nn.Module):
    """tests/testing/contract/sequence.h's FuzzNet."""

    def __init__(self, tied):
        super().__init__()
        self.a = torch.nn.Linear(4, 6)
        self.frozen = torch.nn.Linear(6, 6)
        self.b = torch.nn.Linear(6, 3)
        self.c = torch.nn.Linear(6, 3)
        self.t = torch.nn.Linear(3, 3)
        if tied:
            self.t_again = self.t
        for p in self.frozen.parameters():
            p.requires_grad_(False)

    def forward(self, x, use_c):
        h = torch.tanh(self.frozen(torch.tanh(self.a(x))))
        y = self.b(h)
        if use_c:
            y = y + self.c(h)
        return self.t(torch.tanh(self.t(y)))


def optimizer_params(seq, net, which):
    if seq["optimizers"] == 1:
        mods = [net.a, net.b, net.c, net.t] if seq["assignment"] == 0 else [net.b, net.t]
    elif seq["assignment"] == 0:
        mods = [net.a, net.b] if which == 0 else [net.c, net.t]
    else:
        mods = [net.b] if which == 0 else [net.t]
    return [p for m in mods for p in (m.weight, m.bias)]


def tensor(values, shape):
    return torch.tensor(values, dtype=torch.float32).reshape(shape)


class Replay:
    """One rank's run of one sequence."""

    def __init__(self, seq, rank):
        self.seq, self.rank = seq, rank
        self.net = FuzzNet(bool(seq["tied"]))
        with torch.no_grad():
            for name, p in self.net.named_parameters():
                p.copy_(tensor(seq["init"][name], p.shape))
        self.ddp = DistributedDataParallel(self.net, find_unused_parameters=True,
                                           broadcast_buffers=False)
        self.opts = []
        for which in range(seq["optimizers"]):
            params = optimizer_params(seq, self.net, which)
            self.opts.append(torch.optim.SGD(params, lr=0.05, momentum=0.9) if which == 0
                             else torch.optim.SGD(params, lr=0.1))
        in_opt = {id(p) for o in self.opts for p in o.param_groups[0]["params"]}
        self.rest = [p for p in self.net.parameters() if p.requires_grad and id(p) not in in_opt]
        self.scaler = None
        if seq["scaling"]:
            self.scaler = GradScaler(init_scale=seq["init_scale"], growth_interval=2)
            self.scaler._lazy_init_scale_growth_tracker(torch.device("cpu"))
        self.micro_step = 0
        self.unsynced = False
        self.pending = False  # an optimizer stepped or skipped: update() is due
        self.unscaled = set()  # optimizers unscale_d this iteration
        self.rest_unscaled = False
        self.stepped, self.clips = [], []
        self.saved = None
        self.c_in_window = False  # some rank used c in a no_sync pass of this window
        self.fixed_69031 = False

    def finish_iteration(self):
        if self.pending:
            self.scaler.update()
            self.pending = False
            self.unscaled, self.rest_unscaled = set(), False

    def forget_unscales(self):
        # libaccel: an unscale_ that no step followed is forgotten by the next backward.
        if self.scaler is not None:
            self.scaler._per_optimizer_states.clear()
        self.unscaled, self.rest_unscaled = set(), False

    def backward(self, sync, m, k, inf_rank):
        self.finish_iteration()
        self.forget_unscales()
        batch = self.seq["data"][m][k][self.rank]
        x, y = tensor(batch["x"], (5, 4)), tensor(batch["y"], (5, 3))

        def run():
            loss = torch.nn.functional.mse_loss(self.ddp(x, bool(batch["c"])), y)
            if self.rank == inf_rank:
                loss = loss * math.inf
            loss = loss / self.seq["accumulation"]  # accelerate; DDP averages over ranks
            if self.scaler is not None:  # GradScaler.scale, less its is_cuda assertion
                loss = loss * self.scaler._scale
            loss.backward()

        used_c = any(b["c"] for b in self.seq["data"][m][k])  # by any rank
        if sync:
            run()
            if self.c_in_window and not used_c:  # pytorch#69031: reduce as torch >= 2.4 does
                world = dist.get_world_size()
                for p in self.net.c.parameters():
                    g = p.grad if p.grad is not None else torch.zeros_like(p)
                    dist.all_reduce(g)
                    p.grad = g / world
                self.fixed_69031 = True
            self.c_in_window = False
        else:
            with self.ddp.no_sync():
                run()
            self.c_in_window = self.c_in_window or used_c
        self.unsynced = not sync

    def unscale(self, which):
        if which not in self.unscaled:
            self.scaler.unscale_(self.opts[which])
            self.unscaled.add(which)

    def clip(self, sync_for_step):
        if not sync_for_step or self.unsynced:
            return 0.0
        if self.scaler is not None:
            for which in range(len(self.opts)):
                self.unscale(which)
            if not self.rest_unscaled:
                inv = self.scaler._scale.double().reciprocal().float()
                for p in self.rest:
                    if p.grad is not None:
                        p.grad.mul_(inv)
                self.rest_unscaled = True
        return float(torch.nn.utils.clip_grad_norm_(list(self.net.parameters()), 0.5))

    def step(self, sync_for_step, which):
        if not sync_for_step or self.unsynced:
            return False
        opt = self.opts[which]
        stepped = True
        if self.scaler is not None:
            self.unscale(which)
            self.scaler.step(opt)
            state = self.scaler._per_optimizer_states[id(opt)]
            stepped = sum(v.item() for v in state["found_inf_per_device"].values()) == 0
            self.pending = True
        else:
            opt.step()
        opt.zero_grad()  # torch 1.13: set_to_none=False
        return stepped

    def save(self):
        self.finish_iteration()
        self.saved = {
            "params": [p.detach().clone() for p in self.net.parameters()],
            "opts": [copy.deepcopy(o.state_dict()) for o in self.opts],
            "scaler": copy.deepcopy(self.scaler.state_dict()) if self.scaler else None,
            "micro_step": self.micro_step,
        }

    def load(self):
        with torch.no_grad():
            for p, v in zip(self.net.parameters(), self.saved["params"]):
                p.copy_(v)
        for o, s in zip(self.opts, self.saved["opts"]):
            o.load_state_dict(copy.deepcopy(s))
        if self.scaler is not None:
            self.scaler.load_state_dict(copy.deepcopy(self.saved["scaler"]))
        self.micro_step = self.saved["micro_step"]
        self.pending = False
        self.forget_unscales()
        for p in self.net.parameters():
            p.grad = None
        self.unsynced = False
        self.c_in_window = False

    def run(self):
        for m, st in enumerate(self.seq["steps"]):
            sync = True
            if st["guard"]:
                self.micro_step += 1
                sync = self.micro_step % self.seq["accumulation"] == 0
            if st["zero"]:
                for o in self.opts:
                    o.zero_grad()
            # st["throw"]: libaccel refuses a detached loss before anything is issued: no call.
            for k in range(st["backwards"]):
                self.backward(sync, m, k, st["inf_rank"])
            sync_for_step = sync if st["guard"] and not st["ends_early"] else True
            if st["clip"]:
                self.clips.append(self.clip(sync_for_step))
            if st["step"]:
                for i in range(len(self.opts)):
                    which = len(self.opts) - 1 - i if st["reverse"] else i
                    self.stepped.append(self.step(sync_for_step, which))
            if st["state"] == 1:
                self.save()
            elif st["state"] == 2:
                self.load()
            if self.scaler is not None:
                self.finish_iteration()  # contract_rank reads the scale after every micro-step


def differs(got, want, rtol):
    """'' when got matches want (both None, or same non-finite positions and finite values within
    rtol of the norm), as contract_rank's Compare."""
    if (got is None) != (want is None):
        return f"defined {got is not None} vs reference {want is not None}"
    if got is None:
        return ""
    g, w = got.double().flatten(), want.double().flatten()
    fg, fw = torch.isfinite(g), torch.isfinite(w)
    if not torch.equal(fg, fw):
        return "non-finite values at other positions"
    diff = (g[fg] - w[fw]).norm().item()
    norm = w[fw].norm().item()
    if diff <= rtol * norm + 1e-9:
        return ""
    return f"relative difference {diff / (norm or 1):.3g} (|ref| {norm:.4g})"


def check(seq, replay, rtol):
    ref = seq["ref"]
    if [bool(s) for s in ref["stepped"]] != replay.stepped:
        return f"stepped {replay.stepped}, reference {[bool(s) for s in ref['stepped']]}"
    for got, want in zip(replay.clips, ref["clips"]):
        why = differs(torch.tensor([got]), torch.tensor([want], dtype=torch.float64), rtol)
        if why:
            return f"clip_grad_norm {got} vs reference {want}: {why}"
    if replay.scaler is not None and replay.scaler.get_scale() != ref["scale"]:
        return f"scale {replay.scaler.get_scale()}, reference {ref['scale']}"
    for name, p in replay.net.named_parameters():
        why = differs(p.detach(), tensor(ref["params"][name], p.shape), rtol)
        if why:
            return f"{name}: {why}"
        if ref["synced"] and not replay.unsynced:
            want = ref["grads"][name]
            why = differs(p.grad, None if want is None else tensor(want, p.shape), rtol)
            if why:
                return f"{name}.grad: {why}"
    return ""


def same_on_every_rank(replay):
    flat = torch.cat([p.detach().flatten() for p in replay.net.parameters()])
    parts = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, flat)
    return all(torch.equal(torch.nan_to_num(p, 1, 2, 3), torch.nan_to_num(parts[0], 1, 2, 3))
               for p in parts)


def worker(rank, world, store, seqs, rtol, queue):
    torch.set_num_threads(1)
    try:  # a file store: no port to race other processes for
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                                world_size=world)
    except Exception as e:
        queue.put((None, f"rank {rank}: init_process_group raised {e}", True, False))
        raise
    for seq in seqs:
        try:
            replay = Replay(seq, rank)
            replay.run()
        except Exception as e:  # the ranks may be out of step now: the run ends
            where = traceback.format_exc().strip().splitlines()[-3:]
            queue.put((seq["seed"], f"rank {rank} raised {type(e).__name__}: {e} {where}", True,
                       False))
            raise
        why = check(seq, replay, rtol)
        if not same_on_every_rank(replay):
            why = why or "ranks' parameters differ"
        if rank == 0:
            queue.put((seq["seed"], why, False, replay.fixed_69031))
    # Every collective is done (the last sequence's all_gather returned on both sides), so no
    # final barrier: one such barrier hung once in a full run under load (all 60 answers in, the
    # test then killed at its 180 s timeout). The answers are flushed before the exit.
    # No destroy_process_group nor interpreter teardown: torch 1.13's gloo teardown can hang
    # (tests/testing/python_probe.py).
    queue.close()
    queue.join_thread()
    sys.stdout.flush()
    os._exit(0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("export", nargs="?")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--contract-rank")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--world", type=int, default=2)
    args = parser.parse_args()
    if not dist.is_available() or not dist.is_gloo_available():
        return skip.skip("this torch has no torch.distributed gloo backend")
    if args.contract_rank:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "export.jsonl")
            subprocess.run([args.contract_rank, "export", path, str(args.first),
                            str(args.count), str(args.world)], check=True)
            with open(path) as f:
                seqs = [json.loads(line) for line in f if line.strip()]
    else:
        with open(args.export) as f:
            seqs = [json.loads(line) for line in f if line.strip()]
    world = seqs[0]["world"]
    assert all(s["world"] == world for s in seqs), "one world size per file"
    store_dir = tempfile.TemporaryDirectory()
    store = os.path.join(store_dir.name, "store")
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, store, seqs, args.rtol, queue))
             for r in range(world)]
    for p in procs:
        p.start()
    bad = fixed = 0
    for _ in seqs:
        try:
            seed, why, fatal, fixed_69031 = queue.get(timeout=180)
        except queue_module.Empty:
            seed, why, fatal, fixed_69031 = None, "no answer within 180 s (a hang)", True, False
        note = " (pytorch#69031 corrected)" if fixed_69031 else ""
        print(f"ok {seed}{note}" if not why else f"DIFF {seed}{note}: {why}", flush=True)
        bad += bool(why)
        fixed += fixed_69031
        if fatal:
            for p in procs:
                p.terminate()
            break
    for p in procs:
        p.join(30)
        if p.exitcode is None:
            print(f"worker pid {p.pid} still running 30 s after the last answer: killed",
                  flush=True)
            p.kill()
            p.join()
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    print(f"SUMMARY world {world} checked {len(seqs)} ok {len(seqs) - bad} differ {bad}; "
          f"pytorch#69031 corrected in {fixed}"
          + (f" (rank exit codes {failed})" if failed else ""))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
