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
        self._clean = None
        self.clean_seconds = 0.0  # how long the undisturbed run took (set with _clean)

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
            start = time.monotonic()
            job.finish(180)
            self.clean_seconds = time.monotonic() - start
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


# The tries rdzv_intruder makes (each once without a token, once with a guessed one).
INTRUDER_TRIES = [f"{label} {what}" for label in ("no-token", "guessed-token")
                  for what in ("store-get", "store-set", "join", "report-failure")]


def intruder_verdict(returncode: int, stdout: str) -> tuple:
    """Judges rdzv_intruder's run: (every try refused for want of the token, why not). Each try
    in INTRUDER_TRIES must have printed exactly one line, REFUSED, and the exit code must be 0: a
    try that got through (ALLOWED), one that never ran, or a server that did not answer (ALLOWED
    with UNAVAILABLE) fails it."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    problems = []
    for want in INTRUDER_TRIES:
        found = [line for line in lines if line.split(" ")[1:3] == want.split(" ")]
        if len(found) != 1:
            problems.append(f"{want}: {len(found)} lines")
        elif not found[0].startswith("REFUSED "):
            problems.append(found[0])
    others = [line for line in lines if line.split(" ")[0] not in ("REFUSED", "ALLOWED")]
    problems += [f"unexpected line {line!r}" for line in others]
    if returncode != 0:
        problems.append(f"exit {returncode}")
    return not problems, "; ".join(problems)


def third_party_verdict(intruder_rc: int, intruder_out: str, codes: list, checksum: str,
                        clean: str, logs: str) -> tuple:
    """(root_ok, ok, note) of a third-party trial: root_ok when every intruder try was refused;
    ok when the job then finished on both machines with the undisturbed run's checksum and its
    logs show no trace of the intruder's forged failure report."""
    root_ok, why = intruder_verdict(intruder_rc, intruder_out)
    problems = [] if root_ok else [f"intruder: {why}"]
    if codes != [0, 0]:
        problems.append(f"job exit {codes}, not [0, 0]")
    if not checksum or checksum != clean:
        problems.append(f"checksum {checksum!r} vs clean {clean!r}")
    if "forged by rdzv_intruder" in logs:
        problems.append("the intruder's forged failure report reached the job")
    return root_ok, not problems, "; ".join(problems)


def third_party(ctx):
    """A running, token-protected job; a stranger on machine 1's network who knows the endpoint
    and the run id but not the token tries to read and write the job's store, join it and abort
    it with a forged failure report, while the job trains. Passes when every try is refused and
    the job finishes with the checksum of an undisturbed run. "s": the intruder's run."""
    clean = ctx.clean_checksum()  # first: the run's logs are the trial's
    job = ctx.job("third-party")
    job.start(["--rdzv_token_file", job.token_file("token", "s3cret")], finite_program(ctx))
    if not job.wait_training(min_step=2):
        job.finish(5)
        return Outcome(0, False, False, False, "training never started: " + job.log(0)[-300:])
    start = time.monotonic()
    intruder = subprocess.run(
        ["ip", "netns", "exec", ctx.cluster.ns[1], ctx.tools.intruder,
         f"--endpoint={ctx.cluster.addr[0]}:{job.port}", f"--run_id={job.run_id}"],
        capture_output=True, text=True, timeout=60)
    seconds = time.monotonic() - start
    # The tries must have met the job while it trained: it has not finished yet.
    during = all(p.poll() is None for p in job.procs)
    ended = job.finish(120)
    root_ok, ok, note = third_party_verdict(intruder.returncode, intruder.stdout, job.codes,
                                            job.checksum(), clean, job.log(0) + job.log(1))
    if not during:
        ok, note = False, f"the job ended before the intruder was done; {note}"
    if note:
        note += f"; intruder said {intruder.stdout.strip()!r} {intruder.stderr.strip()[-200:]!r}"
    return Outcome(seconds, ended, root_ok, ok, note)


def no_token_refused(ctx):
    """A two-machine job started with no token option, as a user would: both launchers refuse to
    start (exit 2) within seconds, saying a token is needed, and start nothing."""
    job = ctx.job("no-token-refused", run_id="")  # the default (guessable) run id
    start = time.monotonic()
    job.start([], finite_program(ctx))
    ended = job.finish(10)
    seconds = time.monotonic() - start
    said = "needs a rendezvous token, and none is configured"
    root_ok = said in job.log(0) and said in job.log(1)
    trained = job.progress_step(0, 0) >= 0 or job.progress_step(1, 2) >= 0
    note = "" if root_ok and job.codes == [2, 2] and not trained else (
        f"exit {job.codes}, a rank ran: {trained}; m0 {job.log(0)[-300:]!r}")
    return Outcome(seconds, ended, root_ok, job.codes == [2, 2] and not trained, note)


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


