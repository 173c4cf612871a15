"""The checkpoint scenario: every process killed while a checkpoint is being saved; --resume goes
on from the last whole checkpoint (worker/src/checkpoint_dir.h)."""
import os
import re
import signal
import time

from scenarios import FINITE_STEPS, Outcome, finite_program


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
