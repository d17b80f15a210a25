"""Idle keep-alive connections held open against a server, from a child process.

The harness's own open-files limit must not bound the test, and the client sockets must not
share the harness's CPU accounting with the server: a child process (`python -m
serverbench.cost.idle_clients HOST PORT`), pinned to the client CPUs, opens the connections, WINDOW at a
time. Each one sends `GET /`, reads a 200 with its body and then stays open and silent: an idle
keep-alive connection as a browser leaves it. The parent drives it with one line per command on stdin and
reads one JSON line back:

    open N  -> {"held": H, "failed": F, "error": "first failure" | null}  (total open = N)
    check   -> {"held": H}   (connections the server has not closed)
    (EOF)   -> every connection reset (SO_LINGER 0: no TIME_WAIT left behind), exit
"""
from __future__ import annotations

import json
import os
import resource
import selectors
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO

from ..processes.supervisor import die_with_parent, pinned

CONNECTION_TIMEOUT_S = 10.0  # connect + request + response, per connection
OPEN_DEADLINE_S = 120.0  # per `open` command: a bounded step even against a stalling server
MAX_FAILURES = 50  # stop opening after this many failures: the server has reached its limit
WINDOW = 64  # connections being opened at once (one at a time took minutes on slow acceptors)


# -- the child ------------------------------------------------------------------------------------
def response_head(buf: bytes) -> bytes | None:
    """The head of the one HTTP response in `buf` once it is complete (Content-Length body), else None."""
    head, sep, body = buf.partition(b"\r\n\r\n")
    if not sep:
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    return head if len(body) >= length else None


def _check(head: bytes) -> None:
    status = head.split(b"\r\n", 1)[0]
    if b" 200" not in status:
        raise OSError(f"status {status.decode(errors='replace')!r}")
    if b"connection: close" in head.lower():
        raise OSError("the server closes the connection after a response")


class _Opening:
    """One connection on its way to idle: connect, send GET /, read the 200."""

    def __init__(self, host: str, port: int, request: bytes) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.out, self.buf = request, b""
        self.deadline = time.monotonic() + CONNECTION_TIMEOUT_S
        self.sock.connect_ex((host, port))

    def step(self, writable: bool) -> bool:
        """Advance on a readiness event; True once the response is in (raises OSError on failure)."""
        if writable:
            err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, os.strerror(err))
            self.out = self.out[self.sock.send(self.out):]
            return False
        chunk = self.sock.recv(65536)
        if not chunk:
            raise OSError("connection closed before a response")
        self.buf += chunk
        head = response_head(self.buf)
        if head is None:
            return False
        _check(head)
        return True


def open_connections(host: str, port: int, count: int, held: list[socket.socket]) -> tuple[int, str | None]:
    """Open `count` idle connections into `held`, WINDOW at a time; (failures, first error)."""
    request = f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    sel = selectors.DefaultSelector()
    started = failed = 0
    error: str | None = None
    deadline = time.monotonic() + OPEN_DEADLINE_S

    def drop(o: _Opening, why: str) -> None:
        nonlocal failed, error
        sel.unregister(o.sock)
        o.sock.close()
        failed += 1
        error = error or why

    while (started < count or sel.get_map()) and failed < MAX_FAILURES and time.monotonic() < deadline:
        while started < count and len(sel.get_map()) < WINDOW:
            o = _Opening(host, port, request)
            sel.register(o.sock, selectors.EVENT_WRITE, o)
            started += 1
        for key, events in sel.select(timeout=0.2):
            o = key.data
            try:
                if o.step(bool(events & selectors.EVENT_WRITE)):
                    sel.unregister(o.sock)
                    o.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    held.append(o.sock)
                elif not o.out:
                    sel.modify(o.sock, selectors.EVENT_READ, o)
            except (OSError, ValueError) as e:
                drop(o, str(e) or type(e).__name__)
        now = time.monotonic()
        for key in list(sel.get_map().values()):
            if key.data.deadline < now:
                drop(key.data, f"no response within {CONNECTION_TIMEOUT_S:g} s")
    for key in list(sel.get_map().values()):  # stopped early: the ones still opening are not held
        key.data.sock.close()
    sel.close()
    if started < count and error is None:
        error = f"stopped after {OPEN_DEADLINE_S:g} s"
    return failed, error


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
                failed, error = open_connections(host, port, max(0, int(arg) - len(held)), held)
                reply = {"held": len(held), "failed": failed, "error": error}
            elif cmd == "check":
                for s in [s for s in held if not _still_open(s)]:
                    held.remove(s)
                    s.close()
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
            pinned([sys.executable, "-m", "serverbench.cost.idle_clients", host, str(port)], cpus),
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
