"""The busy-machine scenario: a machine whose cores are saturated is slow, not lost (issue 29)."""
import os
import re
import signal
import subprocess
import time

from scenarios import Outcome, has, ROOT_RANK3


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
    # A loss as the launchers report one; not the plan's own "lost machine:" line (the liveness
    # rule it prints since 9f298dd).
    lost = re.compile(r"^(?!\s+lost machine:).*(lost|unreachable|is gone)", re.M)
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
