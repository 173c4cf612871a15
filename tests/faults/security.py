"""The fault suite's network security scenarios (issue 24): a sniffer, a replay, a port squatter
that terminates TLS with its own certificate, and floods from a stranger during training.

Each is one trial, as in scenarios.py; `run_faults.py --scenarios flood-full` runs the full sizes
(5,000 connections, 100 streams of 16 MiB, 1,000 slow handshakes), `flood` a reduced version for
CI. The stranger (tests/faults/attacker.py) runs in machine 1's namespace.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import time

from scenarios import PACED_STEPS, Outcome

HERE = os.path.dirname(os.path.abspath(__file__))
ATTACKER = [shutil.which("python3") or "/usr/bin/python3", os.path.join(HERE, "attacker.py")]
TOKEN = "6f1d2c9b8a7e4f30a1b2c3d4e5f60718293a4b5c6d7e8f9001122334455667788"


def self_signed(work: str) -> tuple:
    """A certificate of the stranger's own for the name every token leaf certifies."""
    cert, key = os.path.join(work, "stranger.pem"), os.path.join(work, "stranger.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=accel-rendezvous", "-addext", "subjectAltName=DNS:accel-rendezvous",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    return cert, key


def in_ns(ctx, machine: int, argv: list, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ctx.cluster.ns[machine]] + argv, **kwargs)


