"""Fault scenarios about the rendezvous token: a third party with no token or a guessed one tries
the running job (rdzv_intruder), a status without the token, and machines whose tokens differ."""
import subprocess
import time

from intruder_verdict import intruder_verdict, third_party_verdict
from scenarios import PACED_STEPS, Outcome, finite_program, has


def third_party(ctx):
    """A running, token-protected job; a stranger on machine 1's network who knows the endpoint
    and the run id but not the token tries to read and write the job's store, join it and abort
    it with a forged failure report, while the job trains. Passes when every try is refused and
    the job finishes with the checksum of an undisturbed run. "s": the intruder's run."""
    # Long enough for every try to meet the job while it trains: over TCP a refusal is a failed
    # TLS handshake, said after a few attempts (rendezvous/grpc/channel.h); the tries took from
    # 1.8 s to 14 s under load.
    clean = ctx.clean_checksum(PACED_STEPS)  # first: the run's logs are the trial's
    job = ctx.job("third-party")
    job.start(["--rdzv_token_file", job.token_file("token", "s3cret")],
              ctx.outlasting_program(job, 60))
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
    ctx.release(job)
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
    """Machine 1 has another token than machine 0: machine 1 refuses machine 0's server during
    the TLS handshake (its certificate is not from machine 1's token) and says the token is
    wrong; machine 0 sees only a handshake its peer abandoned (nothing of machine 1's join
    reaches it, not even its machine_rank) and at rdzv_timeout names machine 1 as missing. Both
    exit 3."""
    job = ctx.job("token-mismatch")
    good = job.token_file("token0", "the-right-secret")
    bad = job.token_file("token1", "a-wrong-secret")
    start = time.monotonic()
    job.start(["--rdzv_timeout", "5"], per_machine=(["--rdzv_token_file", good],
                                                     ["--rdzv_token_file", bad]))
    ended = job.finish(10)
    seconds = time.monotonic() - start
    root_ok = "token is wrong" in job.log(1) and has(job.log(0), r"missing machine_rank 1")
    note = "" if root_ok else f"m0: {job.log(0)[-300:]!r} m1: {job.log(1)[-300:]!r}"
    return Outcome(seconds, ended, root_ok, job.codes == [3, 3], note)
