#!/usr/bin/env python3
"""DDP training throughput: train.bin under accel-launch vs the same MLP in Python DDP under
Debian's torchrun (gloo, through bench/torchrun_compat.py, --monitor_interval 0.1), like for like:
same model, SGD on both sides, same data path (synthetic teacher set, DistributedSampler-style
shards, index_select batches), same accumulation, and one OMP_NUM_THREADS given to both sides
(cores / processes, accelerate's rule; accel-launch keeps a value it inherits). With one process
torchrun itself sets none, so torch's own default also runs, as "torchrun own threads". For each
(model, processes) the variants run alternately, --runs times each (default 5), and the median
samples/s is reported. With 2 processes, train.bin also runs with the shared-memory all-reduce
off (ACCEL_SHM=off: Gloo) and with overlap forced on.

--machines 2: two machines as `ip netns` namespaces joined by a veth pair (needs root; the bench
creates and removes them), --procs-per-machine processes on each (default 1), one accel-launch
or one torchrun per namespace: Gloo over the veth between the machines on both sides (libaccel's
hierarchical path: shared memory inside a machine, Gloo among one leader per machine).
OMP_NUM_THREADS is 1 on both sides (the namespaces share this machine's cores).

Prints a table, writes bench/results/ddp_bench.{csv,json} and, with gnuplot, a PNG (plot_ddp.py).
Not a test: numbers, not verdicts.
Usage: /usr/bin/python3 bench/ddp_bench.py [--build build] [--steps 200] [--runs 5] [--quick]
       /usr/bin/python3 bench/ddp_bench.py --machines 2 [--procs-per-machine 1]
"""
import argparse
import contextlib
import csv
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import plot_ddp  # bench/plot_ddp.py, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
LR = 0.01