def wait_launchers(job, timeout: float) -> bool:
    """Waits until both launchers have exited (at most `timeout` s). A scenario's own tool in a
    machine's namespace (tcpdump, the squatter) must be stopped after this and before
    job.finish, which waits until no process at all is left in either namespace: otherwise the
    job seems to end only when the tool does."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(p is None or p.poll() is not None for p in job.procs):
            return True
        time.sleep(0.02)
    return False


# ---- pcap ----------------------------------------------------------------------------------


def tcp_streams(pcap: str, port: int) -> dict:
    """Returns {(src, sport, dst, dport): payload bytes in sequence order} of an Ethernet pcap,
    for the TCP streams to or from `port`."""
    with open(pcap, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return {}
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    segments = {}
    at = 24
    while at + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[at:at + 16])
        packet = data[at + 16:at + 16 + incl]
        at += 16 + incl
        if len(packet) < 14 + 20 or packet[12:14] != b"\x08\x00":
            continue
        ip = packet[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 6:
            continue
        total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        if port not in (sport, dport):
            continue
        payload = tcp[(tcp[12] >> 4) * 4:]
        if payload:
            key = (".".join(map(str, ip[12:16])), sport, ".".join(map(str, ip[16:20])), dport)
            segments.setdefault(key, {})[seq] = payload
    out = {}
    for key, by_seq in segments.items():
        out[key] = b"".join(by_seq[s] for s in sorted(by_seq))  # retransmits share a seq
    return out


def tls_framed(stream: bytes) -> bool:
    """Whether `stream` is nothing but TLS records (content types 20-23, version 3.x)."""
    at = 0
    while at + 5 <= len(stream):
        kind, major, length = stream[at], stream[at + 1], struct.unpack(">H", stream[at + 3:at + 5])[0]
        if kind not in (20, 21, 22, 23) or major != 3 or length > (1 << 14) + 2048:
            return False
        at += 5 + length
    return at >= len(stream) - 5 if stream else True


def capture_replay(ctx):
    """tcpdump on machine 0's interface through a whole job (launch with a preflight, training,
    `accel-launch status` from machine 1, the end). Passes when the capture holds no byte
    sequence of the token, the run id or the machines' host-independent names, every TCP stream
    to or from the rendezvous port is TLS records only (so no machine secret, key or value is in
    clear), the job finishes with an undisturbed run's checksum, and replaying each captured
    client stream to machine 0's port during training gets back nothing of the job."""
    if shutil.which("tcpdump") is None:
        return Outcome(0, True, False, False, "tcpdump missing (scripts/install-deps)")
    # Training for 60 s, or until released (Context.outlasting_program): the preflight, the
    # status query and every replay meet it while it trains.
    clean = ctx.clean_checksum(PACED_STEPS)
    job = ctx.job("capture-replay")
    # Everything (searched for the job's secrets), and the rendezvous port's streams alone (small:
    # parsed for the replays while the job still trains, and checked to be TLS only).
    pcap, rdzv_pcap = os.path.join(job.work, "m0.pcap"), os.path.join(job.work, "m0-rdzv.pcap")
    dumps = [in_ns(ctx, 0, ["tcpdump", "-i", ctx.cluster.veth[0], "-U", "-s", "0", "-w", path]
                   + what, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for path, what in ((pcap, ["tcp"]), (rdzv_pcap, ["tcp", "port", str(job.port)]))]
    # Each capture is open before the job starts (its first line, "listening on ...", says so):
    # a fixed second could miss the job's first packets on a busy host, and the search for its
    # secrets with them.
    for dump in dumps:
        dump.stderr.readline()
    start = time.monotonic()
    token = job.token_file("token", TOKEN)
    job.start(["--rdzv_token_file", token, "--preflight"], ctx.outlasting_program(job, 60))
    notes = []
    if not job.wait_training(min_step=5):
        notes.append("training never started: " + job.log(0)[-300:])
    status = subprocess.run(
        ["ip", "netns", "exec", ctx.cluster.ns[1], ctx.tools.launcher, "status", "--run_id",
         job.run_id], capture_output=True, text=True, timeout=60, env=job.env)
    if status.returncode != 0:
        notes.append(f"status exit {status.returncode}: {status.stderr[-200:]!r}")
    time.sleep(0.5)
    port = job.port
    # Every client stream captured so far (the launchers', the workers', status's), replayed at
    # once from machine 1 while the job trains.
    payloads = [payload for (_, _, dst, dport), payload in tcp_streams(rdzv_pcap, port).items()
                if dport == port and dst == ctx.cluster.addr[0]]
    replays = [in_ns(ctx, 1, [ATTACKER[0], "-c", REPLAY_SNIPPET, ctx.cluster.addr[0], str(port)],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for _ in payloads]
    replies = []
    for replay, payload in zip(replays, payloads):
        out, _ = replay.communicate(payload, timeout=30)
        replies.append(out)
    still_running = all(p.poll() is None for p in job.procs)
    ctx.release(job)
    ended = wait_launchers(job, 240)
    seconds = time.monotonic() - start
    for dump in dumps:  # the captures hold the job's end: tcpdump -U writes each packet at once
        dump.terminate()
        dump.wait(timeout=10)
    ended = job.finish(10) and ended  # nothing of the job is left behind
    streams = tcp_streams(rdzv_pcap, port)
    with open(pcap, "rb") as f:
        wire = f.read()
    # A host name shorter than 6 bytes ("vm") turns up by chance in megabytes of Gloo's tensor
    # bytes; it is checked as part of the rendezvous streams below (TLS records only).
    host = os.uname().nodename
    secrets = [("token", TOKEN), ("token prefix", TOKEN[:12]), ("run id", job.run_id)]
    if len(host) >= 6:
        secrets.append(("hostname", host))
    leaked = [name for name, secret in secrets if secret.encode() in wire]
    rdzv = {k: v for k, v in streams.items() if port in (k[1], k[3])}
    unframed = [k for k, v in rdzv.items() if not tls_framed(v)]
    replay_leaks = [r for r in replies if job.run_id.encode() in r or b"accel" in r]
    same = job.checksum() != "" and job.checksum() == clean
    notes.append(f"{len(rdzv)} rendezvous streams ({sum(map(len, rdzv.values()))} bytes), all "
                 f"TLS: {not unframed}; {len(wire)} bytes captured; {len(replies)} replayed")
    if leaked:
        notes.append(f"in the capture: {leaked}")
    if not rdzv:
        notes.append("no rendezvous stream captured")
    if unframed:
        notes.append(f"{len(unframed)} rendezvous stream(s) not TLS: {unframed[:2]}")
    if not replies or not still_running:
        notes.append(f"replayed {len(replies)} stream(s), job running then: {still_running}")
    if replay_leaks:
        notes.append("a replay got bytes of the job back")
    if not same:
        notes.append(f"checksum {job.checksum()} vs clean {clean}; exit {job.codes}")
    root_ok = not leaked and rdzv and not unframed and replies and still_running and not replay_leaks
    return Outcome(seconds, ended, bool(root_ok), same and job.codes == [0, 0], "; ".join(notes))


# Sends stdin to argv[1]:argv[2] on a fresh connection; prints what comes back within 3 s.
REPLAY_SNIPPET = """
import socket, sys, time
data = sys.stdin.buffer.read()
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(data)
s.settimeout(0.5)
back = b""
end = time.monotonic() + 3
while time.monotonic() < end:
    try:
        chunk = s.recv(65536)
    except socket.timeout:
        continue
    except OSError:
        break
    if not chunk:
        break
    back += chunk
sys.stdout.buffer.write(back)
"""


def wait_listening(ctx, machine: int, port: int, timeout: float = 30.0) -> bool:
    """Waits until a socket listens on `port` in machine `machine`'s namespace."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        listening = subprocess.run(
            ["ip", "netns", "exec", ctx.cluster.ns[machine], "ss", "-Hltn", f"sport = :{port}"],
            capture_output=True, text=True).stdout
        if listening.strip():
            return True
        time.sleep(0.05)
    return False


def squatter(ctx):
    """A stranger takes machine 0's port before the launchers start, with a TLS certificate of its
    own for the name the job's certificates carry, and answers HTTP/2 (a squatter, and what a man
    in the middle that terminates TLS looks like). Transport v2 completes the handshake with it
    (the server's certificate holds nothing of the token, so nothing there can be checked), then
    asks for the server's proof with a content-free call before sending anything of the job.
    Passes when machine 1 refuses it at once, naming what happened, machine 0 names the port as
    taken, machine 1 did ask (the squatter answered a request), and the squatter received none of
    the job's bytes: the token, the run id, a host name, a rendezvous method name."""
    job = ctx.job("squatter")
    cert, key = self_signed(job.work)
    out = os.path.join(job.work, "squatter")
    squat = in_ns(ctx, 0, ATTACKER + ["squat", "--bind", f"{ctx.cluster.addr[0]}:{job.port}",
                                      "--cert", cert, "--key", key, "--out", out,
                                      "--seconds", "25"])
    # The squatter holds the port before the launchers start: waited for, not slept on (1.5 s
    # lost the race to its Python start-up at load 10, and machine 0 took the port itself).
    if not wait_listening(ctx, 0, job.port):
        squat.kill()
        squat.wait()
        return Outcome(0, False, False, False, "the squatter never listened on the port")
    start = time.monotonic()
    job.start(["--rdzv_token_file", job.token_file("token", TOKEN), "--rdzv_timeout", "20"])
    ended = wait_launchers(job, 30)
    seconds = time.monotonic() - start
    squat.terminate()  # its files are written when it ends (SIGTERM: python's default ends it)
    squat.wait(timeout=30)
    ended = job.finish(10) and ended
    try:
        with open(out + ".raw", "rb") as f:
            raw = f.read()
        with open(out + ".plain", "rb") as f:
            plain = f.read()
        with open(out + ".json") as f:
            stats = json.load(f)
    except OSError:
        raw, plain, stats = b"", b"", {}
    seen = raw + plain
    leaked = [s for s in (TOKEN, job.run_id, os.uname().nodename, "accel.rendezvous")
              if s.encode() in seen]
    named = "did not prove that it holds this job's token" in job.log(1)
    port_named = re.search(r"main_process_port \d+", job.log(0)) is not None
    root_ok = (named and port_named and stats.get("requests", 0) > 0 and not leaked)
    note = "" if root_ok else (
        f"m1 named: {named}, m0 names the port: {port_named}, squatter {stats}, leaked {leaked}; "
        f"m1 tail {job.log(1)[-300:]!r}")
    return Outcome(seconds, ended, root_ok, job.codes[1] == 3 and seconds < 15, note)


def launcher_rss_mb(ctx) -> float:
    """Resident MB of machine 0's accel-launch (the one serving the rendezvous)."""
    for pid in ctx.cluster.pids(0):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if not argv[0].endswith(b"accel-launch"):
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024.0
        except OSError:
            continue
    return 0.0


def flood(connections: int, streams: int, slow: int, seconds: int):
    def trial(ctx):
        """Floods from a stranger on machine 1's network during training: idle connections,
        TLS connections that try to send a 16 MiB message, handshakes sent a byte a second.
        Passes when the job finishes with an undisturbed run's checksum, machine 0's launcher
        stays under 200 MB resident, no stranger's message got through, and machine 0 logs the
        refused handshakes a few times, not once per connection. The job (paced to train for
        twice the flood at least, released when the flood is over) must still be training when
        the flood ends: a flood against a finished job proves nothing."""
        clean = ctx.clean_checksum(PACED_STEPS)
        job = ctx.job(f"flood-{connections}")
        cert, key = self_signed(job.work)
        job.start(["--rdzv_token_file", job.token_file("token", TOKEN)],
                  ctx.outlasting_program(job, 2 * seconds + 30))
        if not job.wait_training(min_step=2):
            job.finish(10)
            return Outcome(0, False, False, False, "training never started: " + job.log(0)[-300:])
        start = time.monotonic()
        attacker = in_ns(ctx, 1, ATTACKER + [
            "flood", "--target", f"{ctx.cluster.addr[0]}:{job.port}", "--cert", cert,
            "--key", key, "--seconds", str(seconds), "--connections", str(connections),
            "--streams", str(streams), "--slow", str(slow)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peak = 0.0
        while attacker.poll() is None:
            peak = max(peak, launcher_rss_mb(ctx))
            time.sleep(0.25)
        out, err = attacker.communicate()
        during = all(p.poll() is None for p in job.procs)
        ctx.release(job)
        ended = job.finish(600)
        seconds_taken = time.monotonic() - start
        try:
            stats = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            stats = {}
        same = job.checksum() != "" and job.checksum() == clean
        # The flood is logged a few times, not per connection: refused handshakes (once, then a
        # sum a minute) and the connection cap's refusals (once), whichever the stranger met.
        lines = len(re.findall(r"TLS handshake(?:s)? failed|refusing connections from",
                               job.log(0)))
        got_through = stats.get("stream_fully_sent", 0)
        # The flood happened: as many idle connections were opened or refused at once by the
        # server's cap on connections in their handshake (rendezvous/grpc/connection_gate.h).
        tried = stats.get("idle_opened", 0) + stats.get("idle_refused_by_server", 0)
        root_ok = (during and tried >= connections and peak < 200 and
                   got_through == 0 and 0 < lines <= 3 + seconds // 60)
        note = (("" if during else "the job ended before the flood did; ") +
                f"peak RSS {peak:.0f} MB, flood {stats}, flood log lines {lines}, checksum "
                f"{job.checksum()} vs {clean}, exit {job.codes}"
                + ("" if stats else f"; attacker stderr {err[-300:]!r}"))
        return Outcome(seconds_taken, ended, root_ok, same and job.codes == [0, 0], note)
    return trial


# name -> trial, appended to scenarios.SCENARIOS by run_faults.py.
SECURITY_SCENARIOS = {
    "capture-replay": capture_replay,
    "squatter": squatter,
    "flood": flood(connections=500, streams=10, slow=100, seconds=15),
    "flood-full": flood(connections=5000, streams=100, slow=1000, seconds=30),
}
