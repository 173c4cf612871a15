#!/usr/bin/python3
"""Recovery from a lost machine under elastic membership, Python program, beside torchrun's agent.

Two machines (network namespaces, tests/faults/cluster.py), 2 processes each, the unmodified DDP
script tests/testing/torch_ddp.py (gloo, CPU) under `--nnodes 1:2`. Once both machines train at
world 4 (and 0.5-1.5 s more, so the fault lands anywhere in a step), one fault hits machine 1:

  kill9      every process of machine 1 (launcher and workers) SIGKILLed
  link-down  machine 1's veth set down (nothing is killed: the machine is cut off)

Measured on machine 0, from the script's own timestamps (it prints "step S world W rank R time T"
after each optimizer step, T = time.time(); the namespaces share the clock):
  seconds     from the fault to the first optimizer step completed at world 2
  steps lost  steps machine 0 had completed before the fault that it had to redo: the last step
              before the fault minus the step the first one at world 2 continues from (the script
              keeps no checkpoint, so a restarted program starts from step 0 and loses them all,
              under either launcher; libaccel's in-place recovery keeps them)
  start-up    from launching the machines to the first step at world 4 (the program's own start,
              which every recovery by restart pays again, plus the first rendezvous)
  rendezvous  accel-launch only: its own part of the recovery, machine 0's membership line
              ("recovered in X s": from learning of the loss to the new generation's rendezvous)
  launcher    the launcher's part of the recovery: from the fault to the spawn of machine 0's
              first worker of the new world (the kernel's start time of the process, 10 ms ticks)
  program     the program's part: from that spawn to the first step at world 2 (the restarted
              program's own start-up: interpreter, torch import, process group, first step).
              Goal (issue 25): the launcher's part <= 1 s after kill -9
and the 1-minute load average before each trial (the machine may be shared).

  accel     accel-launch --nnodes 1:2 --max_restarts 3 (its rendezvous on machine 0)
  torchrun  Debian's, through bench/torchrun_compat.py: --nnodes 1:2 --rdzv-backend c10d
            --max-restarts 3 --monitor_interval 0.1, the c10d store on machine 0

A trial that does not recover within --recover-timeout seconds counts as not recovered (its
time is not in the percentiles; the table says how many). Trials of the two launchers alternate
while both have trials left. p99 is the nearest rank (with 20 trials, the slowest).

Usage: sudo recovery_bench.py --launcher build/launcher/accel-launch [--faults kill9,link-down]
           [--trials 20] [--torchrun-trials 3] [--recover-timeout 120]
           [--out bench/results/recovery.json]
Prints the table (also written as bench/results/recovery.md) and writes every trial to the JSON.
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "faults"))
from cluster import Cluster, kill_pids  # noqa: E402

PY = "/usr/bin/python3"
SCRIPT = os.path.join(HERE, "..", "tests", "testing", "torch_ddp.py")
STEP = re.compile(r"step (\d+) world (\d+) rank (\d+) time ([0-9.]+)")
RECOVERED = re.compile(r"membership: generation 1: .* recovered in ([0-9.]+) s")
FAULTS = ("kill9", "link-down")


def argv_for(peer: str, args, addr0: str, machine: int, port: int, work: str,
             nnodes: str = "1:2") -> list:
    """The command of machine `machine` (torch_ddp.py under `peer`), rendezvous at `addr0`."""
    program = [SCRIPT, "--steps", "0", "--print-steps"]
    if peer == "accel":
        token = os.path.join(work, "token")
        if not os.path.exists(token):
            with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(hashlib.sha256(work.encode()).hexdigest() + "\n")
        return [args.launcher, "--use_cpu", "--nnodes", nnodes, "--nproc_per_node", "2",
                "--machine_rank", str(machine), "--main_process_ip", addr0,
                "--main_process_port", str(port), "--max_restarts", "3", "--rdzv_timeout", "60",
                "--rdzv_token_file", token, PY] + program
    return [PY, os.path.join(HERE, "torchrun_compat.py"), "--nnodes", nnodes,
            "--nproc_per_node", "2", "--rdzv_backend", "c10d",
            "--rdzv_endpoint", f"{addr0}:{port}", "--rdzv_id", f"bench{port}",
            # The namespaces' host name resolves to loopback: say which machine hosts the store.
            "--rdzv_conf", f"is_host={1 if machine == 0 else 0}",
            "--max_restarts", "3", "--monitor_interval", "0.1"] + program  # runs it with PY


def steps(path: str) -> list:
    """Returns (step, world, rank, time) of every step line in the log at `path`."""
    try:
        with open(path, errors="replace") as f:
            return [tuple(float(x) for x in m.groups()) for m in STEP.finditer(f.read())]
    except OSError:
        return []


def started_at(pid: int):
    """Returns when process `pid` was spawned (time.time() seconds; the kernel's start time, in
    clock ticks of 10 ms), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None
    boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def worker_env(pid: int, marker: str):
    """The environment of process `pid` when it is a worker (RANK set) running `marker` (an
    argument ending so), else None (also when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if not any(a.endswith(marker.encode()) for a in f.read().split(b"\0")):
                return None
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
    except OSError:
        return None
    return env if b"RANK" in env else None


def spawned(pids: list, marker: str, world: int):
    """Returns when the first of `pids` that runs `marker` (an argument ending so) as a worker of
    world `world` (its RANK and WORLD_SIZE variables) was spawned, or None."""
    times = []
    for pid in pids:
        env = worker_env(pid, marker)
        if env is not None and env.get(b"WORLD_SIZE") == str(world).encode():
            times.append(started_at(pid))
    times = [t for t in times if t is not None]
    return min(times) if times else None


def add_split(result: dict, fault_at: float, first_at: float, spawn) -> None:
    """Splits a recovery by restart at the new workers' spawn: the launcher's part (fault ->
    spawned) and the program's own start-up (spawned -> its first step at the new world)."""
    if spawn is not None and fault_at <= spawn <= first_at:
        result.update(launcher_s=spawn - fault_at, program_s=first_at - spawn)


