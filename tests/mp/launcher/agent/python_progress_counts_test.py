#!/usr/bin/env python3
"""The Python progress module's counts (launcher/python/_accel_launch_progress.py) against a
reference, in one process (DDP over gloo, world size 1: every hook and callback runs): for each
generated case — find_unused_parameters off/on, 1 to 3 micro-steps per optimizer step (all but
the last under no_sync), a forward under no_grad between steps, a backward that fails (without
find_unused_parameters; DDP cannot go on after one with it) — the record must hold one step per
optimizer step and one collective started and done per backward in which DDP synchronised, plus
its parameter broadcast at construction; nothing waiting at the end; and an optimizer wrapping
another (ZeroRedundancyOptimizer) counted once per step; samples counted where the program
gets its batches (DataLoader subclasses with iterators of their own). Without torch (Debian's
python3-torch): skipped through tests/testing/skip.py (a failure under CI).
Usage: python_progress_counts_test.py <launcher/python>
"""
import importlib
import itertools
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "testing"))
from skip import skip  # noqa: E402

try:
    import torch
    import torch.distributed as dist
except ImportError:
    sys.exit(skip("no torch for this python3 (Debian's python3-torch)"))


class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("boom")


class Net(torch.nn.Module):
    def __init__(self, unused):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)
        self.unused = torch.nn.Linear(2, 2) if unused else None

    def forward(self, x, boom=False):
        h = torch.relu(self.a(x))
        return self.b(Boom.apply(h) if boom else h)


def words(path):
    with open(path, "rb") as f:
        return struct.unpack("<6Q", f.read(48))


def run_case(path, find_unused, micro, steps, fail_at):
    """Trains; returns (steps, syncs) as the reference counts them."""
    model = torch.nn.parallel.DistributedDataParallel(Net(find_unused),
                                                      find_unused_parameters=find_unused)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, syncs, done_steps = torch.randn(8, 4), 1, 0  # 1: DDP's broadcast at construction
    for step in range(steps):
        if step == fail_at:  # a backward that fails in its middle: DDP does not sync
            try:
                model(x, boom=True).sum().backward()
            except RuntimeError:
                pass
            break
        for m in range(micro):
            last = m + 1 == micro
            with (model.no_sync() if not last else open(os.devnull)):
                model(x).sum().backward()
            syncs += last
        with torch.no_grad():
            model(x)  # an evaluation between steps
        opt.step()
        opt.zero_grad()
        done_steps += 1
    return done_steps, syncs


def main():
    sys.path.insert(0, sys.argv[1])
    module = importlib.import_module("_accel_launch_progress")
    work = tempfile.mkdtemp()
    dist.init_process_group("gloo", init_method=f"file://{work}/store", world_size=1, rank=0)
    path = os.path.join(work, "progress")
    module._record = module.Record(path)
    module._install(torch)
    failures, cases = 0, 0
    for find_unused, micro, steps, fail_at in itertools.product(
            (False, True), (1, 2, 3), (1, 4), (None, 0, 2)):
        if fail_at is not None and (find_unused or fail_at >= steps):
            continue
        before = words(path)
        want_steps, want_syncs = run_case(path, find_unused, micro, steps, fail_at)
        after = words(path)
        got = [after[i] - before[i] for i in range(3)]
        cases += 1
        if got != [want_steps, want_syncs, want_syncs] or after[5] != 0:
            failures += 1
            print(f"FAIL find_unused={find_unused} micro={micro} steps={steps} "
                  f"fail_at={fail_at}: steps/started/done {got}, want "
                  f"{[want_steps, want_syncs, want_syncs]}; wait since {after[5]}")
    # An optimizer that wraps another (torch's ZeroRedundancyOptimizer: an Optimizer whose
    # .optim is the local one; both steps reach the counting hook) counts each step once.
    # accelerate's AcceleratedOptimizer never reaches it on torch 1.13 (it skips
    # Optimizer.__init__): tests/mp/launcher/agent/hf_accelerate_counts_test.sh.
    from torch.distributed.optim import ZeroRedundancyOptimizer

    model = torch.nn.parallel.DistributedDataParallel(Net(False))
    zero = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.01)
    before = words(path)
    for _ in range(3):
        model(torch.randn(8, 4)).sum().backward()
        zero.step()
        zero.zero_grad()
    got = words(path)[0] - before[0]
    cases += 1
    if got != 3:
        failures += 1
        print(f"FAIL ZeroRedundancyOptimizer: {got} steps counted for 3 optimizer steps")
    cases, failures = samples_cases(path, cases, failures)
    print(f"{cases - failures}/{cases} cases")
    return 1 if failures else 0


def samples_cases(path, cases, failures):
    """Samples are counted where the program gets its batches: torch's DataLoader, a subclass
    that hands out batches of its own from a generator (as accelerate's DataLoaderShard, which
    reads one ahead, and DataLoaderDispatcher, which reads two and hands out half of them),
    nested, one handing out (index, batch) pairs (counted by what it read); a subclass whose
    __iter__ returns torch's iterator keeps it (len() works)."""
    from torch.utils.data import DataLoader, TensorDataset

    class Ahead(DataLoader):
        def __iter__(self):
            batches = super().__iter__()
            current = next(batches)
            for batch in batches:
                yield current
                current = batch
            yield current

    class Halves(DataLoader):  # two batches read, the first half of both handed out
        def __iter__(self):
            batches = super().__iter__()
            for first in batches:
                second = next(batches, first)
                yield torch.cat([first[0], second[0]])[: len(first[0])],

    class Nested(Ahead):
        def __iter__(self):
            for batch in super().__iter__():
                yield batch

    class Indexed(Ahead):  # hands out (index, batch): no batch size of its own, what it read
        def __iter__(self):
            yield from enumerate(super().__iter__())

    class Plain(DataLoader):
        def __iter__(self):
            return super().__iter__()

    data = TensorDataset(torch.arange(40.0))
    for cls, want in ((DataLoader, 40), (Ahead, 40), (Halves, 20), (Nested, 40), (Indexed, 40),
                      (Plain, 40)):
        before = words(path)[4]
        got_batches = list(cls(data, batch_size=4))
        handed = sum(len(b[1][0] if cls is Indexed else b[0]) for b in got_batches)
        got = words(path)[4] - before
        cases += 1
        if got != want or handed != want:
            failures += 1
            print(f"FAIL samples through {cls.__name__}: {got} counted, {handed} handed out, "
                  f"want {want}")
    cases += 1
    if len(iter(Plain(data, batch_size=4))) != 10:
        failures += 1
        print("FAIL a subclass returning torch's iterator no longer gets it")
    return cases, failures


if __name__ == "__main__":
    sys.exit(main())
