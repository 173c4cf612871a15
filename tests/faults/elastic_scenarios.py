"""Elastic membership for programs the launcher restarts (torchrun's --nnodes MIN:MAX): two
machines, machine 1 killed (launcher and workers, SIGKILL) or started late.

  elastic-python    a torch.distributed Gloo DDP script (tests/testing/torch_ddp.py) under
                    --nnodes 1:2: machine 0's workers restart at world 2 with generation 1's
                    torchrun environment and train on; the trial's seconds are the recovery,
                    from the kill to the first step of both restarted ranks
  elastic-scale-up  machine 0 alone (train.bin, --min_machines 1), machine 1 started once it
                    trains: both train at world 4 in generation 1, max_restarts 0 (joins are free)
  elastic-below-min rdzv_backend c10d, 2 machines (MIN = MAX = 2), machine 1 killed: machine 0
                    waits rdzv_timeout (5 s) for a replacement, then ends with exit 3 naming the loss
  elastic-budget    max_restarts 3, machine 1 killed and started again four times: the job ends
                    on the fourth kill, naming the spent budget
  elastic-link-down machine 1's link down (train.bin, --min_machines 1): machine 0 goes on at world
                    2 once the heartbeats lose machine 1; machine 1 ends with exit 3
  elastic-hang-evict a worker of machine 1 SIGSTOPped (train.bin with steps of milliseconds,
                    --nnodes 1:2, --hang_timeout 5; ranks 2 and 3 in turn): the job's hang verdict
                    names it, machine 1 is evicted (its launcher says so, names the stopped rank as
                    the root cause, leaves no process and exits 1) and machine 0 goes on at world
                    2; the trial's seconds run from the stop to machine 0's first step at world 2
  elastic-hang-evict-model  the same with the fault suite's model (--batch-size 8)
"""
import itertools
import os
import re
import signal
import time

from cluster import kill_pids, program_env
from python_scenarios import have_torch
from scenarios import Outcome, Skipped, has
from job import FOREVER, TRAIN_ARGS

HANG_TIMEOUT = 5
LOST_M1 = r"machine 1 \(host \S+\) left: lost: its connection to the rendezvous server closed"


def launch(job, machine: int, options: list, program: list, rdzv_timeout: int = 30, env=None):
    """Starts machine `machine` of `job` (the other is left alone)."""
    argv = job.launcher_argv(machine, options, program)
    argv[argv.index("--rdzv_timeout") + 1] = str(rdzv_timeout)
    job.procs[machine] = job.cluster.launch(machine, argv, job.logs[machine],
                                            dict(job.env, **(env or {})))


def kill_machine(job, machine: int) -> float:
    """SIGKILLs every process of machine `machine` (its launcher and workers); returns when."""
    at = time.monotonic()
    kill_pids(job.cluster.pids(machine))
    return at