def save_in_progress(ckpt: str) -> str:
    """Says which part of a save the files under `ckpt` show was under way when every process
    was killed ("" when none): "<ckpt>.tmp" exists from the save's start until it is promoted,
    "<ckpt>.old" while the previous checkpoint is being replaced (worker/src/checkpoint_dir.h)."""
    if os.path.isdir(ckpt + ".old"):
        return "promoting (.old present)"
    if os.path.isdir(ckpt + ".tmp"):
        return "writing (.tmp present)"
    return ""


def kill9_checkpoint(ctx):
    """kill -9 of every process of the job (both machines, one shared checkpoint directory)
    while it saves a checkpoint every step, aimed at a save in progress; then --resume must go on
    from the last good state: resumed at a step > 0, and the final parameters equal an
    undisturbed run's. The trial records what the checkpoint directory shows of the save the
    kill interrupted, and passes only when a save was in progress (the case under test). "s":
    from the kill until the resumed job finished (bound: 3x this job's own start-up plus its
    pace times the steps left)."""
    clean = ctx.clean_checksum()  # first: the run's logs are the trial's
    job = ctx.job("kill9-checkpoint")
    token = ["--rdzv_token_file", job.token_file("token", "s3cret")]
    ckpt = os.path.join(job.work, "ckpt")
    options = ["--checkpoint-dir", ckpt, "--save-every", "1"]
    launched = time.monotonic()
    job.start(token, finite_program(ctx, options))
    reached = job.wait_steps([1, 10, 20], timeout=90)
    if reached is None:
        job.finish(5)
        return Outcome(0, False, False, False, "training never reached step 20: " +
                       job.log(0)[-300:])
    # This job's own pace, checkpointing every step as the resume will: its start-up (launch to
    # step 1) and its seconds per step (steps 10 to 20, under the machine's load right now).
    startup = reached[0][0] - launched
    pace = (reached[2][0] - reached[1][0]) / max(1, reached[2][1] - reached[1][1])
    # Aim at a save: every pid of the job known first, then SIGKILL the moment a save's
    # directory appears (a save takes a few milliseconds of each step).
    pids = ctx.cluster.all_pids()
    deadline = time.monotonic() + 10
    while not os.path.isdir(ckpt + ".tmp") and time.monotonic() < deadline:
        pass
    start = time.monotonic()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    ctx.cluster.kill_all()  # anything started since the pids were read
    killed_ended = job.finish(10)
    during = save_in_progress(ckpt)
    resumed = ctx.job("kill9-resume")
    resumed.work = job.work  # same checkpoint, same run directory
    resumed.logs = [os.path.join(job.work, f"resume-m{m}.log") for m in (0, 1)]
    resumed.env = job.env
    ctx.last_work = job.work
    resume_start = time.monotonic()
    resumed.start(token, finite_program(ctx, options + ["--resume"]))
    resumed.wait_output(0, r"resumed from \S+ at step \d+", 3 * startup)
    at = re.findall(r"resumed from \S+ at step (\d+)", resumed.log(0))
    # Normal: start up, then the steps left at this job's pace; the bound is 3x that.
    normal = startup + pace * (FINITE_STEPS - (int(at[-1]) if at else 0))
    left = 3 * normal - (time.monotonic() - resume_start)
    ended = resumed.finish(max(left, 0)) and killed_ended
    seconds = time.monotonic() - start
    at = re.findall(r"resumed from \S+ at step (\d+)", resumed.log(0))
    root_ok = bool(at) and int(at[-1]) > 0
    same = resumed.checksum() != "" and resumed.checksum() == clean
    ok = same and resumed.codes == [0, 0] and bool(during)
    note = (f"save in progress at the kill: {during or 'none'}; resumed at step "
            f"{at[-1] if at else '?'}; bound 3 x {normal:.1f} s (start-up {startup:.1f} s, "
            f"{pace * 1000:.0f} ms/step)")
    if not (root_ok and ok):
        note += (f"; first run exit {job.codes}, resume exit {resumed.codes}, checksum "
                 f"{resumed.checksum()} vs {clean}; resume m0 tail {resumed.log(0)[-300:]!r}")
    return Outcome(seconds, ended, root_ok, ok, note)


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
    "no-token-refused": no_token_refused,
    "third-party": third_party,
    "kill9-checkpoint": kill9_checkpoint,
    "busy-machine": busy_machine,
}

# The Python progress module's scenarios (an unmodified DDP script): python_scenarios.py.
from python_scenarios import PYTHON_SCENARIOS  # noqa: E402 - it imports this module's helpers

SCENARIOS.update(PYTHON_SCENARIOS)
