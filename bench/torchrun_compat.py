#!/usr/bin/env python3
"""Debian 12's torchrun (torch 1.13) under Python 3.11, with its --redirects/--tee bug fixed.

torch.distributed.elastic.multiprocessing.api.Std is an IntFlag; Python 3.11 no longer yields
the zero-valued member when iterating a Flag, so Std.from_str("0") (the default of --redirects
and --tee) returns None and every torchrun launch dies in to_map(). This wrapper patches
from_str to map "0" to Std.NONE, then runs torchrun's own main() unchanged:

    /usr/bin/python3 bench/torchrun_compat.py --standalone --nproc_per_node=2 script.py
"""
import sys

from torch.distributed.elastic.multiprocessing import api

_original_from_str = api.Std.from_str.__func__


def _from_str(cls, vm):
    result = _original_from_str(cls, vm)
    if result is None:
        return api.Std.NONE
    if isinstance(result, dict):
        return {k: (api.Std.NONE if v is None else v) for k, v in result.items()}
    return result


api.Std.from_str = classmethod(_from_str)

from torch.distributed.run import main  # noqa: E402  (after the patch, on purpose)

if __name__ == "__main__":
    sys.argv[0] = "torchrun"
    sys.exit(main())
