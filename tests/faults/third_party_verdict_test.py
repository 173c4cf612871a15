#!/usr/bin/python3
"""The `third-party` fault scenario's own verdict (scenarios.third_party_verdict) can fail.

Made-up intruder outputs and job endings check each rule: one try that got through, a try that
never ran, a server that did not answer, a job that did not finish or finished with another
checksum, a forged report that reached the job. Then the real rdzv_intruder against a real
rendezvous server (rdzv_agent --serve, 127.0.0.1): with the server's token set every try is
refused and the verdict passes; with no token on the server the intruder's calls succeed and the
verdict fails. Usage: third_party_verdict_test.py RDZV_INTRUDER RDZV_AGENT
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from intruder_verdict import INTRUDER_TRIES, intruder_verdict, third_party_verdict  # noqa: E402

TOOLS = {}
CLEAN = "12.345678"


def refused_output(allowed: str = "", missing: str = "") -> str:
    """rdzv_intruder's output with every try refused, except `allowed` (ALLOWED) and `missing`
    (no line)."""
    lines = []
    for what in INTRUDER_TRIES:
        if what == missing:
            continue
        if what == allowed:
            lines.append(f"ALLOWED {what} OK: ")
        else:
            lines.append(f"REFUSED {what} UNAUTHENTICATED: no rendezvous token was sent")
    return "\n".join(lines) + "\n"


class VerdictTest(unittest.TestCase):
    def test_every_try_refused_and_a_clean_finish_passes(self):
        self.assertEqual(third_party_verdict(0, refused_output(), [0, 0], CLEAN, CLEAN, "log"),
                         (True, True, ""))

    def test_any_try_that_got_through_fails(self):
        for what in INTRUDER_TRIES:
            root_ok, ok, note = third_party_verdict(1, refused_output(allowed=what), [0, 0],
                                                    CLEAN, CLEAN, "")
            self.assertFalse(root_ok, what)
            self.assertFalse(ok, what)
            self.assertIn(f"ALLOWED {what}", note)
            # Even if the intruder's exit code claimed otherwise.
            self.assertFalse(intruder_verdict(0, refused_output(allowed=what))[0], what)

    def test_a_try_that_never_ran_fails(self):
        for what in INTRUDER_TRIES:
            ok, why = intruder_verdict(0, refused_output(missing=what))
            self.assertFalse(ok, what)
            self.assertIn(f"{what}: 0 lines", why)
        self.assertFalse(intruder_verdict(0, "")[0])

    def test_a_server_that_did_not_answer_fails(self):
        out = refused_output().replace(
            "REFUSED no-token join UNAUTHENTICATED: no rendezvous token was sent",
            "ALLOWED no-token join UNAVAILABLE: failed to connect to all addresses")
        self.assertFalse(intruder_verdict(1, out)[0])

    def test_a_job_that_did_not_finish_well_fails_with_the_intruder_refused(self):
        for codes, checksum, logs in (([1, 1], CLEAN, ""), ([0, None], CLEAN, ""),
                                      ([0, 0], "", ""), ([0, 0], "12.345679", ""),
                                      ([0, 0], CLEAN, "root cause forged by rdzv_intruder")):
            root_ok, ok, note = third_party_verdict(0, refused_output(), codes, checksum, CLEAN,
                                                    logs)
            self.assertTrue(root_ok)
            self.assertFalse(ok, (codes, checksum, logs))
            self.assertTrue(note)


class RealServerTest(unittest.TestCase):
    """rdzv_intruder against a real server that waits for machine 1 of a two-machine job."""

    def intrude(self, token: str) -> subprocess.CompletedProcess:
        agent = subprocess.Popen(
            [TOOLS["agent"], "--serve=127.0.0.1:0", f"--token={token}", "--run_id=verdict",
             "--num_machines=2", "--num_processes=4", "--local_processes=2",
             "--timeout_ms=20000"], stdout=subprocess.PIPE, text=True)
        try:
            line = agent.stdout.readline()
            self.assertTrue(line.startswith("SERVING port="), line)
            port = line.split("=")[1].strip()
            # Short deadlines: once the unprotected server's agent gives up, calls time out.
            return subprocess.run([TOOLS["intruder"], f"--endpoint=127.0.0.1:{port}",
                                   "--run_id=verdict", "--deadline_ms=1000"],
                                  capture_output=True, text=True, timeout=60)
        finally:
            agent.kill()
            agent.wait()
            agent.stdout.close()

    def test_a_token_protected_server_refuses_every_try(self):
        r = self.intrude("verdict-secret")
        ok, why = intruder_verdict(r.returncode, r.stdout)
        self.assertTrue(ok, f"{why}\n{r.stdout}{r.stderr}")

    def test_the_verdict_fails_when_the_intruders_calls_succeed(self):
        r = self.intrude("")  # no token on the server: every call gets through
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("ALLOWED no-token store-set OK", r.stdout)  # it wrote into the store
        root_ok, ok, note = third_party_verdict(r.returncode, r.stdout, [0, 0], CLEAN, CLEAN, "")
        self.assertFalse(root_ok, r.stdout)
        self.assertFalse(ok)
        self.assertIn("ALLOWED no-token store-set", note)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[-1])
    TOOLS["intruder"], TOOLS["agent"] = sys.argv.pop(1), sys.argv.pop(1)
    unittest.main(verbosity=2)
