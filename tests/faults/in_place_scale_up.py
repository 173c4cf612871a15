"""Issue 25's "scale up, in place" under accel-launch (`in_place.py --scale_up`): machines 0-1 of
3 (network namespaces on one bridge) x 2 train.bin workers start with --min_machines 2
--elastic_in_place; once every rank trained --warm_steps steps, machine 2's launcher starts.

A trial passes when
  - machine 2 joins at a step boundary: train.bin's "[accel] generation 1: world 4 -> 6,
    continuing after step K" on machine 0 and "[accel] rank 4 joined generation 1 (world 6) after
    step K" on machine 2; machines 0-1 go on with the SAME worker pids; every launcher exits 0
    and machine 0 prints the membership line (machine 2 joined, world 4 -> 6);
  - every rank's first step at world 6 is step K + 1, and the survivors stall at the join (each
    one's last step at world 4 to its first at world 6, train.bin --step-times), less the
    joiner's process start-up (its exec to its main()), no longer than issue 25's recovery goal
    plus a margin (in_place_check.py: 2 + 1 s);
  - the joiner's parameters equal the others' bit for bit: every machine saves its own final
    checkpoint, and the three hold the same model and optimizer records (parameters that
    differed after the join would stay apart: every rank applies the same averaged gradients);
  - the final parameters equal a reference's: a fixed 2-machine job (world 4) to step K that
    saves a checkpoint, resumed by a fixed 3-machine job (world 6) to the same last step: every
    tensor within relative 1e-6, the AdamW state the same bits, param_checksum within 1e-6;
  - every rank recorded every step its world trained, the record holds, step by step, the
    reference's samples, and every completed epoch trains each sample exactly once (--samples
    720 --batch-size 6: the rest of the epoch at the join, 720 - 24 K, divides by 6 ranks, so
    no padding).
"""
import os
import re
import shutil
import time

from in_place import Run, progress, workers
from in_place_check import (KILL_GOAL, MARGIN, check_samples, checksum, checksum_rel,
                            exec_time, first_steps, fmt, same_tensors, started_at, step_times,
                            tensor_rel_diff)

STEPS = 600
SAMPLES = 720  # world 4: 30 steps of 24 per epoch; world 6: 20 steps of 36
ARGS = ["--input-dim", "32", "--hidden", "64", "--layers", "3", "--classes", "4", "--samples",
        str(SAMPLES), "--batch-size", "6", "--lr", "0.01", "--optimizer", "adamw"]
GENERATION = re.compile(r"\[accel\] generation 1: world 4 -> 6, continuing after step (\d+)"
                        r"[^\n]* in ([0-9.e-]+) s")
JOINED = re.compile(r"\[accel\] rank 4 joined generation 1 \(world 6\) after step (\d+): "
                    r"training state \((\d+) bytes\) from rank \d+ in ([0-9.e-]+) s")


def wait_for(condition, timeout):
    """Polls `condition` every 5 ms; returns the seconds it took, None at the deadline."""
    start = time.monotonic()
    while time.monotonic() < start + timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(0.005)
    return None


