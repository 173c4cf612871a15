#!/usr/bin/python3
"""The seeded chaos soak (issue 35; docs/design/chaos-soak.md): N machines as network namespaces
on one bridge, one accel-launch and one train.bin worker each, elastic in place
(--min_machines MIN --elastic_in_place), training until the end of the run while the faults of a
schedule drawn from --seed (soak_schedule.py: kill -9, link down and up, a SIGSTOPped launcher,
a second loss inside a regroup, a replacement minutes late, and a new machine joining for every
replacement) hit every machine but 0. Every worker writes train.bin --trace; the soak logs every
action and every launcher's exit. At the end soak_check.py checks the traces (no job end while
>= MIN machines live, no sample lost or repeated per epoch, no step applied twice, replicas
bitwise equal after every change) and measures the effective training time and every recovery;
soak_report.py prints the table. Exit 1 when a check failed (or the effective training time is
under --min_effective), 77 (skipped) without root or ip netns.

Usage (CI: netns_faults_soak; the full criterion: bench/chaos_soak.py):
  sudo python3 tests/faults/soak.py --launcher build/launcher/accel-launch \\
      --train build/examples/train.bin --machines 4 --min_machines 2 --seed 1 --duration 180
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))

import soak_check  # noqa: E402
import soak_report  # noqa: E402
import soak_schedule  # noqa: E402
from cluster import kill_pids  # noqa: E402
from job import FOREVER  # noqa: E402
from many_machines import run_trials  # noqa: E402

SAMPLES = 4096
# A tiny MLP: N processes share 2 cores, a step is mostly communication.
TRAIN_ARGS = ["--input-dim", "16", "--hidden", "16", "--layers", "2", "--classes", "4",
              "--samples", str(SAMPLES), "--batch-size", "4", "--lr", "0.01", "--optimizer",
              "sgd", "--log-every", "0", "--steps", str(FOREVER), "--trace-params-every", "50"]


class Soak:
    """One run: the machines' launchers, the action log, the clock of the schedule."""

    def __init__(self, args, bridge, work):
        self.args, self.bridge, self.work = args, bridge, work
        self.n = len(bridge.ns)
        self.token = os.path.join(work, "token")
        fd = os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, os.urandom(32).hex().encode() + b"\n")
        os.close(fd)
        self.traces = os.path.join(work, "trace")
        os.makedirs(self.traces)
        self.run_id = f"soak-{args.seed}"
        self.port = 29500 + args.seed % 300
        self.env = dict(os.environ, TMPDIR=work)
        self.env.pop("XDG_RUNTIME_DIR", None)
        self.procs, self.down, self.stopped = {}, set(), set()
        self.events = []
        self.starts = 0

    def live(self):
        return sum(1 for m, p in self.procs.items()
                   if p.poll() is None and m not in self.down and m not in self.stopped)

    def log(self, action, machine, **extra):
        e = {"time": time.time(), "action": action, "machine": machine, **extra}
        e["live"] = self.live()
        self.events.append(e)
        if self.args.verbose:
            print(f"  {e['time'] - self.t0 if hasattr(self, 't0') else 0:7.1f} s {action} "
                  f"m{machine} {extra} live {e['live']}", flush=True)

    def launch(self, m, kind="initial"):
        a = self.args
        argv = ["ip", "netns", "exec", self.bridge.ns[m], a.launcher, "--use_cpu",
                "--num_machines", str(self.n), "--num_processes", str(self.n),
                "--machine_rank", str(m), "--main_process_ip", self.bridge.addr[0],
                "--main_process_port", str(self.port), "--rdzv_timeout", "900",
                "--run_id", self.run_id, "--rdzv_token_file", self.token,
                "--min_machines", str(a.min_machines), "--max_restarts", "100000",
                "--elastic_in_place", a.train] + TRAIN_ARGS + [
                    "--trace", os.path.join(self.traces, f"m{m}"), "--seed", str(a.seed)]
        self.starts += 1
        with open(os.path.join(self.work, f"m{m}.{self.starts}.log"), "w") as log:
            self.procs[m] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=self.env,
                                             start_new_session=True)
        self.log("start", m, kind=kind)

    def reap(self):
        """Logs every launcher that exited since the last call."""
        for m, p in list(self.procs.items()):
            if p.poll() is not None and not getattr(p, "logged", False):
                p.logged = True
                self.log("exit", m, code=p.returncode)

    def running(self, m):
        p = self.procs.get(m)
        return p is not None and p.poll() is None

    def victim(self, m, avoid=()):
        """`m`, or the next machine (not 0) whose launcher runs when `m`'s does not."""
        for k in range(self.n - 1):
            c = 1 + (m - 1 + k) % (self.n - 1)
            if c not in avoid and self.running(c) and c not in self.down and \
                    c not in self.stopped:
                return c
        return None

    def kill(self, m, kind):
        self.log("kill", m, kind=kind)
        kill_pids(self.bridge.machine_pids(m))

    def link(self, m, up, kind):
        subprocess.run(["ip", "-n", self.bridge.ns[m], "link", "set", "eth0",
                        "up" if up else "down"], check=True, capture_output=True, timeout=30)
        (self.down.discard if up else self.down.add)(m)
        self.log("link_up" if up else "link_down", m, kind=kind)

    def generation_file(self):
        found = glob.glob(os.path.join(glob.escape(self.work), f"accel-{self.run_id}-m0-*",
                                       "generation"))
        try:
            with open(found[0]) as f:
                return f.read()
        except (OSError, IndexError):
            return ""

    def replace(self, m, kind, since, queue):
        """A new machine m joins when its launcher is gone; a lost machine's launcher (link) is
        given until `since` + 30 s to leave (asked again every 0.5 s: the loop never blocks, a
        stopped launcher's SIGCONT must not wait); a machine that stayed is left alone."""
        if self.running(m) and kind == "link" and time.monotonic() < since + 30:
            queue.append((time.monotonic() + 0.5, "replace", (m, since), kind))
            return
        self.reap()
        if self.running(m):
            self.log("stayed", m, kind=kind)
            return
        kill_pids(self.bridge.machine_pids(m))  # anything its launcher left behind
        self.launch(m, kind="join")

    def fault(self, f, queue):
        kind = f["kind"]
        m = self.victim(f["machine"])
        if m is None:
            self.log("skipped", f["machine"], kind=kind)
            return
        now = time.monotonic()
        replace = {m: f["replace"][f["machine"]]}  # the second victim's: second_fault
        if m != f["machine"]:
            self.log("victim_moved", f["machine"], to=m, kind=kind)
        if kind == "link":
            self.link(m, False, kind)
            queue.append((now + f["down"], "link_up", m, kind))
        elif kind == "stop":
            os.kill(self.procs[m].pid, signal.SIGSTOP)
            self.stopped.add(m)
            self.log("stop", m, kind=kind, seconds=f["stopped"])
            queue.append((now + f["stopped"], "cont", m, kind))
        else:
            before = self.generation_file()
            self.kill(m, kind)
            if kind == "second":  # the second kill: second_fault
                queue.append((now, "regroup", {"f": f, "first": m, "before": before,
                                               "since": now}, kind))
        for machine, after in replace.items():
            queue.append((now + after, "replace", (machine, now + after), kind))

    def second_fault(self, what, c, queue):
        """"regroup": waits (asked every loop, up to 15 s) for machine 0's launcher to write the
        next generation, then the second kill `into` s later ("kill2")."""
        now = time.monotonic()
        if what == "regroup":
            if self.generation_file() == c["before"] and now < c["since"] + 15:
                queue.append((now + 0.01, "regroup", c, "second"))
            else:
                queue.append((now + c["f"]["into"], "kill2", c, "second"))
            return
        f = c["f"]
        b = self.victim(f["second"], avoid=(c["first"],))
        if b is None:
            self.log("skipped", f["second"], kind="second")
            return
        self.kill(b, "second")
        after = f["replace"][f["second"]]
        queue.append((c["since"] + after, "replace", (b, c["since"] + after), "second"))

    def run(self, schedule):
        a = self.args
        for m in range(self.n):
            self.launch(m)
        deadline = time.monotonic() + a.start_timeout
        self.t0 = time.time()
        while time.monotonic() < deadline:
            if all(self.stepped(m) for m in range(self.n)):
                break
            if not self.running(0):
                break
            time.sleep(0.2)
        self.t0 = time.time()
        self.log("all_training", 0, seconds=a.start_timeout - (deadline - time.monotonic()))
        start = time.monotonic()
        queue = [(start + f["at"], "fault", f, f["kind"]) for f in schedule]
        end = start + a.duration
        while time.monotonic() < end and self.running(0):
            self.reap()
            queue.sort(key=lambda q: q[0])
            while queue and queue[0][0] <= time.monotonic():
                _, what, x, kind = queue.pop(0)
                if what == "fault":
                    self.fault(x, queue)
                elif what == "link_up":
                    self.link(x, True, kind)
                elif what == "cont":
                    os.kill(self.procs[x].pid, signal.SIGCONT)
                    self.stopped.discard(x)
                    self.log("cont", x, kind=kind)
                elif what == "replace":
                    self.replace(x[0], kind, x[1], queue)
                elif what in ("regroup", "kill2"):
                    self.second_fault(what, x, queue)
            time.sleep(0.01)
        self.reap()
        self.end_time = time.time()
        self.log("end", 0)
        for m in range(self.n):
            if m in self.stopped:
                os.kill(self.procs[m].pid, signal.SIGCONT)
        self.bridge.kill_all()
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def stepped(self, m):
        for path in glob.glob(os.path.join(glob.escape(self.traces), f"m{m}.*")):
            with open(path, errors="replace") as f:
                if "\nstep " in f.read():
                    return True
        return False


