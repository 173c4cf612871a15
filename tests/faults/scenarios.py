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

from job import FOREVER, TRAIN_ARGS, Job

FINITE_STEPS = 250  # the restart, third-party and checkpoint jobs train this many steps
ROOT_RANK3 = r"root cause\s+1\s+\S+\s+3\s"  # a table row: machine 1, rank 3


class Outcome:
    def __init__(self, seconds: float, ended: bool, root_ok: bool, ok: bool, note: str = ""):
        self.seconds = seconds
        self.ended = ended
        self.root_ok = root_ok
        self.ok = ok and ended and root_ok
        self.note = note


class Context:
    """What every trial shares: the cluster, the programs, a work directory, fresh ports."""

    def __init__(self, cluster, tools, work: str) -> None:
        self.cluster = cluster
        self.tools = tools
        self.work = work
        self.next_port = 29700
        self.count = 0
        self.last_work = ""  # the directory of the last trial's job (logs, scratch)
        self._clean = None

    def job(self, name: str, run_id: str = None) -> Job:
        self.count += 1
        self.next_port += 1
        work = os.path.join(self.work, f"{name}-{self.count}")
        self.last_work = work
        return Job(self.cluster, self.tools, work,
                   f"flt-{name}-{self.count}" if run_id is None else run_id, self.next_port)

    def clean_checksum(self) -> str:
        """The checksum of an undisturbed FINITE_STEPS run (computed once)."""
        if self._clean is None:
            job = self.job("clean")
            job.start(["--rdzv_token_file", job.token_file("token", "clean-secret")],
                      finite_program(self))
            job.finish(180)
            self._clean = job.checksum()
        return self._clean


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

        options = ["--hang_timeout", str(timeout)] if timeout else []
        bound = (timeout or 60) + 5
        return fault_trial(ctx, f"hang-{timeout or 'default'}", bound, inject, check, options)

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
        return None  # skipped: no python3-torch
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


def third_party(ctx):
    """A job started with no token options, as a user would; a stranger on machine 1's network
    who knows the endpoint (and the guessable default run id) tries to read, write, join and
    abort it. Passes when every try is refused for want of the token and the job finishes (or
    the job refused to start for want of a token, saying so)."""
    job = ctx.job("third-party", run_id="")  # the default run id
    job.start([], finite_program(ctx))
    if not job.wait_training(min_step=1):
        try:  # both launchers refusing to start is an outcome, judged below
            for p in job.procs:
                p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            job.finish(5)
            return Outcome(0, False, False, False, "training never started: " + job.log(0)[-300:])
    guessed = f"job-{ctx.cluster.addr[0]}-{job.port}-4"  # the run id main used to choose
    intruder = subprocess.run(
        ["ip", "netns", "exec", ctx.cluster.ns[1], ctx.tools.intruder,
         f"--endpoint={ctx.cluster.addr[0]}:{job.port}", f"--run_id={guessed}"],
        capture_output=True, text=True, timeout=60)
    start = time.monotonic()
    ended = job.finish(120)
    seconds = time.monotonic() - start
    refused_to_start = job.codes == [2, 2] and "token" in job.log(0)
    finished = job.codes == [0, 0]
    root_ok = intruder.returncode == 0 or refused_to_start
    note = "" if root_ok and (finished or refused_to_start) else (
        f"job exit {job.codes}; intruder: {intruder.stdout.strip()!r}")
    return Outcome(seconds, ended, root_ok, finished or refused_to_start, note)


def token_mismatch(ctx):
    job = ctx.job("token-mismatch")
    good = job.token_file("token0", "the-right-secret")
    bad = job.token_file("token1", "a-wrong-secret")
    start = time.monotonic()
    job.start(["--rdzv_timeout", "5"], per_machine=(["--rdzv_token_file", good],
                                                     ["--rdzv_token_file", bad]))
    ended = job.finish(10)
    seconds = time.monotonic() - start
    root_ok = ("token is wrong" in job.log(1) and
               has(job.log(0), r"refused: a join claiming machine_rank 1 .*token is wrong"))
    note = "" if root_ok else f"m0: {job.log(0)[-300:]!r} m1: {job.log(1)[-300:]!r}"
    return Outcome(seconds, ended, root_ok, job.codes == [3, 3], note)