def scale_up_trial(args, bridge, number, work_root):
    work = os.path.join(work_root, f"trial-{number}")
    os.makedirs(work)
    port = 29700 + (number * 3) % 90
    ckpt, rec = os.path.join(work, "ckpt"), os.path.join(work, "rec")
    times = os.path.join(work, "times")
    job = Run(args, bridge, work, "grow", 3, port,
              ["--min_machines", "2", "--max_restarts", "3", "--elastic_in_place"],
              ["--steps", str(STEPS), "--checkpoint-dir", ckpt + "-m{m}", "--sample-record", rec,
               "--step-times", times],
              start=[0, 1], train_args=ARGS)
    run_id = f"grow-{port}"
    wait_for(lambda: all(progress(work, run_id, r // 2, r) >= args.warm_steps
                         for r in range(4)) or any(job.procs[m].poll() is not None
                                                   for m in (0, 1)), args.start_timeout)
    before = {**workers(bridge, 0), **workers(bridge, 1)}
    if len(before) != 4:
        bridge.kill_all()
        job.wait(10)
        return False, 0, f"not training: workers {before}: {job.log(0)[-400:]!r}"
    job.start_machine(2)
    # From machine 2's start: the generation line, the joiner's first step; and the survivors'
    # pause: the longest time rank 0's progress counter stood still until its first step after
    # the join (recover() writes the agreed step K in between).
    start = time.monotonic()
    seen, k, to_line, to_step, pause = None, 0, None, None, None
    last_value, last_change, longest = progress(work, run_id, 0, 0), start, 0.0
    while time.monotonic() < start + 60 and (to_step is None or pause is None):
        now = time.monotonic()
        value = progress(work, run_id, 0, 0)
        if seen is None:
            seen = GENERATION.search(job.log(0))
            if seen:
                k, to_line = int(seen.group(1)), now - start
        if value != last_value:
            longest = max(longest, now - last_change)
            if seen and value > k and pause is None:
                pause = longest
            last_value, last_change = value, now
        if seen and to_step is None and progress(work, run_id, 2, 4, attempt=1) > k:
            to_step = now - start
        time.sleep(0.005)
    after = {**workers(bridge, 0), **workers(bridge, 1)}
    exec_at = {r: exec_time(pid) for r, pid in workers(bridge, 2).items()}
    codes = job.wait(180)
    notes = []
    if seen is None:
        notes.append("no generation line on machine 0")
    if to_step is None:
        notes.append("the joiner never completed a step")
    joined = JOINED.search(job.log(2))
    if joined is None or int(joined.group(1)) != k:
        notes.append(f"machine 2 has no join line after step {k}")
    if after != before:
        notes.append(f"worker pids changed: {before} -> {after}")
    # The survivors' stall, train.bin's own clock: each survivor's last step at world 4 to its
    # first at world 6, which must be step K + 1 on every rank (the joiner's too). Less the
    # joiner's process start-up (its exec to its main(): LibTorch loading, seconds under load),
    # it is held to the recovery goal plus the margin.
    firsts = first_steps(times, range(6), 6)
    stalls = [firsts[r][1] - max(t for _, w, t in step_times(times, r) if w == 4)
              for r in range(4) if r in firsts and any(w == 4 for _, w, _ in step_times(times, r))]
    stall = max(stalls) if len(stalls) == 4 else None
    startups = [started_at(times, r) - exec_at[r] for r in (4, 5)
                if exec_at.get(r) is not None and started_at(times, r) is not None]
    startup = max(startups) if len(startups) == 2 else None
    beyond = stall - startup if stall is not None and startup is not None else None
    if beyond is None or beyond > KILL_GOAL + MARGIN:
        notes.append(f"the survivors stalled {fmt(stall)} s at the join, {fmt(beyond)} s beyond "
                     f"the joiner's start-up {fmt(startup)} s (bound {KILL_GOAL + MARGIN} s)")
    if seen and (len(firsts) != 6 or any(s != k + 1 for s, _ in firsts.values())):
        notes.append(f"first steps at world 6 {firsts} are not K + 1 = {k + 1} on every rank")
    if codes != [0, 0, 0]:
        notes.append(f"exit codes {codes} (want [0, 0, 0])")
    if not re.search(r"membership: generation 1: machine 2 \(host \S+\) joined; world 4 -> 6 "
                     r"\(3 machines\)", job.log(0)):
        notes.append("machine 0 has no membership line")
    # The joiner holds the others' parameters and optimizer state, bit for bit.
    per_machine = [os.path.join(f"{ckpt}-m{m}", name) for m in range(3)
                   for name in ("model_0.pt", "optimizer_0.pt")]
    equal = all(same_tensors(per_machine[i], per_machine[i % 2]) for i in range(2, 6))
    if not equal:
        notes.append("the machines' final checkpoints differ")

    # The reference: a fixed world-4 job saves at step K, a fixed world-6 job resumes it.
    ref_ckpt, ref_rec = os.path.join(work, "ref_ckpt"), os.path.join(work, "ref_rec")
    ref4 = Run(args, bridge, work, "ref4", 2, port + 1, [],
               ["--steps", str(k), "--checkpoint-dir", ref_ckpt, "--sample-record", ref_rec + "4"],
               train_args=ARGS)
    codes4 = ref4.wait(120)
    ref6 = Run(args, bridge, work, "ref6", 3, port + 2, [],
               ["--steps", str(STEPS), "--checkpoint-dir", ref_ckpt, "--resume",
                "--sample-record", ref_rec + "6"], train_args=ARGS)
    codes6 = ref6.wait(120)
    if codes4 != [0, 0] or codes6 != [0, 0, 0]:
        notes.append(f"reference exit codes {codes4} {codes6}")
    diffs = [tensor_rel_diff(os.path.join(f"{ckpt}-m0", "model_0.pt"),
                             os.path.join(ref_ckpt, "model_0.pt")),
             same_tensors(os.path.join(f"{ckpt}-m0", "optimizer_0.pt"),
                          os.path.join(ref_ckpt, "optimizer_0.pt"))]
    if diffs[0] is None or not diffs[0] < 1e-6 or not diffs[1]:
        notes.append(f"model tensors rel {diffs[0]} / optimizer state bitwise {diffs[1]}")
    mine, ref = checksum(job.log(0)), checksum(ref6.log(0))
    rel = checksum_rel(mine, ref)
    if not rel < 1e-6:
        notes.append(f"param_checksum {mine} vs reference {ref} (rel {rel})")

    # Samples: world 4 up to K (every rank recorded each step before its all-reduce), world 6
    # after, step by step as the reference.
    complete, twice_or_skipped = check_samples(
        rec, k, (ref_rec + "4", range(4)), (ref_rec + "6", range(6)), notes, STEPS, SAMPLES)
    ok = not notes
    summary = (f"K {k}, machine 2 started -> generation line {fmt(to_line)} s, -> joiner's first "
               f"step {fmt(to_step)} s; survivors' stall {fmt(stall)} s: the joiner's start-up "
               f"{fmt(startup)} s + {fmt(beyond)} s (bound {KILL_GOAL + MARGIN} s; rank 0's "
               f"progress paused {fmt(pause)} s, its recover() "
               f"{seen.group(2) if seen else '-'} s, the joiner's constructor: "
               f"{joined.group(2) + ' bytes in ' + joined.group(3) if joined else '-'} s); "
               f"machines' checkpoints bitwise equal {equal}, "
               f"parameters rel diff {diffs[0]}, optimizer state bitwise equal {diffs[1]}, "
               f"param_checksum rel {rel}, "
               f"{len(complete)} complete epochs each sample once: {not twice_or_skipped}")
    tail, tail2 = job.log(0)[-500:], job.log(2)[-500:]
    if not ok and args.keep:
        shutil.copytree(work, os.path.join(args.keep, f"trial-{number}"), dirs_exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    if not ok:
        summary += "; " + "; ".join(notes) + f"; m0 tail {tail!r}; m2 tail {tail2!r}"
    return ok, to_step or 0.0, summary
