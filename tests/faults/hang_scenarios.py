"""Fault scenarios for the hang verdict (issue 25): one worker SIGSTOPped while the others wait in
a collective, with steps of a few milliseconds (so the others enter the next all-reduce at once
and the stopped rank is usually stopped inside a collective too; the fault suite's model is
scenarios.py's hang-5s).
Each trial stops the next rank of its machine in turn (trial 1: the machine's first rank, trial 2:
its second, ...), so both ranks of the machine are covered. A trial passes when the job ends
within hang_timeout + 5 s and BOTH machines name the stopped rank, by its observed state T, as the
root cause: elastic eviction acts on that verdict, so a wrong one on any machine evicts a healthy
machine."""
import itertools
import os
import signal
import time

from job import FOREVER, TRAIN_ARGS
from scenarios import Outcome, has

HANG_TIMEOUT = 5
# How long a starved launcher stays frozen after the worker stops: past the other machine's hang
# detection (HANG_TIMEOUT plus up to a publish period), well short of a lost machine (30 s).
FREEZE = HANG_TIMEOUT + 0.8


def train_args(batch_size: int) -> list:
    args = list(TRAIN_ARGS)
    args[args.index("--batch-size") + 1] = str(batch_size)
    return args


def root_row(machine: int, rank: int) -> str:
    """The root-cause table row for `rank` on `machine` (scenarios.ROOT_RANK3, any rank)."""
    return rf"root cause\s+{machine}\s+\S+\s+{rank}\s"


# Starved past the other machine's report wait (4 publish periods, 2 s) too: it decided from its
# stale copy alone, an inference naming a rank of its own (issue 35's wrong verdict).
FREEZE_LONG = HANG_TIMEOUT + 3.5


def stopped_worker(machine: int, batch_size: int, starve_launcher: bool = False,
                   freeze: float = FREEZE):
    """With `starve_launcher`, the machine's launcher gets no CPU (SIGSTOP) from just before the
    worker is stopped until `freeze` seconds after, past the moment the other machine finds the job
    hung: the other machine's copy of this machine's ranks predates the stop (issue 25's wrong
    verdict, reproduced on purpose; a busy machine's launcher is starved like this)."""
    turn = itertools.count()

    def scenario(ctx):
        rank = 2 * machine + next(turn) % 2
        name = f"hang-stop-b{batch_size}-m{machine}" + ("-starved" if starve_launcher else "")
        job = ctx.job(name)
        program = [ctx.tools.train] + train_args(batch_size) + ["--steps", str(FOREVER)]
        job.start(["--rdzv_token_file", job.token_file("token", "s3cret"), "--hang_timeout",
                   str(HANG_TIMEOUT)], program)
        if not job.wait_training():
            job.finish(5)
            return Outcome(0, False, False, False, "training never started: " + job.log(0)[-300:])
        workers = job.cluster.workers(os.path.basename(ctx.tools.train))
        launcher = job.procs[machine].pid
        if starve_launcher:
            os.kill(launcher, signal.SIGSTOP)
        start = time.monotonic()
        os.kill(workers[rank], signal.SIGSTOP)
        if starve_launcher:
            time.sleep(freeze)
            os.kill(launcher, signal.SIGCONT)
        # Starved: when the other machine found no hang before the launcher resumed, what the
        # launcher sees on resuming (its ranks' records moved since its last sample) is activity,
        # and the hang is found a hang timeout later.
        bound = HANG_TIMEOUT + 5 + (max(HANG_TIMEOUT, freeze) if starve_launcher else 0)
        ended = job.finish(bound + 20)
        seconds = time.monotonic() - start
        ended = ended and seconds <= bound
        rows = [job.root_cause(0), job.root_cause(1)]
        want = f"hang: rank {rank} (machine {machine}) is stopped"
        root_ok = all(has(r, root_row(machine, rank)) and want in r for r in rows)
        note = f"stopped rank {rank}" + (
            "" if root_ok else f"; m0: {rows[0]!r} m1: {rows[1]!r}")
        return Outcome(seconds, ended, root_ok, 0 not in job.codes, note)

    return scenario


HANG_SCENARIOS = {
    # Fast steps (issue 25's measurement: --batch-size 2), a worker of machine 1 stopped.
    "hang-stop-fast-m1": stopped_worker(1, 2),
    # The same with a worker of machine 0 (the rendezvous host) stopped.
    "hang-stop-fast-m0": stopped_worker(0, 2),
    # (The fault suite's model, a worker of machine 1 stopped, both machines naming it, is
    # scenarios.py's hang-5s.)
    # Fast steps, a worker of machine 1 stopped while machine 1's launcher is starved of CPU.
    "hang-stop-starved-m1": stopped_worker(1, 2, starve_launcher=True),
    # The same, the launcher starved past the other machine's report wait (issue 35).
    "hang-stop-starved-long-m1": stopped_worker(1, 2, starve_launcher=True, freeze=FREEZE_LONG),
    # The fault suite's model, a worker of machine 0 stopped.
    "hang-stop-model-m0": stopped_worker(0, 8),
}
