"""One trial's two-machine job: launch accel-launch on both machines, wait until training runs,
and read back how it ended (exit codes, logs, the root-cause lines)."""
import glob
import hashlib
import os
import random
import re
import struct
import subprocess
import time

from cluster import Cluster

# A small MLP whose steps take milliseconds, so a fault lands in the middle of training.
TRAIN_ARGS = ["--input-dim", "32", "--hidden", "64", "--layers", "3", "--classes", "4",
              "--samples", "4096", "--batch-size", "8", "--lr", "0.01", "--optimizer", "sgd"]
FOREVER = 10_000_000  # --steps for a job that trains until a fault ends it


class Tools:
    """Paths of the programs under test."""

    def __init__(self, launcher: str, train: str, intruder: str, python_script: str,
                 python_ddp: str = "") -> None:
        self.launcher = launcher
        self.train = train
        self.intruder = intruder
        self.python_script = python_script
        self.python_ddp = python_ddp  # an unmodified DDP script (python_scenarios.py)


class Job:
    """A two-machine job of 2 × 2 CPU processes in `cluster`, logs and scratch under `work`."""

    def __init__(self, cluster: Cluster, tools: Tools, work: str, run_id: str, port: int) -> None:
        self.cluster = cluster
        self.tools = tools
        self.work = work
        self.run_id = run_id
        self.port = port
        self.procs = [None, None]
        self.logs = [os.path.join(work, f"m{m}.log") for m in (0, 1)]
        self.codes = [None, None]
        self.env = dict(os.environ, TMPDIR=work)
        self.env.pop("XDG_RUNTIME_DIR", None)  # run directories under TMPDIR (progress_step)
        os.makedirs(work, exist_ok=True)

    def token_file(self, name: str, secret: str) -> str:
        path = os.path.join(self.work, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        # The launcher refuses weak tokens: a strong one derived from the scenario's secret.
        os.write(fd, hashlib.sha256(secret.encode()).hexdigest().encode() + b"\n")
        os.close(fd)
        return path

    def launcher_argv(self, machine: int, options: list, program: list) -> list:
        argv = [self.tools.launcher, "--use_cpu", "--num_machines", "2", "--num_processes", "4",
                "--machine_rank", str(machine), "--main_process_ip", self.cluster.addr[0],
                "--main_process_port", str(self.port), "--rdzv_timeout", "30"]
        if self.run_id:
            argv += ["--run_id", self.run_id]
        return argv + options + program

    def start(self, options: list = (), program: list = None, per_machine: list = ((), ()),
              env: list = ({}, {})) -> None:
        """Starts both machines; `per_machine` adds options, `env` variables to one machine."""
        program = program or [self.tools.train] + TRAIN_ARGS + ["--steps", str(FOREVER)]
        for m in (0, 1):
            argv = self.launcher_argv(m, list(options) + list(per_machine[m]), program)
            self.procs[m] = self.cluster.launch(m, argv, self.logs[m], dict(self.env, **env[m]))

    def progress_step(self, machine: int, rank: int, attempt: int = 0) -> int:
        """Returns the step in rank `rank`'s progress file (-1 while there is none)."""
        # The run directory is a fresh accel-<run id>-m<machine>-XXXXXX under TMPDIR (= work; no
        # XDG_RUNTIME_DIR: self.env); with the default run id there is exactly one per machine.
        run_id = glob.escape(self.run_id) if self.run_id else "*"
        found = glob.glob(os.path.join(glob.escape(self.work), f"accel-{run_id}-m{machine}-*"))
        if len(found) != 1:
            return -1
        path = os.path.join(found[0], f"attempt_{attempt}", f"rank_{rank}", "progress")
        try:
            with open(path, "rb") as f:
                data = f.read(8)
            return struct.unpack("<Q", data)[0] if len(data) == 8 else -1
        except OSError:
            return -1

    def wait_training(self, timeout: float = 90, min_step: int = 2) -> bool:
        """Waits until every rank has taken `min_step` optimizer steps, then a random moment
        more (up to 0.5 s), so faults land anywhere in a step."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.progress_step(r // 2, r) >= min_step for r in range(4)):
                time.sleep(random.uniform(0, 0.5))
                return True
            if any(p.poll() is not None for p in self.procs):
                return False
            time.sleep(0.05)
        return False

    def wait_steps(self, steps: list, timeout: float):
        """Returns [(monotonic time, step)] for each threshold in `steps` (ascending): when every
        rank had first taken at least that many steps (polled every 10 ms), or None when that
        did not happen within `timeout` or a launcher exited first."""
        deadline = time.monotonic() + timeout
        reached = []
        while len(reached) < len(steps) and time.monotonic() < deadline:
            step = min(self.progress_step(r // 2, r) for r in range(4))
            while len(reached) < len(steps) and step >= steps[len(reached)]:
                reached.append((time.monotonic(), step))
            if any(p.poll() is not None for p in self.procs):
                return None
            time.sleep(0.01)
        return reached if len(reached) == len(steps) else None

    def wait_output(self, machine: int, pattern: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.log(machine)):
                return True
            time.sleep(0.05)
        return False

    def finish(self, timeout: float) -> bool:
        """Waits until no process of the job is left in either machine; collects exit codes.
        Returns False (and kills what is left) when that takes longer than `timeout`. A machine
        whose launcher never started keeps its code."""
        ended = self.cluster.wait_empty(timeout)
        if not ended:
            self.cluster.kill_all()
            self.cluster.wait_empty(5)
        for m in (0, 1):
            if self.procs[m] is None:
                continue
            try:
                self.codes[m] = self.procs[m].wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.procs[m].kill()
                self.codes[m] = self.procs[m].wait()
        return ended

    def log(self, machine: int) -> str:
        try:
            with open(self.logs[machine], errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def root_cause(self, machine: int) -> str:
        """Returns the first "root cause" row (with the detail lines under it) of a machine."""
        text = self.log(machine)
        at = text.find("root cause")
        if at < 0:
            return ""
        line_start = text.rfind("\n", 0, at) + 1
        return text[line_start:text.find("\n", at) + 1] + "".join(
            line + "\n" for line in text[text.find("\n", at) + 1:].splitlines()[:3])

    def checksum(self, machine: int = 0) -> str:
        found = re.findall(r'"param_checksum": ([-0-9.e+]+)', self.log(machine))
        return found[-1] if found else ""
