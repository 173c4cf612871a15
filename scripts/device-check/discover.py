#!/usr/bin/env python3
"""Prints, as KEY=VALUE lines, what the GPU check needs to know about this Python's torch:
its version, whether it sees a GPU, its CMake prefix, the NCCL headers and library shipped with
it (pip's nvidia-nccl wheel), and the folders holding the CUDA libraries it uses (its own lib/
and pip's nvidia/*/lib: a C++ user of this LibTorch has them on the library path). Also writes
the same as JSON to the file given as the first argument. Never fails: what is missing is empty.
"""
import glob
import json
import os
import sys


def main():
    facts = {"python": sys.executable, "torch_version": "", "torch_cuda": "", "gpu_count": 0,
             "gpu_name": "", "torch_prefix": "", "nccl_include": "", "nccl_library": "",
             "torch_library_path": "", "error": ""}
    try:
        import torch
        facts["torch_version"] = torch.__version__
        facts["torch_cuda"] = torch.version.cuda or ""
        prefix = torch.utils.cmake_prefix_path
        facts["torch_prefix"] = prefix if os.path.isdir(prefix) else ""
        if torch.cuda.is_available():
            facts["gpu_count"] = torch.cuda.device_count()
            facts["gpu_name"] = torch.cuda.get_device_name(0)
        site = os.path.dirname(os.path.dirname(torch.__file__))
        nvidia = os.path.join(site, "nvidia")
        headers = sorted(glob.glob(os.path.join(nvidia, "**", "nccl.h"), recursive=True))
        libs = sorted(glob.glob(os.path.join(nvidia, "**", "libnccl.so*"), recursive=True))
        facts["nccl_include"] = os.path.dirname(headers[0]) if headers else ""
        facts["nccl_library"] = libs[0] if libs else ""
        dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
        dirs += sorted(d for d in glob.glob(os.path.join(nvidia, "*", "lib")) if os.path.isdir(d))
        facts["torch_library_path"] = ":".join(dirs)
    except Exception as e:  # noqa: BLE001 - reported, never fatal
        facts["error"] = f"{type(e).__name__}: {e}"
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(facts, f, indent=1)
    for k, v in facts.items():
        print(f"{k}={v}")


if __name__ == "__main__":
    main()
