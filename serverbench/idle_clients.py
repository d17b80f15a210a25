"""Idle keep-alive connections held open against a server, from a child process.

The harness's own open-files limit must not bound the test, and the client sockets must not
share the harness's CPU accounting with the server: a child process (`python -m
serverbench.idle_clients HOST PORT`), pinned to the client CPUs, opens the connections. Each one
sends `GET /`, reads a 200 with its body and then stays open and silent: an idle keep-alive
connection as a browser leaves it. The parent drives it with one line per command on stdin and
reads one JSON line back:

    open N  -> {"held": H, "failed": F, "error": "first failure" | null}  (total open = N)
    check   -> {"held": H}   (connections the server has not closed)
    (EOF)   -> every connection reset (SO_LINGER 0: no TIME_WAIT left behind), exit
"""
from __future__ import annotations

import json
import os
import resource
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO

from .supervisor import die_with_parent, pinned

CONNECT_TIMEOUT_S = 5.0
OPEN_DEADLINE_S = 120.0  # per `open` command: a bounded step even against a stalling server
MAX_FAILURES = 50  # stop opening after this many failures: the server has reached its limit


# -- the child ------------------------------------------------------------------------------------
def _read_response(s: socket.socket) -> bytes:
    """One HTTP response (headers + Content-Length body); raises OSError on EOF."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("connection closed before a response")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("connection closed inside the body")
        body += chunk
    return head


def _open_one(host: str, port: int) -> socket.socket:
    s = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    try:
        s.sendall(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = _read_response(s)
        status = head.split(b"\r\n", 1)[0]
        if b" 200" not in status:
            raise OSError(f"status {status.decode(errors='replace')!r}")
        if b"connection: close" in head.lower():
            raise OSError("the server closes the connection after a response")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.setblocking(False)
        return s
    except BaseException:
        s.close()
        raise


def _still_open(s: socket.socket) -> bool:
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def serve(host: str, port: int, commands: IO[str], replies: IO[str]) -> None:
    """The child's loop: one command per line, one JSON reply per command."""
    held: list[socket.socket] = []
    try:
        for line in commands:
            cmd, _, arg = line.strip().partition(" ")
            if cmd == "open":
                target, failed, error = int(arg), 0, None
                deadline = time.monotonic() + OPEN_DEADLINE_S
                while len(held) < target and failed < MAX_FAILURES and time.monotonic() < deadline:
                    try:
                        held.append(_open_one(host, port))
                    except OSError as e:
                        failed += 1
                        error = error or f"connection {len(held) + failed}: {e}"
                if len(held) < target and error is None:
                    error = f"stopped after {OPEN_DEADLINE_S:g} s"
                reply = {"held": len(held), "failed": failed, "error": error}
            elif cmd == "check":
                held = [s for s in held if _still_open(s) or s.close()]
                reply = {"held": len(held)}
            else:
                reply = {"error": f"unknown command {cmd!r}"}
            replies.write(json.dumps(reply) + "\n")
            replies.flush()
    finally:
        for s in held:
            s.close()


def main() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    serve(sys.argv[1], int(sys.argv[2]), sys.stdin, sys.stdout)


# -- the parent's handle --------------------------------------------------------------------------
@dataclass
class OpenResult:
    held: int
    failed: int
    error: str | None


class IdleClients:
    """A child process holding idle connections to host:port; always stopped by `close()`."""

    def __init__(self, host: str, port: int, cpus: list[int] | None = None) -> None:
        parent = os.getpid()
        self.proc = subprocess.Popen(
            pinned([sys.executable, "-m", "serverbench.idle_clients", host, str(port)], cpus),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            preexec_fn=lambda: die_with_parent(parent))

    def _ask(self, line: str) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"idle-connection helper (pid {self.proc.pid}) exited "
                               f"with code {self.proc.wait()}")
        return json.loads(reply)

    def open_to(self, total: int) -> OpenResult:
        r = self._ask(f"open {total}")
        return OpenResult(r["held"], r["failed"], r["error"])

    def held(self) -> int:
        return int(self._ask("check")["held"])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> "IdleClients":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    main()


__all__ = ["IdleClients", "OpenResult", "serve"]
