#!/usr/bin/python3
"""Prints what a Python program can see of its start-up as one JSON line per rank: sys.path, its
PYTHONPATH, which sitecustomize ran (and whether a test sitecustomize marked builtins), the import
hooks, and whether torch is loaded. With --torch N it then imports torch and trains N steps of a
tiny DDP model over gloo; "imports" lists what that run's torch.distributed functions are (wrapped
or not: the progress record's business, not the program's). Used by
tests/mp/launcher/agent/python_progress_test.sh to compare runs with and without the launcher's
Python progress module."""
import builtins
import json
import os
import sys


def main() -> None:
    steps = int(sys.argv[sys.argv.index("--torch") + 1]) if "--torch" in sys.argv else 0
    site = sys.modules.get("sitecustomize")
    seen = {
        "rank": os.environ.get("RANK"),
        "sys_path": sys.path[1:],  # [0] is the script's directory
        "pythonpath": os.environ.get("PYTHONPATH"),
        "sitecustomize": getattr(site, "__file__", None),
        "user_sitecustomize_ran": getattr(builtins, "ACCEL_TEST_SITECUSTOMIZE", None),
        "torch_loaded": "torch" in sys.modules,
        "modules_loaded": sorted(m for m in sys.modules if m.startswith("_accel")),
    }
    if steps:
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 3))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(steps):
            opt.zero_grad()
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
        dist.all_reduce(torch.ones(1))
        seen["checksum"] = sum(p.detach().double().sum().item() for p in model.parameters())
        seen["torch_file"] = torch.__file__
        seen["torch_loader"] = type(torch.__loader__).__name__
        dist.destroy_process_group()
    seen["meta_path"] = [type(f).__name__ for f in sys.meta_path]
    print(json.dumps(seen, sort_keys=True), flush=True)
    # torch 1.13's gloo teardown hangs now and then under CPU load, with the progress module on or
    # off (1 in 6 runs each on a loaded 2-core VM): skip it, the report is printed. Here, not after
    # main returns: returning frees the DDP model, whose process group is torn down then (a rank
    # hung there for the whole hang timeout in a full run).
    os._exit(0)


if __name__ == "__main__":
    main()
