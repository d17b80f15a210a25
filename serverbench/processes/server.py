"""What a measurement needs of a server, whoever started it: the `Server` protocol.

Three kinds implement it: `supervisor.ServerProcess` (started, pinned and stopped here),
`target.ExternalServer` (`--target`: someone else's, reachable only over HTTP) and
`cluster.remote_server.RemoteServer` (`--server-on-cluster`: started on a Dask worker, every
call a call to that worker). Each hands out its own sampler, so the measuring core
(run/measure.py) samples any of them the same way and never asks which kind it holds.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


class UsageReport(Protocol):
    """What a stopped sampler hands back: the usage as the stored cell keeps it (None: not sampled)."""

    def to_dict(self) -> dict[str, Any] | None: ...


class UsageSampler(Protocol):
    """CPU and memory of a server's process tree between start() and stop()."""

    def start(self) -> "UsageSampler": ...

    def stop(self) -> UsageReport: ...


class MemoryCeiling(Protocol):
    """The memory limit a start runs under (memlimit.py): how much, how it is held, and where."""

    @property
    def limit_bytes(self) -> int: ...

    @property
    def method(self) -> str: ...

    @property
    def detail(self) -> str: ...


@runtime_checkable
class Server(Protocol):
    """A running server under test, as the runner, the cross-check and the calibration read it."""

    @property
    def url(self) -> str: ...

    @property
    def pid(self) -> int | None: ...

    @property
    def host(self) -> str | None: ...

    @property
    def workers(self) -> int | None: ...

    @property
    def cpus(self) -> list[int] | None: ...

    @property
    def memory(self) -> MemoryCeiling | None: ...

    @property
    def ready_s(self) -> float | None:
        """Its process start → first 200 on GET /, s (None: not started here, so not timed)."""
        ...

    def alive(self) -> bool: ...

    def returncode(self) -> int | str | None: ...

    def log_tail(self, n: int) -> str | None: ...

    def kill(self) -> None: ...

    def oom_killed(self) -> bool: ...

    def sampler(self, interval: float) -> UsageSampler:
        """Its process tree sampled every `interval` s (nothing, for a server with no process here)."""
        ...


__all__ = ["Server", "UsageSampler", "UsageReport", "MemoryCeiling"]
