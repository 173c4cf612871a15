#!/usr/bin/env python3
"""The control for libaccel's NCCL tests: Python torch.distributed over NCCL at a world of 1.

If this fails too, NCCL cannot run in this environment (for example its topology probe under a
sandbox that hides /sys PCI entries) and a failing GpuNcclTest says nothing about libaccel; if
this passes and GpuNcclTest fails, the fault is ours. NCCL_DEBUG=WARN is set unless the caller
chose a level, so NCCL's own warnings land in the log beside the verdict.
"""
import datetime
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "testing"))
import gpu_case  # noqa: E402


def main():
    os.environ.setdefault("NCCL_DEBUG", "WARN")
    torch = gpu_case.cuda_torch()
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_nccl_available():
        gpu_case.fail(f"torch {torch.__version__} has no NCCL backend")
    torch.cuda.set_device(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(os.path.join(tmp, "store"), 1)
        dist.init_process_group("nccl", store=store, rank=0, world_size=1,
                                timeout=datetime.timedelta(seconds=60))
        try:
            for dtype, count in ((torch.float32, 1 << 20), (torch.float16, 2048),
                                 (torch.bfloat16, 256)):
                t = torch.arange(count, dtype=dtype, device="cuda")
                expected = t.clone()
                dist.all_reduce(t)
                torch.cuda.synchronize()
                if not torch.equal(t, expected):
                    gpu_case.fail(f"all_reduce {dtype} changed the values at a world of 1")
            print(f"torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}")
        finally:
            dist.destroy_process_group()
    print("PASSED: torch.distributed NCCL world of 1 all-reduces fp32, fp16, bf16")


if __name__ == "__main__":
    main()