def kill9_checkpoint(ctx):
    """kill -9 of every process of the job (both machines, one shared checkpoint directory)
    while it saves a checkpoint every step; then --resume must go on from the last good state:
    resumed at a step > 0, and the final parameters equal an undisturbed run's."""
    clean = ctx.clean_checksum()  # first: the run's logs are the trial's
    job = ctx.job("kill9-checkpoint")
    token = ["--rdzv_token_file", job.token_file("token", "s3cret")]
    ckpt = ["--checkpoint-dir", os.path.join(job.work, "ckpt"), "--save-every", "1"]
    job.start(token, finite_program(ctx, ckpt))
    job.wait_training(min_step=20)
    start = time.monotonic()
    job.cluster.kill_all()
    ended = job.finish(10)
    seconds = time.monotonic() - start
    resumed = ctx.job("kill9-resume")
    resumed.work = job.work  # same checkpoint, same run directory
    resumed.logs = [os.path.join(job.work, f"resume-m{m}.log") for m in (0, 1)]
    resumed.env = job.env
    ctx.last_work = job.work
    resumed.start(token, finite_program(ctx, ckpt + ["--resume"]))
    resumed.finish(180)
    at = re.findall(r"resumed from \S+ at step (\d+)", resumed.log(0))
    root_ok = bool(at) and int(at[-1]) > 0
    same = resumed.checksum() != "" and resumed.checksum() == clean
    note = "" if root_ok and same else (
        f"first run exit {job.codes}, resume exit {resumed.codes}, resumed at {at}, checksum "
        f"{resumed.checksum()} vs {clean}; resume m0 tail "
        f"{resumed.log(0)[-300:]!r}")
    return Outcome(seconds, ended, root_ok, same and resumed.codes == [0, 0], note)


def busy_machine(ctx):
    """Machine 1's cores saturated by its own workers plus 8 busy loops at the workers' priority
    (here they take the whole host's cores, machine 0's too) for ACCEL_FAULTS_BUSY_SECONDS (60).
    CFS alone rarely starves a launcher for 3 s on this host, so the worst of such starvation is
    also played out: every 10 s one launcher, then the other (machine 0's is the rendezvous
    server), gets no CPU at all for 4 s (SIGSTOP, SIGCONT), longer than the 3 s a silent machine
    may go before it is lost when its host does not answer. No machine may be declared lost and
    training must go on. Then a worker is killed: the job must still end within the usual bound
    with that rank as the root cause."""
    busy_seconds = float(os.environ.get("ACCEL_FAULTS_BUSY_SECONDS", "60"))
    job = ctx.job("busy-machine")
    job.start(["--rdzv_token_file", job.token_file("token", "s3cret")])
    if not job.wait_training():
        job.finish(5)
        return Outcome(0, False, False, False, "training never started: " + job.log(0)[-300:])
    before = job.progress_step(1, 3)
    loops = [subprocess.Popen(["ip", "netns", "exec", ctx.cluster.ns[1], "sh", "-c",
                               "while :; do :; done"], stdin=subprocess.DEVNULL)
             for _ in range(8)]
    lost = re.compile(r"lost|unreachable|is gone")
    survived = True
    frozen = None
    try:
        begin = time.monotonic()
        while time.monotonic() < begin + busy_seconds:
            phase = (time.monotonic() - begin) % 10
            want = 1 if phase < 4 else 0 if 5 <= phase < 9 else None
            if want != frozen:
                if frozen is not None:
                    os.kill(job.procs[frozen].pid, signal.SIGCONT)
                if want is not None:
                    os.kill(job.procs[want].pid, signal.SIGSTOP)
                frozen = want
            if any(p.poll() is not None for p in job.procs) or any(
                    lost.search(job.log(m)) for m in (0, 1)):
                survived = False
                break
            time.sleep(0.1)
    finally:
        if frozen is not None:
            os.kill(job.procs[frozen].pid, signal.SIGCONT)
        for p in loops:
            p.kill()
            p.wait()
    time.sleep(1)  # both launchers run again: a loss now would still be a false one
    survived = survived and not any(lost.search(job.log(m)) for m in (0, 1))
    step = job.progress_step(1, 3)
    workers = job.cluster.workers(os.path.basename(ctx.tools.train))
    start = time.monotonic()
    if survived and 3 in workers:
        os.kill(workers[3], signal.SIGKILL)
    ended = job.finish(10 + 20)
    seconds = time.monotonic() - start
    ended = ended and seconds <= 10
    rows = [job.root_cause(0), job.root_cause(1)]
    root_ok = survived and all(has(r, ROOT_RANK3) and "signal 9" in r for r in rows)
    ok = job.codes == [1, 1] and step > before and not any(lost.search(r) for r in rows)
    note = "" if root_ok and ok else (
        f"survived the busy period: {survived}, rank 3 at step {before} then {step}, "
        f"exit {job.codes}; m0: {job.root_cause(0)!r} m1: {job.root_cause(1)!r}")
    return Outcome(seconds, ended, root_ok, ok, note)


# name → (run one trial, whose fix it needs). Order is the table's.
SCENARIOS = {
    "kill-worker-m1": kill_worker,
    "kill-launcher-m1": kill_launcher(1),
    "kill-launcher-m0": kill_launcher(0),
    "link-down-m1": link_down,
    "sigint-m0": sigint,
    "restart": restart,
    "hang-5s": hang(5),
    "hang-default": hang(0),
    "python-uneven": python_uneven,
    "token-mismatch": token_mismatch,
    "third-party": third_party,
    "kill9-checkpoint": kill9_checkpoint,
    "busy-machine": busy_machine,
}

# The Python progress module's scenarios (an unmodified DDP script): python_scenarios.py.
from python_scenarios import PYTHON_SCENARIOS  # noqa: E402 - it imports this module's helpers

SCENARIOS.update(PYTHON_SCENARIOS)
