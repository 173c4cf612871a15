"""Fault scenarios for an unmodified Python DDP script (tests/testing/torch_ddp.py, gloo): its
progress comes from the launcher's Python progress module (launcher/python/), and with it the same
verdicts as train.bin's. Each needs /usr/bin/python3 with torch (skipped otherwise, through
tests/testing/skip.py: a failure under CI)."""
import functools
import os
import re
import signal
import subprocess
import threading
import time

from scenarios import ROOT_RANK3, Outcome, Skipped, has

WINDOW = 6  # the straggler window of python-straggler, seconds
INTERVAL = 1  # its status interval
NO_TORCH = "no /usr/bin/python3 with torch (Debian's python3-torch)"


@functools.lru_cache(maxsize=None)
def have_torch() -> bool:  # once per suite run: the import takes 2-4 s on a busy host
    return os.access("/usr/bin/python3", os.X_OK) and subprocess.run(
        ["/usr/bin/python3", "-c", "import torch.distributed"], capture_output=True).returncode == 0


def start_ddp(ctx, name: str, options: list, script_args: list = ()):
    """Starts torch_ddp.py on 2 x 2 ranks; returns (job, {rank: pid}) once every rank stepped,
    or (job, None) after finishing a job that never trained."""
    job = ctx.job(name)
    # torch's gloo binds where the host name resolves (loopback here): name each machine's link.
    job.start(["--rdzv_token_file", job.token_file("token", "s3cret")] + list(options),
              ["/usr/bin/python3", ctx.tools.python_ddp, "--steps", "0"] + list(script_args),
              env=[{"GLOO_SOCKET_IFNAME": ctx.cluster.veth[m]} for m in (0, 1)])
    if not job.wait_training(timeout=180):
        job.finish(5)
        return job, None
    return job, job.cluster.workers(os.path.basename(ctx.tools.python_ddp))


def python_stopped(ctx):
    """SIGSTOP a Python rank: named "stopped" on both machines, not inferred."""
    if not have_torch():
        return Skipped(NO_TORCH)
    job, workers = start_ddp(ctx, "python-stopped", ["--hang_timeout", "5"])
    if workers is None:
        return Outcome(0, False, False, False, "training never started: " + job.log(1)[-300:])
    start = time.monotonic()
    os.kill(workers[3], signal.SIGSTOP)
    ended = job.finish(30)
    seconds = time.monotonic() - start
    ended = ended and seconds <= 5 + 5
    rows = [job.root_cause(0), job.root_cause(1)]
    root_ok = all(has(r, ROOT_RANK3) and "hang: rank 3 (machine 1) is stopped" in r for r in rows)
    note = "" if root_ok else f"m0: {rows[0]!r} m1: {rows[1]!r}"
    return Outcome(seconds, ended, root_ok, 0 not in job.codes, note)


def python_spin(ctx):
    """Rank 3 spins (`while True: pass`) after step 20 while the others wait in DDP's all-reduce:
    the job ends within hang_timeout + 5 s naming rank 3 as the rank that never reached the
    collective they wait in (it uses CPU all along: without the progress record this was not
    detected at all)."""
    if not have_torch():
        return Skipped(NO_TORCH)
    job, workers = start_ddp(ctx, "python-spin", ["--hang_timeout", "5"],
                             ["--spin-rank", "3", "--spin-at", "20"])
    if workers is None:
        return Outcome(0, False, False, False, "training never started: " + job.log(1)[-300:])
    if not job.wait_output(1, r"\[rank 3\] spinning", 120):
        job.finish(5)
        return Outcome(0, False, False, False, "rank 3 never spun: " + job.log(1)[-300:])
    start = time.monotonic()  # the others enter the next all-reduce within milliseconds
    ended = job.finish(30)
    seconds = time.monotonic() - start
    ended = ended and seconds <= 5 + 5
    rows = [job.root_cause(0), job.root_cause(1)]
    want = r"hang: rank 3 \(machine 1\) did not reach collective \d+ .*it kept running"
    root_ok = all(has(r, ROOT_RANK3) and has(r, want) for r in rows)
    note = "" if root_ok else f"m0: {rows[0]!r} m1: {rows[1]!r}"
    return Outcome(seconds, ended, root_ok, 0 not in job.codes, note)


def python_straggler(ctx):
    """Rank 3 slowed by SIGSTOP/SIGCONT cycles (stopped 350 ms of every 400 ms): machine 0's
    console names it a straggler within one window (plus two status intervals), and no other
    rank is named; then ^C on machine 0 ends the job as in sigint-m0. "s" is the time from the
    first stop until it was named."""
    if not have_torch():
        return Skipped(NO_TORCH)
    options = ["--hang_timeout", "0", "--status_interval", str(INTERVAL), "--straggler_window",
               str(WINDOW), "--straggler_threshold", "2"]
    # Steps of a few milliseconds of own work (as the netns status test's), so that the slowed
    # rank stands out of the noise of four ranks sharing a busy host.
    job, workers = start_ddp(ctx, "python-straggler", options, ["--hidden", "256"])
    if workers is None:
        return Outcome(0, False, False, False, "training never started: " + job.log(1)[-300:])
    time.sleep(WINDOW + 2 * INTERVAL)  # every rank measured over a full window first
    early = has(job.log(0), r"is a straggler")
    stop = threading.Event()

    def slow() -> None:
        while not stop.is_set():
            try:
                os.kill(workers[3], signal.SIGSTOP)
                time.sleep(0.35)
                os.kill(workers[3], signal.SIGCONT)
            except ProcessLookupError:
                return
            time.sleep(0.05)

    slower = threading.Thread(target=slow)
    start = time.monotonic()
    slower.start()
    named = None
    while time.monotonic() - start < 3 * WINDOW:
        if has(job.log(0), r"rank 3 \(machine 1.*is a straggler"):
            named = time.monotonic() - start
            break
        time.sleep(0.2)
    stop.set()
    slower.join()
    try:
        os.kill(workers[3], signal.SIGCONT)
    except ProcessLookupError:
        pass
    # ^C on machine 0 ends the job as in sigint-m0: every process gone within 10 s, machine 0's
    # launcher exits 130 and machine 1's fails.
    os.kill(job.procs[0].pid, signal.SIGINT)
    interrupted = time.monotonic()
    ended = job.finish(30) and time.monotonic() - interrupted <= 10
    codes_ok = job.codes[0] == 130 and job.codes[1] not in (0, None)
    others = re.findall(r"rank [012] \(machine .*is a straggler", job.log(0))
    root_ok = named is not None and named <= WINDOW + 2 * INTERVAL and not others and not early
    note = "" if root_ok and ended and codes_ok else (
        f"named after {named} s; early {early}; others {others[:2]}; ended within 10 s of ^C "
        f"{ended}; exit codes {job.codes}; m0 tail {job.log(0)[-300:]!r}")
    return Outcome(named if named is not None else 0, ended, root_ok, codes_ok, note)


PYTHON_SCENARIOS = {
    "python-stopped": python_stopped,
    "python-spin": python_spin,
    "python-straggler": python_straggler,
}
