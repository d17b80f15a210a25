"""`--target URL`: a server the harness did not start (the user's own, or one on another machine).

The runner measures it with the same workloads, but nothing here supervises it: no build, verify,
start/stop, and no CPU/memory figures (cells say so with `target_url`). `ExternalServer` is a
`Server` (processes/server.py) with no process here: its sampler is a `NoSampler`.
"""
from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import urlsplit

from .server import MemoryCeiling
from .supervisor import ServerStartError


@dataclass
class ExternalManifest:
    """The catalog entry of a server that is not in the catalog (fingerprint and labels only)."""

    id: str = "target"
    language: str = "?"
    runtime: str | None = None
    model: str = "unknown"
    framework: str | None = None
    origin: str = "--target"
    description: str = "a server serverbench did not start"
    max_connections: int | None = None
    workers: int | None = None
    choices: Any = None

    def bound(self, workers: int | None) -> int | None:
        return None


@dataclass
class ExternalServer:
    url: str
    pid: int | None = None
    host: str | None = None
    cpus: list[int] | None = None
    workers: int | None = None
    memory: MemoryCeiling | None = None  # never limited here
    ready_s: float | None = None  # started by someone else: its start-up is not timed here
    _addr: tuple[str, int] = field(default=("", 0), repr=False)

    def alive(self) -> bool:
        """Whether it accepts a TCP connection (the runner's check between points)."""
        try:
            socket.create_connection(self._addr, timeout=2).close()
            return True
        except OSError:
            return False

    def returncode(self) -> str:
        return "unknown (not started by serverbench)"

    def log_tail(self, n: int) -> str | None:
        return None

    def kill(self) -> None:
        """Not ours to kill."""

    def oom_killed(self) -> bool:
        return False

    def sampler(self, interval: float) -> "NoSampler":
        """No process here to sample."""
        return NoSampler()


def parse(url: str) -> tuple[str, int]:
    """(host, port) of an http:// URL; ValueError naming the fix."""
    u = urlsplit(url)
    if u.scheme != "http" or not u.hostname:
        raise ValueError(f"--target {url}: give an http://HOST:PORT URL")
    return u.hostname, u.port or 80


@contextlib.contextmanager
def external(url: str) -> Iterator[ExternalServer]:
    """The running server at `url`; ServerStartError when it does not accept connections."""
    addr = parse(url)
    srv = ExternalServer(url.rstrip("/"), host=addr[0], _addr=addr)
    if not srv.alive():
        raise ServerStartError(f"--target {url} does not accept connections; start it first")
    yield srv


class NoSampler:
    """No process to sample: usage stays None, so no CPU/memory figures are stored."""

    def start(self) -> "NoSampler":
        return self

    def stop(self) -> "NoSampler":
        return self

    def to_dict(self) -> None:
        return None


__all__ = ["ExternalManifest", "ExternalServer", "external", "NoSampler", "parse"]