def inject(fault: str, cluster: Cluster, victims: list) -> None:
    """kill9: SIGKILLs `victims` (machine 1's processes, listed before the fault's time was
    taken, so the listing is not counted); link-down: takes machine 1's link down."""
    if fault == "kill9":
        kill_pids(victims)
    else:
        cluster.link(1, up=False)


def trial(peer: str, fault: str, args, cluster: Cluster, port: int, work: str) -> dict:
    os.makedirs(work, exist_ok=True)
    logs = [os.path.join(work, f"m{m}.log") for m in (0, 1)]
    load = os.getloadavg()[0]
    procs = []
    result = {"ok": False, "load1": load}
    try:
        for m in (0, 1):
            env = dict(os.environ, GLOO_SOCKET_IFNAME=cluster.veth[m], TMPDIR=work)
            procs.append(cluster.launch(m, argv_for(peer, args, cluster.addr[0], m, port, work),
                                        logs[m], env))
            if peer == "torchrun" and m == 0:
                time.sleep(1)  # its c10d store on machine 0 first
        launched = time.time()
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # both machines train at world 4
            if {int(s[2]) for s in steps(logs[1]) if int(s[1]) == 4} >= {2, 3} and \
               {int(s[2]) for s in steps(logs[0]) if int(s[1]) == 4} >= {0, 1}:
                break
            time.sleep(0.1)
        else:
            result["why"] = "never trained at world 4"
            return result
        result["start_up"] = min(s[3] for s in steps(logs[0]) if int(s[1]) == 4) - launched
        time.sleep(random.uniform(0.5, 1.5))
        victims = cluster.pids(1) if fault == "kill9" else []
        fault_at = time.time()
        inject(fault, cluster, victims)
        first = None
        deadline = time.monotonic() + args.recover_timeout
        while time.monotonic() < deadline and first is None:
            after = [s for s in steps(logs[0]) if int(s[1]) == 2 and s[3] > fault_at]
            if after:
                first = min(after, key=lambda s: s[3])
            time.sleep(0.02)
        if first is None:
            result["why"] = f"no step at world 2 within {args.recover_timeout:g} s"
            return result
        before = [s for s in steps(logs[0]) if int(s[1]) == 4 and s[3] <= fault_at]
        last_before = int(max(s[0] for s in before)) if before else 0
        result.update(ok=True, seconds=first[3] - fault_at, last_step_before=last_before,
                      first_step_after=int(first[0]),
                      steps_lost=max(0, last_before - (int(first[0]) - 1)))
        add_split(result, fault_at, first[3], spawned(cluster.pids(0), "torch_ddp.py", 2))
        with open(logs[0], errors="replace") as f:  # accel-launch's own part: the rendezvous
            said = RECOVERED.search(f.read())
        if said:
            result["rendezvous_s"] = float(said.group(1))
        return result
    finally:
        cluster.link(1, up=True)
        cluster.kill_all()
        cluster.wait_empty(10)
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()


def write_hosts(namespaces: list, addr0: str) -> list:
    """Makes the host name resolve to `addr0` in every namespace; returns the folders made.
    torchrun's workers get MASTER_ADDR = machine 0's host name, which resolves to loopback in a
    namespace: `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts."""
    dirs = []
    for ns in namespaces:
        d = f"/etc/netns/{ns}"
        os.makedirs(d, exist_ok=True)
        dirs.append(d)
        with open(os.path.join(d, "hosts"), "w") as f:
            f.write(f"127.0.0.1 localhost\n{addr0} {socket.gethostname()}\n")
    return dirs


def remove_hosts(dirs: list) -> None:
    for d in dirs:
        try:
            os.remove(os.path.join(d, "hosts"))
            os.rmdir(d)
        except OSError:
            pass


