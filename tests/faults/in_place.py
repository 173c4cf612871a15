#!/usr/bin/python3
"""Issue 25's "scale down, in place" under accel-launch: 3 machines (network namespaces on one
bridge) x 2 train.bin workers, --min_machines 2 --elastic_in_place; once every rank trained
--warm_steps steps, every worker of machine 2 is SIGKILLed (its launcher lives: it must leave;
--kill_launcher kills it too, --link_down cuts its link instead: a lost machine).

A trial passes when
  - machines 0-1 go on with the SAME worker pids at world 4 (train.bin's "[accel] generation 1:
    world 6 -> 4, continuing after step K" line) and end with exit 0; machine 2's launcher says it
    left (evicted: its rank failed) and exits 1; no process is left;
  - every survivor's first step at world 4 is step K + 1 and completes within issue 25's goal
    plus a margin of the kill (in_place_check.py: 2 + 1 s; after --link_down 3 + 2 + 1 s);
  - the final parameters equal those of a reference: a fixed 3-machine job to step K that saves a
    checkpoint, resumed by a fixed 2-machine job (world 4) to the same last step: every parameter
    of the final checkpoints within relative 1e-6 (max|a - b| / max|b| per tensor, read from the
    torch::save archives), the AdamW state the same bits (its records' order aside), and
    train.bin's param_checksum within 1e-6;
  - every rank recorded every step its world trained (train.bin --sample-record, written before
    the step's all-reduce: machine 2's killed ranks steps 1..K too), the record holds, step by
    step, the same samples as the reference's, and every epoch completed trains each sample
    exactly once (no sample twice or skipped; --samples 960 divides by 48 and 32, so no padding).
--scale_up runs issue 25's "scale up, in place" instead (in_place_scale_up.py).
Prints one line per trial; exit 1 when a trial failed, 77 (skipped) without root or ip netns.

Usage: sudo python3 tests/faults/in_place.py --launcher build/launcher/accel-launch \\
           --train build/examples/train.bin [--trials N] [--keep DIR] [--scale_up]
"""
import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))

from cluster import kill_pids, program_env  # noqa: E402
from in_place_check import (KILL_GOAL, LINK_DOWN_GOAL, MARGIN, check_samples,  # noqa: E402
                            checksum, checksum_rel, first_steps, fmt, same_tensors,
                            tensor_rel_diff)
from many_machines import run_trials  # noqa: E402

STEPS = 1500
SAMPLES = 960  # divides by 6 x 8 and 4 x 8: no padding, epochs of 20 (world 6) and 30 steps
ARGS = ["--input-dim", "32", "--hidden", "64", "--layers", "3", "--classes", "4", "--samples",
        str(SAMPLES), "--batch-size", "8", "--lr", "0.01", "--optimizer", "adamw"]
GENERATION = re.compile(r"\[accel\] generation 1: world 6 -> 4, continuing after step (\d+)")


