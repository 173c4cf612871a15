"""Skip-or-fail for the Python gpu tests: the rule of tests/testing/gpu_test_util.h.

Without a GPU (or without a CUDA torch) a test skips with the reason: it prints "SKIPPED: why"
and exits 77, which CTest reports as skipped (SKIP_RETURN_CODE). With ACCEL_REQUIRE_GPU set (the
device check sets it where a GPU is reported) the same reason fails the test: exit 1.
"""
import os
import sys

SKIP_EXIT = 77
REQUIRE_ENV = "ACCEL_REQUIRE_GPU"


def required():
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def skip(why):
    if required():
        fail(f"skip counted as a failure ({REQUIRE_ENV} is set): {why}")
    print(f"SKIPPED: {why}", flush=True)
    sys.exit(SKIP_EXIT)


def fail(why):
    print(f"FAILED: {why}", flush=True)
    sys.exit(1)


def cuda_torch():
    """Returns the torch module when it sees a GPU; skips (or fails) otherwise."""
    try:
        import torch
    except ImportError as e:
        skip(f"{sys.executable} has no torch ({e})")
    if not torch.cuda.is_available():
        skip(f"torch {torch.__version__} sees no CUDA device")
    return torch


def env_path(name):
    """Returns the path in environment variable `name` (set by CTest); fails when it is unset."""
    value = os.environ.get(name, "")
    if not value:
        fail(f"{name} is not set (run this through ctest)")
    return value
