#!/usr/bin/env python3
"""scripts/device-check/summary.py's verdict: CTest's JUnit XML and the step states in, PASS or
FAIL out. A skip passes a dry run but fails where a GPU is required; a case CTest did not run
(a fixture whose setup failed, a missing executable) and a failed or unfinished step always fail."""
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[4]
SUMMARY = ROOT / "scripts" / "device-check" / "summary.py"
sys.path.insert(0, str(SUMMARY.parent))
import summary  # noqa: E402

CASE = '<testcase name="{name}" classname="{name}" time="1.5" status="{status}">{child}' \
       '<system-out>{out}</system-out></testcase>'


def junit(*cases):
    return '<?xml version="1.0" encoding="UTF-8"?><testsuite name="(empty)">' + "".join(
        CASE.format(**c) for c in cases) + "</testsuite>"


PASSED = dict(name="GpuNcclTest.WorldOfOneCollectivesFp32", status="run", child="", out="ok")
SKIPPED = dict(name="GpuLossScalerTest.Fused", status="notrun",
               child='<skipped message="SKIP_RETURN_CODE=77"/>',
               out="x.cc:20: Skipped\nno GPU visible (no libcuda)\n[  SKIPPED ] 1 test")
NOT_RUN = dict(name="gpu_py_gradscaler_replay", status="notrun",
               child='<skipped message="Fixture dependency failed"/>', out="")
CONTROL = dict(name="gpu_py_torch_nccl_control", status="run", child="", out="PASSED: ok")
STEPS_OK = ["device\tok\t1\t", "configure\tok\t2\t", "build\tok\t3\t", "tests\tok\t4\t",
            "bench\tok\t5\t"]


class SummaryTest(unittest.TestCase):
    def run_summary(self, required, cases, steps=STEPS_OK):
        with tempfile.TemporaryDirectory() as tmp:
            out, state, build = (pathlib.Path(tmp) / d for d in ("out", "state", "build"))
            for d in (out, state, build):
                d.mkdir()
            (state / "mode.tsv").write_text(f"gpu_seen\t{required}\nrequired\t{required}\n")
            (state / "steps.tsv").write_text("\n".join(steps) + "\n")
            (out / "tests_junit.xml").write_text(junit(*cases))
            proc = subprocess.run([sys.executable, str(SUMMARY), "--out", str(out), "--state",
                                   str(state), "--build", str(build)], capture_output=True,
                                  text=True)
            result = summary.read_json(str(out / "summary.json"))
        return proc, result

    def test_dry_run_with_skips_passes(self):
        proc, s = self.run_summary(0, [PASSED, SKIPPED, CONTROL])
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(s["verdict"], "pass")
        self.assertIn("DRY RUN", proc.stdout)
        self.assertEqual(s["case_counts"]["skipped"], 1)

    def test_a_skip_fails_where_a_gpu_is_required(self):
        proc, s = self.run_summary(1, [PASSED, SKIPPED, CONTROL])
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(s["verdict"], "fail")
        self.assertTrue(any("GpuLossScalerTest.Fused skipped on a machine that must run it: "
                            "Skipped: no GPU visible" in p for p in s["problems"]), s["problems"])

    def test_a_case_ctest_did_not_run_fails(self):
        proc, s = self.run_summary(0, [PASSED, NOT_RUN])
        self.assertEqual(proc.returncode, 1)
        self.assertIn("case gpu_py_gradscaler_replay not run", s["problems"])

    def test_a_failed_step_is_named_with_its_log(self):
        steps = STEPS_OK[:1] + ["configure\tfailed\t9\texit 1"] + [
            f"{n}\tnot run\t0\tconfigure failed" for n in ("build", "tests", "bench")]
        proc, s = self.run_summary(1, [], steps)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(s["first_failed_step"]["step"], "configure")

    def test_an_unfinished_run_is_not_a_pass(self):
        proc, s = self.run_summary(1, [PASSED, CONTROL], STEPS_OK[:3] + ["tests\trunning\t0\t"])
        self.assertEqual(s["verdict"], "running")
        self.assertEqual(proc.returncode, 1)

    def test_nccl_verdict_tells_environment_from_ours(self):
        fail = dict(PASSED, status="fail", child='<failure message=""/>')
        self.assertEqual(summary.nccl_verdict(summary_cases(fail, CONTROL))[:4], "OURS")
        self.assertEqual(summary.nccl_verdict(
            summary_cases(fail, dict(CONTROL, status="fail", child="<failure/>")))[:11],
            "ENVIRONMENT")
        self.assertEqual(summary.nccl_verdict(summary_cases(PASSED, CONTROL))[:2], "ok")


def summary_cases(*cases):
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(junit(*cases))
    try:
        return summary.read_cases(f.name)
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
