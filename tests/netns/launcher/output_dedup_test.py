#!/usr/bin/python3
"""Output de-duplication on a 64-rank CPU job: 8 namespace machines x 8 ranks on one bridge.

Every rank prints the same warning at every step (at the same wall-clock instants after a file
barrier, as ranks of a synchronised job do); after the last step rank 3 prints a traceback it caught. Checks that
  - each machine's console shows the warning once per step, with that machine's rank set
    ("[ranks 0-7] warning: ..." on machine 0: a machine's console carries its own ranks);
  - rank 3's traceback is printed whole, in order, under "[rank 3] ";
  - the per-rank log files (--log_dir with --tee) keep every line of every rank;
  - with --no-dedup_output machine 0 prints the warning once per rank and step again.
The window is 2 s, not the default 0.25 s: 64 Python ranks and 8 launchers on a shared 2-core
machine wake from the same sleep up to several hundred ms apart (measured at load 20: one step
of six split on 4 of 8 machines with 0.25 s); ranks of a real job sharing a collective are not.
Needs root and iproute2 (tests/testing/skip.py: skipped with the reason, a failure under CI).
Usage: output_dedup_test.py <accel-launch>
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "faults"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing"))
from skip import skip  # noqa: E402

MACHINES = 8
PER_MACHINE = 8
STEPS = 6
WORKER = r'''
import glob, os, sys, time, traceback
ready, world, period, steps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
# A barrier through the shared file system: every rank's file, then the same start for all.
open(f"{ready}/{os.environ['RANK']}", "w").close()
while len(os.listdir(ready)) < world:
    time.sleep(0.05)
start = max(os.stat(f).st_mtime for f in glob.glob(f"{ready}/*")) + 2
for step in range(steps):
    time.sleep(max(0.0, start + step * period - time.time()))
    print(f"warning: loss scale overflow, skipping step {step}", flush=True)
if os.environ["RANK"] == "3":
    try:
        raise ValueError("rank 3 alone")
    except ValueError:
        traceback.print_exc()
'''
TRACEBACK = [r"Traceback \(most recent call last\):", r'  File ".*worker\.py", line \d+, in <module>',
             r'    raise ValueError\("rank 3 alone"\)', r"ValueError: rank 3 alone"]


def launch(launcher, bridge, work, tag, extra, machines):
    """Runs one job on `machines` machines; returns [(stdout, stderr)] per machine."""
    ready = f"{work}/ready{tag}"
    os.mkdir(ready)
    procs = []
    port = 29700 + os.getpid() % 200
    for m in range(machines):
        argv = ["ip", "netns", "exec", bridge.ns[m], launcher, "--use_cpu",
                "--num_machines", str(machines), "--num_processes", str(machines * PER_MACHINE),
                "--machine_rank", str(m), "--main_process_ip", bridge.addr[0],
                "--main_process_port", str(port), "--rdzv_timeout", "120",
                "--rdzv_token_file", f"{work}/token", "--run_id", f"dedup-{tag}-{os.getpid()}",
                "--log_dir", f"{work}/logs{tag}{m}", "--tee", "--hang_timeout", "0",
                "--status_interval", "0", "--dedup_window", "2", *extra,
                f"{work}/worker.py", ready, str(machines * PER_MACHINE), "1", str(STEPS)]
        procs.append(subprocess.Popen(argv, stdout=open(f"{work}/{tag}{m}.out", "w"),
                                      stderr=open(f"{work}/{tag}{m}.err", "w")))
    for p in procs:
        p.wait(timeout=240)
    codes = [p.returncode for p in procs]
    if any(codes):
        raise AssertionError(f"exit codes {codes}: {open(f'{work}/{tag}0.err').read()[-2000:]}")
    return [(open(f"{work}/{tag}{m}.out").read(), open(f"{work}/{tag}{m}.err").read())
            for m in range(machines)]


def check_dedup(outputs, work):
    problems = []
    for m, (out, err) in enumerate(outputs):
        first, last = m * PER_MACHINE, m * PER_MACHINE + PER_MACHINE - 1
        want = [f"[ranks {first}-{last}] warning: loss scale overflow, skipping step {s}"
                for s in range(STEPS)]
        got = [line for line in out.splitlines() if "warning:" in line]
        if got != want:
            problems.append(f"machine {m} console: {got[:12]} want {want}")
    err0 = [line for line in outputs[0][1].splitlines() if line.startswith("[rank")]
    starts = [i for i, line in enumerate(err0) if "Traceback" in line]
    if len(starts) != 1:
        problems.append(f"machine 0 stderr: {len(starts)} tracebacks: {err0}")
    else:
        block = err0[starts[0]:starts[0] + len(TRACEBACK)]
        ok = len(block) == len(TRACEBACK) and all(
            re.fullmatch(r"\[rank 3\] " + want, line) for want, line in zip(TRACEBACK, block))
        if not ok:
            problems.append(f"rank 3's traceback not whole: {block}")
    for rank in (0, 5, 63):
        m = rank // PER_MACHINE
        log = open(f"{work}/logsd{m}/dedup-d-{os.getpid()}/attempt_0/rank_{rank}/stdout.log").read()
        if log.count("warning: loss scale overflow") != STEPS:
            problems.append(f"rank {rank}'s log file: {log!r}")
    return problems


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    launcher = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        return skip(f"needs root for ip netns (uid {os.geteuid()})")
    if subprocess.run(["which", "ip"], capture_output=True).returncode != 0:
        return skip("iproute2 missing")
    from many_machines import Bridge  # noqa: E402 (imports need nothing privileged)
    bridge = Bridge(MACHINES)
    with tempfile.TemporaryDirectory() as work:
        try:
            bridge.up()
        except subprocess.CalledProcessError as e:
            bridge.down()
            return skip(f"ip netns failed: {e.stderr.strip()}")
        try:
            with open(f"{work}/worker.py", "w") as f:
                f.write(WORKER)
            fd = os.open(f"{work}/token", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, os.urandom(32).hex().encode())
            os.close(fd)
            problems = check_dedup(launch(launcher, bridge, work, "d", [], MACHINES), work)
            off = launch(launcher, bridge, work, "n", ["--no-dedup_output"], 1)
            lines = [line for line in off[0][0].splitlines() if "warning:" in line]
            if len(lines) != STEPS * PER_MACHINE or any(line.startswith("[ranks") for line in lines):
                problems.append(f"--no-dedup_output: {len(lines)} lines: {lines[:10]}")
        finally:
            bridge.down()
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print(f"PASS: {MACHINES} machines x {PER_MACHINE} ranks, {STEPS} steps: one line per step "
              "per machine, the traceback whole, every line in the log files, off by the flag")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
