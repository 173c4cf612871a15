"""Two machines as Linux network namespaces joined by a veth pair, for the fault suite.

Each machine is a namespace with one address (10.216.<id>.1 and .2); nothing else is reachable
from them, and the suite sends traffic only to them. Processes are started inside a namespace
with `ip netns exec`, found with `ip netns pids`, and killed by pid. Needs root.
"""
import os
import signal
import subprocess
import time


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=30)



def program_env(pid: int, program: str):
    """Returns the environment (a dict) of process `pid` when its command runs `program` (the
    executable or the script after an interpreter), else None (also when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        if not any(a.endswith(program.encode()) for a in argv[:2]):
            return None
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(e.decode(errors="replace").split("=", 1)
                        for e in f.read().split(b"\0") if b"=" in e)
    except OSError:
        return None


def kill_pids(pids: list) -> int:
    """SIGKILLs `pids` (those already gone are skipped); returns how many were given."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(pids)


def wait_until_none(pids, timeout: float, poll: float) -> bool:
    """Waits up to `timeout` until pids() returns none; returns whether it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pids():
            return True
        time.sleep(poll)
    return not pids()

class Cluster:
    """Creates the namespaces on up() and removes them (and everything in them) on down()."""

    def __init__(self) -> None:
        tag = os.getpid() % 100000
        self.ns = [f"accel_flt_{tag}_0", f"accel_flt_{tag}_1"]
        self.veth = [f"vfl{tag}a", f"vfl{tag}b"]
        subnet = os.getpid() % 200 + 20
        self.addr = [f"10.216.{subnet}.1", f"10.216.{subnet}.2"]
        self.created = False

    def up(self) -> None:
        run("ip", "netns", "add", self.ns[0])
        self.created = True
        run("ip", "netns", "add", self.ns[1])
        run("ip", "link", "add", self.veth[0], "type", "veth", "peer", "name", self.veth[1])
        for m in (0, 1):
            run("ip", "link", "set", self.veth[m], "netns", self.ns[m])
            run("ip", "-n", self.ns[m], "addr", "add", f"{self.addr[m]}/24", "dev", self.veth[m])
            run("ip", "-n", self.ns[m], "link", "set", self.veth[m], "up")
            run("ip", "-n", self.ns[m], "link", "set", "lo", "up")

    def down(self) -> None:
        if not self.created:
            return
        self.kill_all()
        for ns in self.ns:
            run("ip", "netns", "del", ns, check=False)  # removes the veth pair too
        self.created = False

    def link(self, machine: int, up: bool) -> None:
        """Takes machine `machine`'s link down (the cable pulled) or back up."""
        run("ip", "-n", self.ns[machine], "link", "set", self.veth[machine],
            "up" if up else "down")

    def pids(self, machine: int) -> list:
        out = run("ip", "netns", "pids", self.ns[machine], check=False).stdout
        return [int(p) for p in out.split()]

    def all_pids(self) -> list:
        return self.pids(0) + self.pids(1)

    def kill_all(self) -> int:
        """SIGKILLs every process in both namespaces; returns how many there were."""
        return kill_pids(self.all_pids())

    def wait_empty(self, timeout: float) -> bool:
        """Waits until no process is left in either namespace."""
        return wait_until_none(self.all_pids, timeout, 0.02)

    def launch(self, machine: int, argv: list, log_path: str, env: dict) -> subprocess.Popen:
        """Starts `argv` inside machine `machine`, stdout and stderr into `log_path`."""
        log = open(log_path, "w")
        return subprocess.Popen(["ip", "netns", "exec", self.ns[machine]] + argv, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)

    def workers(self, program: str) -> dict:
        """Returns {rank: pid} of the processes in either namespace whose command runs
        `program` (read from /proc: their RANK variable)."""
        out = {}
        for pid in self.all_pids():
            env = program_env(pid, program)
            try:
                if env is not None and "RANK" in env:
                    out[int(env["RANK"])] = pid
            except ValueError:
                continue
        return out