def nearest_rank(values: list, q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarize(rows: list) -> dict:
    ok = [r for r in rows if r["ok"]]
    out = {"trials": len(rows), "recovered": len(ok)}
    if ok:
        secs = [r["seconds"] for r in ok]
        lost = [r["steps_lost"] for r in ok]
        out.update(p50_s=statistics.median(secs), p99_s=nearest_rank(secs, 0.99),
                   max_s=max(secs), steps_lost_p50=statistics.median(lost),
                   steps_lost_max=max(lost),
                   start_up_p50_s=statistics.median(r["start_up"] for r in ok))
        for part in ("rendezvous", "launcher", "program"):  # the parts some trials measure
            got = [r[part + "_s"] for r in ok if part + "_s" in r]
            if got:
                out.update({f"{part}_p50_s": statistics.median(got), f"{part}_max_s": max(got),
                            f"{part}_n": len(got)})
    loads = [r["load1"] for r in rows]
    out.update(load1_min=min(loads), load1_max=max(loads))
    return out


def part_cell(s: dict, part: str) -> str:
    """"p50 / max" of a part of the recovery (with how many trials measured it, when not all)."""
    if f"{part}_p50_s" not in s:
        return "—"
    cell = f"{s[part + '_p50_s']:.2f} / {s[part + '_max_s']:.2f}"
    return cell + (f" ({s[part + '_n']} trials)" if s[part + "_n"] != s["recovered"] else "")


def table(summary: dict) -> str:
    lines = ["| fault | launcher | trials | recovered | p50 s | p99 s | max s | steps lost p50 / max "
             "| start-up p50 s | rendezvous p50 / max s | launcher part p50 / max s "
             "| program part p50 / max s | load (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for fault, peers in summary.items():
        for peer, s in peers.items():
            if s["recovered"]:
                nums = (f"{s['p50_s']:.2f} | {s['p99_s']:.2f} | {s['max_s']:.2f} | "
                        f"{s['steps_lost_p50']:g} / {s['steps_lost_max']} | "
                        f"{s['start_up_p50_s']:.2f} | ")
                nums += " | ".join(part_cell(s, part)
                                   for part in ("rendezvous", "launcher", "program"))
            else:
                nums = "— | — | — | — | — | — | — | —"
            lines.append(f"| {fault} | {peer} | {s['trials']} | {s['recovered']} | {nums} | "
                         f"{s['load1_min']:.1f}–{s['load1_max']:.1f} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--faults", default=",".join(FAULTS))
    p.add_argument("--trials", type=int, default=20, help="accel-launch trials per fault")
    p.add_argument("--torchrun-trials", type=int, default=3, help="torchrun trials per fault")
    p.add_argument("--recover-timeout", type=float, default=120)
    p.add_argument("--out", default=os.path.join(HERE, "results", "recovery.json"))
    args = p.parse_args()
    faults = args.faults.split(",")
    if any(f not in FAULTS for f in faults):
        p.error(f"--faults: each of {', '.join(FAULTS)}")
    if os.geteuid() != 0:
        print("recovery_bench: needs root (ip netns)", file=sys.stderr)
        return 77
    counts = {"accel": args.trials, "torchrun": args.torchrun_trials}
    cluster = Cluster()
    work = tempfile.mkdtemp(prefix="accel_recovery_")
    results = {f: {peer: [] for peer, n in counts.items() if n > 0} for f in faults}
    port = 29900
    hosts_dirs = []
    started = datetime.datetime.now(datetime.timezone.utc)
    try:
        cluster.up()
        hosts_dirs = write_hosts(cluster.ns, cluster.addr[0])
        for fault in faults:
            for n in range(max(counts.values())):  # alternate while both have trials left
                for peer in results[fault]:
                    if n >= counts[peer]:
                        continue
                    port += 1
                    r = trial(peer, fault, args, cluster, port,
                              os.path.join(work, f"{fault}-{peer}-{n}"))
                    print(f"{fault} {peer} trial {n + 1}: {r}", file=sys.stderr, flush=True)
                    results[fault][peer].append(r)
    finally:
        cluster.down()
        remove_hosts(hosts_dirs)
    summary = {f: {peer: summarize(rows) for peer, rows in peers.items()}
               for f, peers in results.items()}
    text = table(summary)
    print(text)
    print(f"logs of every trial: {work}", file=sys.stderr)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    meta = {"started": started.isoformat(timespec="seconds"),
            "ended": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(), "program": "tests/testing/torch_ddp.py (gloo, 2 x 2 ranks)",
            "launcher": args.launcher}
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "summary": summary, "trials": results}, f, indent=1)
    with open(os.path.splitext(args.out)[0] + ".md", "w") as f:
        f.write(text + "\n")
    return 0 if all(r["ok"] for peers in results.values() for rows in peers.values()
                    for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
