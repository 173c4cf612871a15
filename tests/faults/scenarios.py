"""The fault scenarios: each runs one trial and says how it ended.

A trial passes when every process of the job on both machines is gone within the scenario's
bound (10 s; a hang: hang_timeout + 5 s), the root cause is named as expected on the machines
that report it, and the scenario's own checks hold (exit codes, a checksum, refusals).
"""
import os
import re
import signal
import subprocess
import time

from job import TRAIN_ARGS, Job

FINITE_STEPS = 250  # the restart, third-party and checkpoint jobs train this many steps
PACED_STEPS = FINITE_STEPS * 4  # a job that must outlast a stranger (Context.outlasting_program)
ROOT_RANK3 = r"root cause\s+1\s+\S+\s+3\s"  # a table row: machine 1, rank 3


class Outcome:
    def __init__(self, seconds: float, ended: bool, root_ok: bool, ok: bool, note: str = ""):
        self.seconds = seconds
        self.ended = ended
        self.root_ok = root_ok
        self.ok = ok and ended and root_ok
        self.note = note


class Skipped:
    """A scenario that cannot run here, and why (run_faults.py applies tests/testing/skip.py)."""

    def __init__(self, why: str) -> None:
        self.why = why


class Context:
    """What every trial shares: the cluster, the programs, a work directory, fresh ports."""

    def __init__(self, cluster, tools, work: str) -> None:
        self.cluster = cluster
        self.tools = tools
        self.work = work
        self.next_port = 29700
        self.count = 0
        self.last_work = ""  # the directory of the last trial's job (logs, scratch)
        self._clean = {}  # steps -> checksum of an undisturbed run

    def job(self, name: str, run_id: str = None) -> Job:
        self.count += 1
        self.next_port += 1
        work = os.path.join(self.work, f"{name}-{self.count}")
        self.last_work = work
        return Job(self.cluster, self.tools, work,
                   f"flt-{name}-{self.count}" if run_id is None else run_id, self.next_port)

    def clean_checksum(self, steps: int = FINITE_STEPS) -> str:
        """The checksum of an undisturbed run of `steps` steps (computed once per count)."""
        if steps not in self._clean:
            job = self.job("clean")
            job.start(["--rdzv_token_file", job.token_file("token", "clean-secret")],
                      finite_program(self, ["--steps", str(steps)]))
            job.finish(600)
            self._clean[steps] = job.checksum()
        return self._clean[steps]

    def outlasting_program(self, job, seconds: float, steps: int = PACED_STEPS) -> list:
        """train.bin for `job`, a job that must still be training when a trial's stranger is done
        with it: `steps` steps of at least seconds/steps each (--min-step-ms: a sleep after a
        faster step; the math is unchanged, so clean_checksum(steps), a few seconds, is its
        reference; a busy host only makes the steps longer) until release(job), then the rest at
        full speed. `seconds` is a generous bound on the stranger; the job does not wait it out.
        (Sizing the step count by a calibration run, then running an undisturbed reference as
        long as the job, cost ~60 s of CI: issue 42.)"""
        return finite_program(self, ["--steps", str(steps),
                                     "--min-step-ms", f"{1000.0 * seconds / steps:.3f}",
                                     "--pace-until", os.path.join(job.work, "released")])

    @staticmethod
    def release(job) -> None:
        """Ends the pacing of a job started with outlasting_program."""
        open(os.path.join(job.work, "released"), "w").close()


def finite_program(ctx: Context, extra: list = ()) -> list:
    return [ctx.tools.train] + TRAIN_ARGS + ["--steps", str(FINITE_STEPS)] + list(extra)


def has(text: str, pattern: str) -> bool:
    return re.search(pattern, text) is not None


def fault_trial(ctx: Context, name: str, bound: float, inject, check, options: list = ()):
    """Starts a job that trains until stopped, injects the fault once training runs, times the
    end of every process from the fault, and checks the logs with check(job) -> (root_ok, ok)."""
    job = ctx.job(name)
    job.start(["--rdzv_token_file", job.token_file("token", "s3cret")] + list(options))
    if not job.wait_training():
        job.finish(5)
        return Outcome(0, False, False, False, "training never started: " + job.log(0)[-300:])
    workers = job.cluster.workers(os.path.basename(ctx.tools.train))
    start = time.monotonic()
    inject(job, workers)
    ended = job.finish(bound + 20)
    seconds = time.monotonic() - start
    if ended and seconds > bound:
        ended = False
    root_ok, ok = check(job)
    note = "" if root_ok and ok else f"m0: {job.root_cause(0)!r} m1: {job.root_cause(1)!r}"
    return Outcome(seconds, ended, root_ok, ok, note)


def kill_worker(ctx):
    def inject(job, workers):
        os.kill(workers[3], signal.SIGKILL)

    def check(job):
        rows = [job.root_cause(0), job.root_cause(1)]
        root_ok = all(has(r, ROOT_RANK3) and "signal 9" in r for r in rows)
        return root_ok, job.codes == [1, 1]

    return fault_trial(ctx, "kill-worker-m1", 10, inject, check)


def kill_launcher(machine: int):
    def scenario(ctx):
        def inject(job, workers):
            os.kill(job.procs[machine].pid, signal.SIGKILL)

        def check(job):
            other = 1 - machine
            want = (r"root cause machine 1 lost" if machine == 1 else
                    r"root cause machine 0 \(rendezvous host\) is gone")
            return has(job.root_cause(other), want), job.codes[other] not in (0, None)

        return fault_trial(ctx, f"kill-launcher-m{machine}", 10, inject, check)

    return scenario


