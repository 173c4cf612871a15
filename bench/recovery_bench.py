#!/usr/bin/python3
"""Recovery of a Python program under elastic membership, beside torchrun's elastic agent.

Two machines (network namespaces, tests/faults/cluster.py), 2 processes each, the unmodified DDP
script tests/testing/torch_ddp.py (gloo, CPU) under `--nnodes 1:2`; once both machines train,
every process of machine 1 is SIGKILLed (launcher and workers). Measured: seconds from the kill
to the first optimizer step at world 2 that a restarted worker of machine 0 completes (the
script prints each step with time.time(); the namespaces share the clock). Steps lost: the
restarted workers start from step 0 (the script keeps no checkpoint), so every step before the
kill is lost for both launchers alike; not reported. Also shown: the job's start-up, from
launching the machines to the first step at world 4 (the program's own start-up, which every
recovery by restart pays again, plus the first rendezvous).

  accel-launch  --nnodes 1:2 --max_restarts 3 (its rendezvous on machine 0)
  torchrun      Debian's, through bench/torchrun_compat.py: --nnodes 1:2 --rdzv-backend c10d
                --max-restarts 3, the c10d store on machine 0

Usage: recovery_bench.py --launcher build/launcher/cli/accel-launch [--trials N]
                         [--peers accel,torchrun] [--out bench/results/recovery.json]
Needs root (ip netns). The numbers depend on the machine's load: say what else ran.
"""
import argparse
import hashlib
import json
import os
import re
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


def argv_for(peer: str, args, cluster: Cluster, machine: int, port: int, work: str) -> list:
    program = [SCRIPT, "--steps", "0", "--print-steps"]
    if peer == "accel":
        token = os.path.join(work, "token")
        if not os.path.exists(token):
            with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(hashlib.sha256(work.encode()).hexdigest() + "\n")
        return [args.launcher, "--use_cpu", "--nnodes", "1:2", "--nproc_per_node", "2",
                "--machine_rank", str(machine), "--main_process_ip", cluster.addr[0],
                "--main_process_port", str(port), "--max_restarts", "3", "--rdzv_timeout", "60",
                "--rdzv_token_file", token, PY] + program
    return [PY, os.path.join(HERE, "torchrun_compat.py"), "--nnodes", "1:2",
            "--nproc_per_node", "2", "--rdzv_backend", "c10d",
            "--rdzv_endpoint", f"{cluster.addr[0]}:{port}", "--rdzv_id", f"bench{port}",
            # The namespaces' host name resolves to loopback: say which machine hosts the store.
            "--rdzv_conf", f"is_host={1 if machine == 0 else 0}",
            "--max_restarts", "3", "--monitor_interval", "0.1"] + program  # runs it with PY


def steps(path: str) -> list:
    try:
        with open(path, errors="replace") as f:
            return [tuple(float(x) for x in m.groups()) for m in STEP.finditer(f.read())]
    except OSError:
        return []


def trial(peer: str, args, cluster: Cluster, port: int, work: str) -> dict:
    os.makedirs(work, exist_ok=True)
    logs = [os.path.join(work, f"m{m}.log") for m in (0, 1)]
    procs = []
    for m in (0, 1):
        env = dict(os.environ, GLOO_SOCKET_IFNAME=cluster.veth[m], TMPDIR=work)
        procs.append(cluster.launch(m, argv_for(peer, args, cluster, m, port, work), logs[m], env))
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
        cluster.kill_all()
        cluster.wait_empty(10)
        return {"ok": False, "why": "never trained at world 4"}
    start_up = min(s[3] for s in steps(logs[0]) if int(s[1]) == 4) - launched
    time.sleep(1)
    killed = time.time()
    kill_pids(cluster.pids(1))
    first = None
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and first is None:
        after = [s for s in steps(logs[0]) if int(s[1]) == 2 and s[3] > killed]
        if after:
            first = min(s[3] for s in after)
        time.sleep(0.05)
    cluster.kill_all()
    cluster.wait_empty(10)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
    if first is None:
        return {"ok": False, "why": "no step at world 2 within 240 s"}
    return {"ok": True, "seconds": first - killed, "start_up": start_up}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--peers", default="accel,torchrun")
    p.add_argument("--out", default=os.path.join(HERE, "results", "recovery.json"))
    args = p.parse_args()
    if os.geteuid() != 0:
        print("recovery_bench: needs root (ip netns)", file=sys.stderr)
        return 77
    cluster = Cluster()
    work = tempfile.mkdtemp(prefix="accel_recovery_")
    results = {}
    port = 29900
    hosts_dirs = []
    try:
        cluster.up()
        # torchrun's workers get MASTER_ADDR = machine 0's host name, which resolves to loopback
        # in a namespace: `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts, so
        # both machines resolve the (shared) host name to machine 0's address.
        import socket
        for ns in cluster.ns:
            d = f"/etc/netns/{ns}"
            os.makedirs(d, exist_ok=True)
            hosts_dirs.append(d)
            with open(os.path.join(d, "hosts"), "w") as f:
                f.write(f"127.0.0.1 localhost\n{cluster.addr[0]} {socket.gethostname()}\n")
        for peer in args.peers.split(","):
            results[peer] = []
            for n in range(args.trials):
                port += 1
                r = trial(peer, args, cluster, port, os.path.join(work, f"{peer}-{n}"))
                print(f"{peer} trial {n + 1}: {r}", file=sys.stderr, flush=True)
                results[peer].append(r)
    finally:
        cluster.down()
        for d in hosts_dirs:
            try:
                os.remove(os.path.join(d, "hosts"))
                os.rmdir(d)
            except OSError:
                pass
    print(f"{'launcher':<12} {'trials':>6} {'ok':>3} {'p50 s':>7} {'p99 s':>7} {'max s':>7} "
          f"{'start-up p50 s':>15}")
    for peer, rs in results.items():
        secs = sorted(r["seconds"] for r in rs if r["ok"])
        if not secs:
            print(f"{peer:<12} {len(rs):>6} {0:>3}")
            continue
        p99 = secs[min(len(secs) - 1, int(round(0.99 * (len(secs) - 1))))]
        start = statistics.median(r["start_up"] for r in rs if r["ok"])
        print(f"{peer:<12} {len(rs):>6} {len(secs):>3} {statistics.median(secs):>7.2f} "
              f"{p99:>7.2f} {secs[-1]:>7.2f} {start:>15.2f}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    return 0 if all(r["ok"] for rs in results.values() for r in rs) else 1


if __name__ == "__main__":
    sys.exit(main())