class Run:
    """One job over `machines` of the bridge; logs and scratch under `work`. `start`: the
    machines started now (default all; start_machine starts another later); "{m}" in
    program_args becomes the machine's number; `train_args` replaces ARGS."""

    def __init__(self, args, bridge, work, name, machines, port, options, program_args,
                 start=None, train_args=None):
        self.logs = [os.path.join(work, f"{name}-m{m}.log") for m in range(machines)]
        token = os.path.join(work, f"{name}.token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, os.urandom(32).hex().encode() + b"\n")
        os.close(fd)
        self.env = dict(os.environ, TMPDIR=work)
        self.env.pop("XDG_RUNTIME_DIR", None)
        self.argv = lambda m: ["ip", "netns", "exec", bridge.ns[m], args.launcher, "--use_cpu",
                               "--num_machines", str(machines), "--num_processes",
                               str(2 * machines), "--machine_rank", str(m), "--main_process_ip",
                               bridge.addr[0], "--main_process_port", str(port),
                               "--rdzv_timeout", "60", "--run_id", f"{name}-{port}",
                               "--rdzv_token_file", token] + options + [args.train] + (
                                   train_args or ARGS) + [a.replace("{m}", str(m))
                                                          for a in program_args]
        self.procs = [None] * machines
        for m in range(machines) if start is None else start:
            self.start_machine(m)

    def start_machine(self, m):
        with open(self.logs[m], "w") as log:
            self.procs[m] = subprocess.Popen(self.argv(m), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=self.env,
                                             start_new_session=True)

    def wait(self, timeout):
        """Returns the exit codes (None for a launcher still running at the deadline)."""
        deadline = time.monotonic() + timeout
        codes = []
        for p in self.procs:
            if p is None:
                codes.append(None)
                continue
            try:
                codes.append(p.wait(timeout=max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                codes.append(None)
        return codes

    def log(self, m):
        with open(self.logs[m], errors="replace") as f:
            return f.read()


def workers(bridge, machine):
    """{rank: pid} of machine `machine`'s train.bin processes (their RANK variable)."""
    out = {}
    for pid in [int(p) for p in subprocess.run(["ip", "netns", "pids", bridge.ns[machine]],
                                               capture_output=True, text=True).stdout.split()]:
        env = program_env(pid, "train.bin")
        if env is not None and "RANK" in env:
            out[int(env["RANK"])] = pid
    return out


def progress(work, run_id, machine, rank, attempt=0):
    found = glob.glob(os.path.join(glob.escape(work), f"accel-{run_id}-m{machine}-*"))
    path = os.path.join(found[0], f"attempt_{attempt}", f"rank_{rank}", "progress") if found else ""
    try:
        with open(path, "rb") as f:
            data = f.read(8)
        return int.from_bytes(data, "little") if len(data) == 8 else -1
    except OSError:
        return -1


def link(bridge, machine, up):
    subprocess.run(["ip", "-n", bridge.ns[machine], "link", "set", "eth0", "up" if up else "down"],
                   check=True, capture_output=True, timeout=30)


def trial(args, bridge, number, work_root):
    work = os.path.join(work_root, f"trial-{number}")
    os.makedirs(work)
    port = 29700 + (number * 3) % 90
    ckpt, rec = os.path.join(work, "ckpt"), os.path.join(work, "rec")
    times = os.path.join(work, "times")
    job = Run(args, bridge, work, "inplace", 3, port,
              ["--min_machines", "2", "--max_restarts", "3", "--elastic_in_place"],
              ["--steps", str(STEPS), "--checkpoint-dir", ckpt, "--sample-record", rec,
               "--step-times", times])
    run_id = f"inplace-{port}"
    deadline = time.monotonic() + args.start_timeout
    while time.monotonic() < deadline and not all(
            progress(work, run_id, r // 2, r) >= args.warm_steps for r in range(6)):
        if any(p.poll() is not None for p in job.procs):
            break
        time.sleep(0.005)
    before = {**workers(bridge, 0), **workers(bridge, 1)}
    victims = list(workers(bridge, 2).values())
    if len(before) != 4 or len(victims) != 2:
        bridge.kill_all()
        job.wait(10)
        return False, 0, f"not training: workers {before} {victims}: {job.log(0)[-400:]!r}"
    if args.kill_launcher:  # the launcher too: machine 2 is lost instead of leaving
        victims = [int(p) for p in subprocess.run(["ip", "netns", "pids", bridge.ns[2]],
                                                  capture_output=True, text=True).stdout.split()]
    killed, killed_at = time.monotonic(), time.time()  # time.time(): --step-times' clock
    if args.link_down:  # machine 2's cable pulled: lost by the heartbeats, its workers alive
        link(bridge, 2, up=False)
    else:
        kill_pids(victims)
    seen = None
    while time.monotonic() < killed + 60 and seen is None:
        seen = GENERATION.search(job.log(0))
        time.sleep(0.01)
    seconds = time.monotonic() - killed
    after = {**workers(bridge, 0), **workers(bridge, 1)}
    codes = job.wait(120)
    if args.link_down:
        link(bridge, 2, up=True)  # the reference runs on it
    notes = []
    if seen is None:
        notes.append("no generation line on machine 0")
    k = int(seen.group(1)) if seen else 0
    if after != before:
        notes.append(f"worker pids changed: {before} -> {after}")
    # Recovery: the kill to every survivor's first step at world 4, which must be step K + 1.
    firsts = first_steps(times, range(4), 4)
    recovery = max(t for _, t in firsts.values()) - killed_at if len(firsts) == 4 else None
    bound = (LINK_DOWN_GOAL if args.link_down else KILL_GOAL) + MARGIN
    if recovery is None or recovery > bound:
        notes.append(f"recovery (kill -> every survivor's first step at world 4) "
                     f"{recovery if recovery is None else round(recovery, 2)} s, bound {bound} s")
    if seen and any(s != k + 1 for s, _ in firsts.values()):
        notes.append(f"first steps at world 4 {firsts} are not K + 1 = {k + 1}")
    want_codes = [0, 0, -signal.SIGKILL if args.kill_launcher else 3 if args.link_down else 1]
    if codes != want_codes:
        notes.append(f"exit codes {codes} (want {want_codes})")
    lost = args.kill_launcher or args.link_down
    if not lost and not re.search(
            r"membership: machine 2 \(host \S+\) evicted: its rank [45] failed", job.log(2)):
        notes.append("machine 2 did not say it left")
    why = r"lost: [^;]+" if lost else r"evicted: its rank [45] failed"
    if not re.search(rf"membership: generation 1: machine 2 \(host \S+\) left: {why}; world 6 "
                     r"-> 4 \(2 machines\)", job.log(0)):
        notes.append("machine 0 has no membership line")

    # The reference: a fixed world-6 job saves at step K, a fixed world-4 job resumes it.
    ref_ckpt, ref_rec = os.path.join(work, "ref_ckpt"), os.path.join(work, "ref_rec")
    ref6 = Run(args, bridge, work, "ref6", 3, port + 1, [],
               ["--steps", str(k), "--checkpoint-dir", ref_ckpt, "--sample-record", ref_rec + "6"])
    codes6 = ref6.wait(120)
    ref4 = Run(args, bridge, work, "ref4", 2, port + 2, [],
               ["--steps", str(STEPS), "--checkpoint-dir", ref_ckpt, "--resume",
                "--sample-record", ref_rec + "4"])
    codes4 = ref4.wait(120)
    if codes6 != [0, 0, 0] or codes4 != [0, 0]:
        notes.append(f"reference exit codes {codes6} {codes4}")
    diffs = [tensor_rel_diff(os.path.join(ckpt, "model_0.pt"),
                             os.path.join(ref_ckpt, "model_0.pt")),
             same_tensors(os.path.join(ckpt, "optimizer_0.pt"),
                          os.path.join(ref_ckpt, "optimizer_0.pt"))]
    if diffs[0] is None or not diffs[0] < 1e-6 or not diffs[1]:
        notes.append(f"model tensors rel {diffs[0]} / optimizer state bitwise {diffs[1]}")
    mine, ref = checksum(job.log(0)), checksum(ref4.log(0))
    rel = checksum_rel(mine, ref)
    if not rel < 1e-6:
        notes.append(f"param_checksum {mine} vs reference {ref} (rel {rel})")

    # Samples: step by step as the reference (every rank of the world of 6 recorded steps 1..K,
    # machine 2's killed ones included: a step's line is written before its all-reduce; the
    # survivors K + 1 on), and each completed epoch exactly once.
    complete, twice_or_skipped = check_samples(
        rec, k, (ref_rec + "6", range(6)), (ref_rec + "4", range(4)), notes, STEPS, SAMPLES)
    ok = not notes
    summary = (f"K {k}, recovery {fmt(recovery)} s (kill -> every survivor's first step at "
               f"world 4; bound {bound} s), generation line after {seconds:.2f} s, "
               f"parameters rel diff {diffs[0]}, optimizer state bitwise equal {diffs[1]}, "
               f"param_checksum rel {rel}, "
               f"{len(complete)} complete epochs each sample once: {not twice_or_skipped}")
    tail, tail2 = job.log(0)[-500:], job.log(2)[-300:]
    if not ok and args.keep:
        shutil.copytree(work, os.path.join(args.keep, f"trial-{number}"), dirs_exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    if not ok:
        summary += "; " + "; ".join(notes) + f"; m0 tail {tail!r}; m2 tail {tail2!r}"
    return ok, recovery or 0.0, summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--warm_steps", type=int, default=8)
    p.add_argument("--kill_launcher", action="store_true",
                   help="kill machine 2's launcher with its workers (a lost machine)")
    p.add_argument("--link_down", action="store_true",
                   help="take machine 2's link down instead (lost by the heartbeats; exit 3)")
    p.add_argument("--scale_up", action="store_true",
                   help="start machines 0-1, then machine 2 during training: it joins in place "
                   "(in_place_scale_up.py)")
    p.add_argument("--start_timeout", type=float, default=120)
    p.add_argument("--keep", default="", help="copy the logs of failed trials here")
    args = p.parse_args()
    run = trial
    if args.scale_up:
        from in_place_scale_up import scale_up_trial
        run = scale_up_trial

    def one(number, bridge, work_root):
        ok, seconds, note = run(args, bridge, number, work_root)
        return ok, f"{seconds:.2f} s (load {os.getloadavg()[0]:.1f}) {note}", None

    trials = run_trials(3, args.trials, "accel_in_place_", one)
    if isinstance(trials, int):
        return trials
    results = [ok for ok, _ in trials]
    print(f"in place: {sum(results)}/{len(results)} trials passed")
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