def link_down(ctx):
    def inject(job, workers):
        job.cluster.link(1, up=False)

    def check(job):
        job.cluster.link(1, up=True)
        root_ok = (has(job.root_cause(0), r"root cause machine 1 lost: no heartbeat for") and
                   has(job.root_cause(1), r"machine 0 \(rendezvous host\) is unreachable"))
        return root_ok, 0 not in job.codes

    try:
        return fault_trial(ctx, "link-down-m1", 10, inject, check)
    finally:
        ctx.cluster.link(1, up=True)


def sigint(ctx):
    def inject(job, workers):
        os.kill(job.procs[0].pid, signal.SIGINT)

    def check(job):
        root_ok = has(job.root_cause(1), r"machine 0: launcher interrupted by signal 2")
        return root_ok, job.codes[0] == 130 and job.codes[1] not in (0, None)

    return fault_trial(ctx, "sigint-m0", 10, inject, check)


def hang(timeout: int):
    def scenario(ctx):
        def inject(job, workers):
            os.kill(workers[3], signal.SIGSTOP)

        def check(job):
            rows = [job.root_cause(0), job.root_cause(1)]
            root_ok = all(has(r, ROOT_RANK3) and "hang: rank 3 (machine 1) is stopped" in r
                          for r in rows)
            return root_ok, 0 not in job.codes

        # (No scenario waits the default timeout, a minute: its value is plan_test's
        # kHangTimeout, the verdict at any timeout this one's.)
        return fault_trial(ctx, f"hang-{timeout}s", timeout + 5, inject, check,
                           ["--hang_timeout", str(timeout)])

    return scenario


def restart(ctx):
    clean = ctx.clean_checksum()  # first: the run's logs are the trial's
    job = ctx.job("restart")
    job.start(["--rdzv_token_file", job.token_file("token", "s3cret"), "--max_restarts", "2"],
              finite_program(ctx))
    if not job.wait_training():
        job.finish(5)
        return Outcome(0, False, False, False, "training never started")
    workers = job.cluster.workers(os.path.basename(ctx.tools.train))
    start = time.monotonic()
    os.kill(workers[3], signal.SIGKILL)
    ended = job.finish(120)
    seconds = time.monotonic() - start
    cause = r"restarting: attempt 1 of 3 \(cause: rank 3 on machine 1 \(host \S+\): signal 9"
    root_ok = has(job.log(0), cause) and has(job.log(1), cause)
    same = job.checksum() != "" and job.checksum() == clean
    note = "" if root_ok and same else (
        f"checksum {job.checksum()} vs clean {clean}; m0 tail {job.log(0)[-400:]!r}")
    return Outcome(seconds, ended, root_ok, same and job.codes == [0, 0], note)


def python_uneven(ctx):
    if not os.access("/usr/bin/python3", os.X_OK) or subprocess.run(
            ["/usr/bin/python3", "-c", "import torch.distributed"],
            capture_output=True).returncode != 0:
        return Skipped("no /usr/bin/python3 with torch (Debian's python3-torch)")
    job = ctx.job("python-uneven")
    # torch's gloo binds where the host name resolves (loopback here): name each machine's link.
    job.start(["--rdzv_token_file", job.token_file("token", "s3cret"), "--hang_timeout", "5"],
              ["/usr/bin/python3", ctx.tools.python_script],
              env=[{"GLOO_SOCKET_IFNAME": ctx.cluster.veth[m]} for m in (0, 1)])
    # Rank 3 has one batch fewer: it goes idle first, the others follow after their last batch.
    # The job hangs once every rank waits (each prints that line): the clock starts there.
    waiting = [r"torch_uneven rank 3 waits", r"torch_uneven rank 2 waits",
               r"torch_uneven rank 1 waits", r"torch_uneven rank 0 waits"]
    if not all(job.wait_output(1 if i < 2 else 0, line, 180) for i, line in enumerate(waiting)):
        job.finish(5)
        return Outcome(0, False, False, False, "the ranks never all waited: " + job.log(1)[-300:])
    start = time.monotonic()
    ended = job.finish(30)
    seconds = time.monotonic() - start
    ended = ended and seconds <= 5 + 5
    want = "hang (inferred): rank 3 (machine 1) went idle first"
    root_ok = want in job.log(0) and want in job.log(1)
    note = "" if root_ok else f"m0: {job.root_cause(0)!r} m1: {job.root_cause(1)!r}"
    return Outcome(seconds, ended, root_ok, 0 not in job.codes, note)


# Scenarios in their own modules (they import this module's helpers).
from busy_scenarios import busy_machine  # noqa: E402
from checkpoint_scenarios import kill9_checkpoint  # noqa: E402
from elastic_scenarios import ELASTIC_SCENARIOS  # noqa: E402
from hang_scenarios import HANG_SCENARIOS  # noqa: E402 - a stopped worker, named on every machine
from python_scenarios import PYTHON_SCENARIOS  # noqa: E402
from token_scenarios import no_token_refused, third_party, token_mismatch  # noqa: E402

# name → (run one trial, whose fix it needs). Order is the table's.
SCENARIOS = {
    "kill-worker-m1": kill_worker,
    "kill-launcher-m1": kill_launcher(1),
    "kill-launcher-m0": kill_launcher(0),
    "link-down-m1": link_down,
    "sigint-m0": sigint,
    "restart": restart,
    "hang-5s": hang(5),
    "python-uneven": python_uneven,
    "token-mismatch": token_mismatch,
    "no-token-refused": no_token_refused,
    "third-party": third_party,
    "kill9-checkpoint": kill9_checkpoint,
    "busy-machine": busy_machine,
}

SCENARIOS.update(PYTHON_SCENARIOS)
SCENARIOS.update(HANG_SCENARIOS)
SCENARIOS.update(ELASTIC_SCENARIOS)