def wait_for(predicate, timeout: float, poll: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return predicate()


def worker_envs(cluster, machine: int, program: str) -> list:
    """Returns the environments (dicts) of machine `machine`'s processes running `program`."""
    envs = (program_env(pid, program) for pid in cluster.pids(machine))
    return [env for env in envs if env is not None]


def start_both(job, options: list, program: list, timeout: float = 90, **launch_args):
    """Starts both machines (a launch argument given as a function gets the machine) and waits
    until they train; returns None, or the failed trial's Outcome (the job ended) when training
    never started."""
    for m in (0, 1):
        launch(job, m, options, program, **{k: v(m) if callable(v) else v
                                          for k, v in launch_args.items()})
    if job.wait_training(timeout=timeout):
        return None
    job.finish(5)
    return Outcome(0, False, False, False, "training never started: " + job.log(0)[-300:])


def stop(job, machine: int = 0) -> bool:
    """Ends the job with ^C on machine `machine`'s launcher; returns whether every process left."""
    try:
        os.kill(job.procs[machine].pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    return job.finish(30)


def elastic_python(ctx):
    if not have_torch():
        return Skipped("/usr/bin/python3 with torch is missing")
    job = ctx.job("elastic-python")
    program = ["/usr/bin/python3", ctx.tools.python_ddp, "--steps", "0"]
    options = ["--rdzv_token_file", job.token_file("token", "s3cret"), "--nnodes", "1:2",
               "--max_restarts", "3"]
    failed = start_both(job, options, program, timeout=180,
                        env=lambda m: {"GLOO_SOCKET_IFNAME": ctx.cluster.veth[m]})
    if failed:
        return failed
    script = os.path.basename(ctx.tools.python_ddp)
    before = worker_envs(ctx.cluster, 0, script)
    killed = kill_machine(job, 1)
    stepped = wait_for(lambda: all(job.progress_step(0, r, attempt=1) >= 1 for r in (0, 1)), 90)
    recovery = time.monotonic() - killed
    envs = worker_envs(ctx.cluster, 0, script)
    went_on = stepped and wait_for(
        lambda: all(job.progress_step(0, r, attempt=1) >= 20 for r in (0, 1)), 60)
    want = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
            "GROUP_WORLD_SIZE": "1", "ROLE_WORLD_SIZE": "2", "TORCHELASTIC_RESTART_COUNT": "1",
            "TORCHELASTIC_MAX_RESTARTS": "3", "TORCHELASTIC_RUN_ID": job.run_id,
            "MASTER_ADDR": ctx.cluster.addr[0]}
    env_ok = (len(envs) == 2 and sorted(e.get("RANK") for e in envs) == ["0", "1"] and
              all(e.get(k) == v for e in envs for k, v in want.items()) and
              len(before) == 2 and before[0].get("WORLD_SIZE") == "4" and
              envs[0].get("MASTER_PORT") != before[0].get("MASTER_PORT"))
    line = (rf"membership: generation 1: {LOST_M1}; world 4 -> 2 \(1 machine\); restarts 1 of 3; "
            r"recovered in [0-9.]+ s")
    said = has(job.log(0), line)
    ended = stop(job)
    ok = stepped and went_on and env_ok and said
    note = "" if ok else (f"stepped {stepped} went_on {went_on} env_ok {env_ok} said {said}; "
                          f"envs {[{k: e.get(k) for k in list(want) + ['RANK', 'MASTER_PORT']} for e in envs]}; "
                          f"m0 tail {job.log(0)[-600:]!r}")
    return Outcome(recovery, ended, said, ok, note)


def elastic_scale_up(ctx):
    job = ctx.job("elastic-scale-up")
    options = ["--rdzv_token_file", job.token_file("token", "s3cret"), "--min_machines", "1"]
    program = [ctx.tools.train] + TRAIN_ARGS + ["--steps", str(FOREVER)]
    launch(job, 0, options, program)
    alone = wait_for(lambda: all(job.progress_step(0, r) >= 2 for r in (0, 1)), 60, 0.05)
    if not alone:
        job.finish(5)
        return Outcome(0, False, False, False, "machine 0 never trained alone: " +
                       job.log(0)[-400:])
    started = time.monotonic()
    launch(job, 1, options, program)
    both = wait_for(lambda: all(job.progress_step(r // 2, r, attempt=1) >= 2 for r in range(4)),
                    60, 0.05)
    seconds = time.monotonic() - started
    line = (r"membership: generation 1: machine 1 \(host \S+\) joined; world 2 -> 4 "
            r"\(2 machines\); restarts 0 of 0")
    said = has(job.log(0), line) and has(job.log(1), "membership: generation 1: machine 1")
    ended = stop(job)
    note = "" if both and said else f"both {both} said {said}; m0 tail {job.log(0)[-600:]!r}"
    return Outcome(seconds, ended, said, both, note)


def elastic_below_min(ctx):
    job = ctx.job("elastic-below-min")
    options = ["--rdzv_token_file", job.token_file("token", "s3cret"), "--rdzv_backend", "c10d",
               "--max_restarts", "3"]
    program = [ctx.tools.train] + TRAIN_ARGS + ["--steps", str(FOREVER)]
    failed = start_both(job, options, program, rdzv_timeout=5)
    if failed:
        return failed
    killed = kill_machine(job, 1)
    ended = job.finish(5 + 10)
    seconds = time.monotonic() - killed
    text = job.log(0)
    want = (r"generation 1 has 1 machine \(machine_rank 0\), fewer than min_machines 2, and no "
            r"replacement joined within rdzv_timeout 5s; root cause: machine 1 lost: its "
            r"connection to the rendezvous server closed")
    root_ok = has(text, want)
    waited = seconds >= 5
    ok = waited and job.codes[0] == 3
    note = "" if ok and root_ok else (f"waited {seconds:.1f} s, exit {job.codes[0]}; "
                                      f"m0 tail {text[-600:]!r}")
    return Outcome(seconds, ended, root_ok, ok, note)


def elastic_budget(ctx):
    job = ctx.job("elastic-budget")
    options = ["--rdzv_token_file", job.token_file("token", "s3cret"), "--min_machines", "1",
               "--max_restarts", "3"]
    program = [ctx.tools.train] + TRAIN_ARGS + ["--steps", str(FOREVER)]
    failed = start_both(job, options, program)
    if failed:
        return failed
    joined = r"membership: generation \d+: machine 1 \(host \S+\) joined"
    for cycle in range(1, 5):
        killed = kill_machine(job, 1)
        if cycle == 4:
            break
        # The survivors form generation 2*cycle - 1 without machine 1; then it starts again.
        if not wait_for(lambda: has(job.log(0), rf"membership: generation {2 * cycle - 1}: "), 30,
                        0.05):
            job.finish(5)
            return Outcome(0, False, False, False, f"cycle {cycle}: no new generation: "
                           f"{job.log(0)[-400:]!r}")
        launch(job, 1, options, program)
        if not wait_for(lambda: len(re.findall(joined, job.log(0))) >= cycle, 30, 0.05):
            job.finish(5)
            return Outcome(0, False, False, False, f"cycle {cycle}: machine 1 did not rejoin: "
                           f"{job.log(0)[-400:]!r}")
        time.sleep(0.5)  # its workers start
    ended = job.finish(15)
    seconds = time.monotonic() - killed
    text = job.log(0)
    root_ok = has(text, r"restart budget spent: max_restarts 3, 3 restarts used")
    ok = job.codes[0] == 1 and text.count("restarts 3 of 3") >= 1
    note = "" if ok and root_ok else f"exit {job.codes}; m0 tail {text[-800:]!r}"
    return Outcome(seconds, ended, root_ok, ok, note)


def elastic_link_down(ctx):
    job = ctx.job("elastic-link-down")
    options = ["--rdzv_token_file", job.token_file("token", "s3cret"), "--min_machines", "1",
               "--max_restarts", "3"]
    program = [ctx.tools.train] + TRAIN_ARGS + ["--steps", str(FOREVER)]
    try:
        failed = start_both(job, options, program)
        if failed:
            return failed
        cut = time.monotonic()
        job.cluster.link(1, up=False)
        stepped = wait_for(lambda: all(job.progress_step(0, r, attempt=1) >= 1 for r in (0, 1)),
                           30)
        seconds = time.monotonic() - cut
        line = (r"membership: generation 1: machine 1 \(host \S+\) left: lost: no heartbeat for "
                r"[0-9.]+ s.*; world 4 -> 2 \(1 machine\); restarts 1 of 3")
        said = has(job.log(0), line)
        # Machine 1, cut off, ends on its own: the rendezvous host is unreachable (exit 3).
        m1_ended = wait_for(lambda: job.procs[1].poll() is not None, 20, 0.1)
    finally:
        job.cluster.link(1, up=True)
    ended = stop(job)
    ok = stepped and m1_ended and job.codes[1] == 3
    note = "" if ok and said else (f"stepped {stepped} m1 ended {m1_ended} codes {job.codes}; "
                                   f"m0 tail {job.log(0)[-600:]!r}")
    return Outcome(seconds, ended, said, ok, note)


def hang_evict(batch_size: int):
    turn = itertools.count()

    def scenario(ctx):
        rank = 2 + next(turn) % 2
        job = ctx.job(f"elastic-hang-evict-b{batch_size}")
        options = ["--rdzv_token_file", job.token_file("token", "s3cret"), "--nnodes", "1:2",
                   "--max_restarts", "3", "--hang_timeout", str(HANG_TIMEOUT)]
        args = list(TRAIN_ARGS)
        args[args.index("--batch-size") + 1] = str(batch_size)
        failed = start_both(job, options, [ctx.tools.train] + args + ["--steps", str(FOREVER)])
        if failed:
            return failed
        worker = ctx.cluster.workers(os.path.basename(ctx.tools.train))[rank]
        stopped = time.monotonic()
        os.kill(worker, signal.SIGSTOP)
        bound = HANG_TIMEOUT + 10
        stepped = wait_for(
            lambda: all(job.progress_step(0, r, attempt=1) >= 1 for r in (0, 1)), bound, 0.02)
        seconds = time.monotonic() - stopped
        m1_ended = wait_for(lambda: job.procs[1].poll() is not None and not ctx.cluster.pids(1),
                            10, 0.05)
        went_on = stepped and wait_for(
            lambda: all(job.progress_step(0, r, attempt=1) >= 20 for r in (0, 1)), 30, 0.05)
        m1, m0 = job.log(1), job.log(0)
        evicted = has(m1, rf"membership: machine 1 \(host \S+\) evicted: the job's hang verdict "
                          rf"names its rank {rank}; the other machines go on without it")
        root_ok = (has(job.root_cause(1), rf"root cause\s+1\s+\S+\s+{rank}\s") and
                   f"hang: rank {rank} (machine 1) is stopped" in job.root_cause(1) and
                   has(m0, rf"membership: generation 1: machine 1 \(host \S+\) left: evicted: "
                           rf"the job's hang verdict names its rank {rank}; world 4 -> 2 "
                           r"\(1 machine\); restarts 1 of 3"))
        ended = stop(job)
        ok = stepped and went_on and m1_ended and evicted and job.codes[1] == 1
        note = f"stopped rank {rank}" + ("" if ok and root_ok else (
            f"; stepped {stepped} went_on {went_on} m1 ended {m1_ended} evicted {evicted} "
            f"codes {job.codes}; m1 tail {m1[-700:]!r}; m0 tail {m0[-500:]!r}"))
        return Outcome(seconds, ended, root_ok, ok, note)

    return scenario


ELASTIC_SCENARIOS = {
    "elastic-link-down": elastic_link_down,
    "elastic-python": elastic_python,
    "elastic-scale-up": elastic_scale_up,
    "elastic-below-min": elastic_below_min,
    "elastic-budget": elastic_budget,
    "elastic-hang-evict": hang_evict(2),  # steps of milliseconds (issue 25's measurement)
    "elastic-hang-evict-model": hang_evict(8),  # the fault suite's model
}