def one(args, schedule, number, bridge, work_root):
    work = os.path.join(work_root, f"run-{number}")
    os.makedirs(work)
    soak = Soak(args, bridge, work)
    began = time.time()
    load = os.getloadavg()[0]
    soak.run(schedule)
    traces = soak_check.load(soak.traces)
    result = soak_check.check(traces, soak.events, SAMPLES, soak.end_time, args.min_machines,
                              stall_limit=args.stall_limit)
    meta = {"seed": args.seed, "machines": args.machines, "min_machines": args.min_machines,
            "duration": args.duration, "started": began, "load_start": load,
            "load_end": os.getloadavg()[0], "wall": time.time() - began,
            "schedule": schedule, "counts": soak_schedule.counts(schedule),
            "executed": soak_report.executed(soak.events)}
    bad = soak_check.problems(result, args.min_effective)
    print(soak_report.text(result, meta, bad), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "result": result, "problems": bad, "events": soak.events},
                      f, indent=1, default=str)
    if bad and args.keep:
        subprocess.run(["cp", "-r", work, args.keep], check=False)
    return not bad, f"{len(bad)} problem(s)", result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--machines", type=int, default=4)
    p.add_argument("--min_machines", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration", type=float, default=180, help="seconds of faults and training")
    p.add_argument("--per_kind", type=int, default=1, help="faults of each kind in the run")
    p.add_argument("--kinds", default=",".join(soak_schedule.FAULTS),
                   help="the fault kinds drawn, comma-separated (default: all)")
    p.add_argument("--min_effective", type=float, default=0.0,
                   help="fail under this effective training time (0.95: the issue's criterion)")
    p.add_argument("--stall_limit", type=float, default=soak_check.STALL_LIMIT,
                   help="seconds without a step while >= MIN machines live that fail the run "
                        "(a short run needs a limit well under its length)")
    p.add_argument("--start_timeout", type=float, default=300)
    p.add_argument("--json", default="", help="write the result, schedule and events here")
    p.add_argument("--keep", default="", help="copy a failed run's logs and traces here")
    p.add_argument("--verbose", action="store_true", help="print every action as it happens")
    p.add_argument("--backlog", type=int, default=30000)
    args = p.parse_args()
    try:
        schedule = soak_schedule.draw(args.seed, args.duration, args.machines, args.min_machines,
                                      args.per_kind, kinds=tuple(args.kinds.split(",")))
    except ValueError as e:
        p.error(str(e))
    print(f"seed {args.seed}: {len(schedule)} faults over {args.duration:.0f} s on "
          f"{args.machines} machines (MIN {args.min_machines})\n"
          + soak_schedule.describe(schedule), flush=True)
    trials = run_trials(args.machines, 1, "accel_soak_",
                        lambda n, b, w: one(args, schedule, n, b, w), args.backlog)
    if isinstance(trials, int):
        return trials
    return 0 if all(ok for ok, _ in trials) else 1


if __name__ == "__main__":
    sys.exit(main())
