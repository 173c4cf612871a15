"""The suite's skip rule for Python tests (tests/testing/skip.h has it for C++, skip.sh for shell).

A test that lacks something CI provides (root, ip netns, a Debian package) calls skip(why): it
prints "SKIP: why" and exits 77 (CTest: skipped, SKIP_RETURN_CODE 77). Under CI (CI=true) or
ACCEL_STRICT_TESTS=1 it prints "FAIL: ..." and exits 1 instead; ACCEL_STRICT_TESTS=0 turns that off
even under CI. The gpu label has its own rule (ACCEL_REQUIRE_GPU, tests/testing/gpu_case.py).
"""
import os
import sys

SKIP_EXIT = 77
STRICT_ENV = "ACCEL_STRICT_TESTS"


def _true(value: str) -> bool:
    return value.lower() in ("1", "true", "yes")


def strict() -> bool:
    """Returns whether a skip for want of what CI provides is a failure here."""
    if os.environ.get(STRICT_ENV, ""):
        return _true(os.environ[STRICT_ENV])
    return _true(os.environ.get("CI", ""))


def strict_reason() -> str:
    if os.environ.get(STRICT_ENV, ""):
        return f"{STRICT_ENV}={os.environ[STRICT_ENV]}"
    return f"CI={os.environ.get('CI', '')}"


def skip(why: str) -> int:
    """Returns the exit code for a test that cannot run here (77, or 1 when strict), after
    printing why."""
    if strict():
        print(f"FAIL: a skip is a failure here ({strict_reason()}; {STRICT_ENV}=0 allows it): "
              f"{why}", flush=True)
        return 1
    print(f"SKIP: {why}", flush=True)
    return SKIP_EXIT