MODELS = {
    # name: (input_dim, hidden, layers, classes, batch, accumulation)
    "784-1024x3-10": (784, 1024, 4, 10, 64, 2),
    "64-128x3-10": (64, 128, 4, 10, 16, 2),
}


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") or "] {" in line:
            return json.loads(line[line.index("{"):])
    raise RuntimeError("no JSON line in output:\n" + text[-2000:])


def run(cmd, env=None, timeout=900):
    full_env = dict(os.environ, **(env or {}))
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    result = last_json(proc.stdout)
    result["wall_s"] = time.perf_counter() - start
    return result


def ours(build, model, world, steps, warmup, env=None):
    """env: extra variables; OMP_NUM_THREADS is threads_per_process(world) unless env sets it."""
    d, h, layers, c, b, a = MODELS[model]
    cmd = [f"{build}/launcher/accel-launch", "--use_cpu", "--num_processes", str(world),
           "--gradient_accumulation_steps", str(a), "--mixed_precision", "no",
           f"{build}/examples/train.bin", "--input-dim", str(d), "--hidden", str(h),
           "--layers", str(layers), "--classes", str(c), "--batch-size", str(b),
           "--optimizer", "sgd", "--lr", str(LR), "--steps", str(steps), "--warmup", str(warmup),
           "--samples", str(64 * b * world)]
    return run(cmd, {"OMP_NUM_THREADS": threads_per_process(world), **(env or {})})


def threads_per_process(world):
    """The one thread count both sides get: cores / processes, as accelerate launch chooses."""
    return str(max(1, (os.cpu_count() or 1) // world))


def torch_mlp(model, world, steps, warmup):
    """The Python side's program: torch_mlp.py and its arguments for `model`."""
    d, h, layers, c, b, a = MODELS[model]
    return [f"{HERE}/torch_mlp.py", "--input-dim", str(d), "--hidden", str(h), "--layers",
            str(layers), "--classes", str(c), "--batch-size", str(b), "--grad-accum", str(a),
            "--optimizer", "sgd", "--lr", str(LR), "--steps", str(steps), "--warmup", str(warmup),
            "--samples", str(64 * b * world), "--dataset", "teacher"]


def python_ddp(model, world, steps, warmup, tries=2, threads=None):
    """threads: the environment for the thread count; None: threads_per_process(world)."""
    cmd = [PY, f"{HERE}/torchrun_compat.py", "--standalone", f"--nproc_per_node={world}",
           "--monitor_interval", "0.1"] + torch_mlp(model, world, steps, warmup)
    env = {"OMP_NUM_THREADS": threads_per_process(world)} if threads is None else threads
    # torchrun's c10d store start-up occasionally races its own workers (a store.set traceback
    # on this 2-core machine); one retry, and the failure is printed, not hidden.
    for attempt in range(tries):
        try:
            return run(cmd, env)
        except RuntimeError as e:
            if attempt + 1 == tries:
                raise
            print(f"torchrun failed, retrying once: {str(e).splitlines()[0]}", file=sys.stderr)


class TwoMachines:
    """Two namespaces joined by a veth pair; removed (and everything in them killed) on exit."""

    def __init__(self):
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so that __exit__ removes them
        tag = os.getpid() % 100000
        self.ns = [f"accel_ddpb_{tag}_0", f"accel_ddpb_{tag}_1"]
        sub = 20 + os.getpid() % 200
        self.addr = [f"10.217.{sub}.1", f"10.217.{sub}.2"]
        self.veth = f"vdb{tag}"
        self.port = 29600 + os.getpid() % 300
        self.work = tempfile.mkdtemp(prefix="ddp_bench_")
        self.token = os.path.join(self.work, "token")

    def __enter__(self):
        sh = lambda *c: subprocess.run(c, check=True)
        for ns in self.ns:
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", f"{self.veth}a", "type", "veth", "peer", "name", f"{self.veth}b")
        for i, end in enumerate("ab"):
            sh("ip", "link", "set", f"{self.veth}{end}", "netns", self.ns[i])
            sh("ip", "-n", self.ns[i], "addr", "add", f"{self.addr[i]}/24", "dev", f"{self.veth}{end}")
            sh("ip", "-n", self.ns[i], "link", "set", "lo", "up")
            sh("ip", "-n", self.ns[i], "link", "set", f"{self.veth}{end}", "up")
        with open(os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(os.urandom(32).hex() + "\n")  # the launcher refuses weak tokens
        return self

    def __exit__(self, *exc):
        for ns in self.ns:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                  text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", self.work])

    def next_port(self):
        self.port += 1  # a fresh port each run: no TIME_WAIT leftovers between runs
        return self.port

    def run_pair(self, cmd_for, env, timeout=900):
        """Runs cmd_for(machine) in each namespace at once; returns machine 0's last JSON line."""
        full_env = dict(os.environ, **env)
        start = time.perf_counter()
        procs = [subprocess.Popen(["ip", "netns", "exec", self.ns[m], *cmd_for(m)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=full_env) for m in (0, 1)]
        outs = [p.communicate(timeout=timeout) for p in procs]
        for m, p in enumerate(procs):
            if p.returncode != 0:
                raise RuntimeError(f"machine {m}: {' '.join(p.args)} exited {p.returncode}:\n"
                                   f"{outs[m][1][-3000:]}")
        result = last_json(outs[0][0])
        result["wall_s"] = time.perf_counter() - start
        return result


def ours_two_machines(build, net, model, per, steps, warmup):
    d, h, layers, c, b, a = MODELS[model]
    port = net.next_port()
    world = 2 * per

    def cmd(m):
        return [f"{build}/launcher/accel-launch", "--use_cpu", "--num_machines", "2",
                "--machine_rank", str(m), "--num_processes", str(world),
                "--main_process_ip", net.addr[0], "--main_process_port", str(port),
                "--rdzv_token_file", net.token, "--gradient_accumulation_steps", str(a),
                "--mixed_precision", "no", f"{build}/examples/train.bin", "--input-dim", str(d),
                "--hidden", str(h), "--layers", str(layers), "--classes", str(c),
                "--batch-size", str(b), "--optimizer", "sgd", "--lr", str(LR),
                "--steps", str(steps), "--warmup", str(warmup), "--samples", str(64 * b * world)]
    return net.run_pair(cmd, {"OMP_NUM_THREADS": "1"})


def torch_two_machines(net, model, per, steps, warmup):
    d, h, layers, c, b, a = MODELS[model]
    port = net.next_port()
    world = 2 * per

    def cmd(m):
        # Gloo picks its interface from the host name, which has no address inside a namespace:
        # name the veth (accel-launch passes the address it joined the rendezvous with).
        return ["env", f"GLOO_SOCKET_IFNAME={net.veth}{'ab'[m]}",
                PY, f"{HERE}/torchrun_compat.py", "--nnodes", "2", "--node_rank", str(m),
                f"--nproc_per_node={per}", "--master_addr", net.addr[0], "--master_port",
                str(port), "--monitor_interval", "0.1", f"{HERE}/torch_mlp.py",
                "--input-dim", str(d), "--hidden", str(h), "--layers", str(layers),
                "--classes", str(c), "--batch-size", str(b), "--grad-accum", str(a),
                "--optimizer", "sgd", "--lr", str(LR), "--steps", str(steps),
                "--warmup", str(warmup), "--samples", str(64 * b * world), "--dataset", "teacher"]
    return net.run_pair(cmd, {"OMP_NUM_THREADS": "1"})


def two_machine_variants(build, net, model, per, steps, warmup):
    return {
        "accel": lambda: ours_two_machines(build, net, model, per, steps,
                                           warmup)["samples_per_sec"],
        "torchrun": lambda: torch_two_machines(net, model, per, steps, warmup)["samples_per_sec"],
    }


def variants(build, model, world, steps, warmup):
    """name -> zero-argument function returning one run's samples/s."""
    out = {
        "accel": lambda: ours(build, model, world, steps, warmup)["samples_per_sec"],
        "torchrun": lambda: python_ddp(model, world, steps, warmup)["samples_per_sec"],
    }
    if world == 1:
        # torchrun itself sets no OMP_NUM_THREADS for one process: torch's own default (one
        # thread per physical core as cpuinfo counts them; here cpuinfo counts one).
        out["torchrun own threads"] = lambda: python_ddp(model, world, steps, warmup,
                                                         threads={})["samples_per_sec"]
    else:
        out["accel shm=off"] = lambda: ours(build, model, world, steps, warmup,
                                            {"ACCEL_SHM": "off"})["samples_per_sec"]
        out["accel overlap=on"] = lambda: ours(build, model, world, steps, warmup,
                                               {"ACCEL_OVERLAP": "on"})["samples_per_sec"]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--runs", type=int, default=5, help="alternating runs of each variant")
    p.add_argument("--quick", action="store_true",
                   help="small model, 2 processes, 12 steps, 1 run: checks the bench end to end")
    p.add_argument("--models", default=",".join(MODELS), help="comma list of " + ", ".join(MODELS))
    p.add_argument("--worlds", default="1,2", help="comma list of process counts")
    p.add_argument("--machines", type=int, choices=(1, 2), default=1,
                   help="2: two machines as network namespaces (root), --procs-per-machine each")
    p.add_argument("--procs-per-machine", type=int, default=1)
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    a = p.parse_args()
    models = ["64-128x3-10"] if a.quick else a.models.split(",")
    worlds = (2,) if a.quick else tuple(int(w) for w in a.worlds.split(","))
    if a.machines == 2:
        worlds = (2 * a.procs_per_machine,)
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    steps, warmup, runs = (12, 2, 1) if a.quick else (a.steps, a.warmup, a.runs)
    rows = []
    with TwoMachines() if a.machines == 2 else contextlib.nullcontext() as net:
        measure(a, models, worlds, steps, warmup, runs, net, rows)
    report(a, rows, steps, warmup, runs)


def measure(a, models, worlds, steps, warmup, runs, net, rows):
    for model in models:
        for world in worlds:
            if net is not None:
                fns = two_machine_variants(a.build, net, model, a.procs_per_machine, steps, warmup)
            else:
                fns = variants(a.build, model, world, steps, warmup)
            samples = {name: [] for name in fns}
            for i in range(runs):
                order = list(fns) if i % 2 == 0 else list(reversed(fns))  # alternate
                for name in order:
                    samples[name].append(fns[name]())
                    print(f"{model} world {world} run {i + 1}/{runs} {name}: "
                          f"{samples[name][-1]:.0f} samples/s", file=sys.stderr)
            peer = statistics.median(samples["torchrun"])
            for name, values in samples.items():
                med = statistics.median(values)
                rows.append({"model": model, "world": world, "machines": a.machines,
                             "variant": name, "median_samples_s": med, "runs": values,
                             "vs_torchrun": med / peer})


def report(a, rows, steps, warmup, runs):
    print(f"\n{'model':<16}{'machines':>9}{'world':>6}{'variant':>22}{'median samples/s':>18}"
          f"{'vs torchrun':>13}")
    for r in rows:
        print(f"{r['model']:<16}{r['machines']:>9}{r['world']:>6}{r['variant']:>22}"
              f"{r['median_samples_s']:>18.0f}{r['vs_torchrun']:>12.2f}x")
    os.makedirs(a.out, exist_ok=True)
    stem = "ddp_bench" if a.machines == 1 else "ddp_bench_2machines"
    with open(os.path.join(a.out, f"{stem}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["model", "world", "machines", "variant",
                                          "median_samples_s", "vs_torchrun", "runs"])
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, f"{stem}.json"), "w") as f:
        json.dump({"steps": steps, "warmup": warmup, "runs": runs, "machines": a.machines,
                   "procs_per_machine": a.procs_per_machine, "rows": rows,
                   "nproc": os.cpu_count()}, f, indent=2)
    print(f"\nwrote {a.out}/{stem}.csv and {stem}.json")
    if shutil.which("gnuplot"):
        plot_ddp.plot(os.path.join(a.out, f"{stem}.png"), [os.path.join(a.out, f"{stem}.json")])


if __name__ == "__main__":
    sys.exit(main())
