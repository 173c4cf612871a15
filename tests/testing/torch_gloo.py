#!/usr/bin/python3
"""An unmodified torchrun-style script: init_process_group("gloo") from the environment
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), one all_reduce whose sum is exact, exit 0."""
import datetime
import os
import sys

import torch
import torch.distributed as dist


def main() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"]), (rank, os.environ["RANK"])
    assert world == int(os.environ["WORLD_SIZE"]), (world, os.environ["WORLD_SIZE"])
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    expected = world * (world + 1) / 2
    print(f"torch_gloo rank {rank}/{world} local {os.environ['LOCAL_RANK']} "
          f"all_reduce {t.item():g} expected {expected:g} master_port {os.environ['MASTER_PORT']}",
          flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0 if t.item() == expected else 1


if __name__ == "__main__":
    sys.exit(main())
