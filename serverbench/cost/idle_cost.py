"""What a contestant costs at run time before any load: start-up time and idle memory.

Start-up: process start → first 200 on `GET /` (the supervisor probes every 2 ms), median of N
starts, each on a fresh process. Memory: the RSS of the whole process tree (psutil, as the
sampler reads it in every cell; shared pages of a process pool count once per process) 2 s after
ready, then with idle keep-alive connections held open by a child process (idle_clients) at each
connection level; bounded models only up to their max_connections. Memory per connection is the
slope between the two highest levels, so one-off costs (first request, JIT, pools) fall out. A
level where the server closed idle connections before RSS was read (an idle timeout shorter than
the time to open them all) does not count; with one level left the slope starts from idle.
Kernel socket buffers are not in RSS and so not in these figures.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from ..processes import supervisor
from ..catalog.manifests import Manifest
from .idle_clients import IdleClients
from ..store import RssLevel
from ..processes.sampler import Sampler

READY_POLL_S = supervisor.STARTUP_POLL_S
IDLE_AFTER_READY_S = 2.0
SETTLE_S = 0.5  # after the connections of a level are open, before RSS is read
RSS_WINDOW_S = 0.5  # RSS is the mean over this window (sampled every 0.1 s)
LEVELS = (1000, 10_000)
HELD_SHARE = 0.95  # a level counts in the slope when this share of its connections stayed open


@dataclass
class Startup:
    median_ms: float | None
    runs_ms: list[float] = field(default_factory=list)
    error: str | None = None


@dataclass
class IdleMemory:
    idle_rss_bytes: int | None = None
    levels: list[RssLevel] = field(default_factory=list)
    per_connection_bytes: float | None = None
    slope_points: list[int] = field(default_factory=list)  # connection counts of the slope's two points
    errors: list[str] = field(default_factory=list)


def connection_levels(levels: tuple[int, ...], bound: int | None) -> list[int]:
    """The levels to measure: capped at a bounded model's max_connections; always two, so there
    is a slope (a bound below the first level gives half the bound and the bound)."""
    if bound is None:
        return sorted(set(levels))
    capped = sorted({min(n, bound) for n in levels})
    if len(capped) == 1:
        capped = [max(1, capped[0] // 2), capped[0]] if capped[0] > 1 else capped
    return capped


def slope(points: list[tuple[int, int]]) -> float | None:
    """Bytes per connection between the two highest (connections, RSS) points."""
    pts = sorted(p for p in points if p[0] >= 0)
    if len(pts) < 2 or pts[-1][0] == pts[-2][0]:
        return None
    (n1, r1), (n2, r2) = pts[-2], pts[-1]
    return (r2 - r1) / (n2 - n1)


def _rss(pid: int) -> int:
    s = Sampler(pid, interval=0.1, tree_every=0.5).start()
    time.sleep(RSS_WINDOW_S)
    return s.stop().rss_mean_bytes


def measure_startup(m: Manifest, *, starts: int, cpus: list[int] | None, workers: int | None,
                    ready_timeout: float) -> Startup:
    runs: list[float] = []
    for i in range(starts):
        try:
            with supervisor.run_server(m, cpus=cpus, workers=workers, ready_timeout=ready_timeout,
                                       ready_poll_s=READY_POLL_S) as srv:
                runs.append(round(1000 * (srv.ready_s or 0.0), 2))
        except supervisor.ServerStartError as e:
            return Startup(None, runs, f"start {i + 1} of {starts}: {str(e).splitlines()[0]}")
    return Startup(statistics.median(runs) if runs else None, runs)


def startups_of(cells: list[Any]) -> dict[str, list[float]]:
    """Each row's start-up times (ms) from a stored run's cells: the first point of each start carries
    its server's process start → first 200 (timing.server_start_s), probed as measure_startup probes.
    Only starts on the run's own server CPUs (a cores sweep's pinned starts are another figure)."""
    out: dict[str, list[float]] = {}
    for c in cells:
        s = c.metrics.timing.server_start_s
        if c.ok and s is not None and c.metrics.setup.server_cores is None:
            out.setdefault(c.server, []).append(round(1000 * s, 2))
    return out


def measure_memory(m: Manifest, *, levels: list[int], server_cpus: list[int] | None,
                   client_cpus: list[int] | None, workers: int | None, ready_timeout: float) -> IdleMemory:
    out = IdleMemory()
    try:
        with supervisor.run_server(m, cpus=server_cpus, workers=workers, ready_timeout=ready_timeout) as srv:
            time.sleep(IDLE_AFTER_READY_S)
            out.idle_rss_bytes = _rss(srv.pid)
            with IdleClients(srv.host, srv.port, client_cpus) as clients:
                for n in levels:
                    opened = clients.open_to(n)
                    time.sleep(SETTLE_S)
                    rss = _rss(srv.pid)
                    held = clients.held()
                    out.levels.append(RssLevel(requested=n, held=held, rss_bytes=rss))
                    if opened.error or held < opened.held:
                        out.errors.append(f"{n:,} idle connections: {opened.held:,} opened, {held:,} still open "
                                          f"when RSS was read" + (f"; {opened.error}" if opened.error else ""))
                    if opened.held < n:
                        break  # the server refuses more: higher levels would measure the same
    except supervisor.ServerStartError as e:
        out.errors.append(f"memory: {str(e).splitlines()[0]}")
    except RuntimeError as e:
        out.errors.append(f"memory: {e}")
    out.per_connection_bytes, out.slope_points, note = per_connection(out.levels, out.idle_rss_bytes)
    out.errors += [note] if note else []
    return out


def per_connection(levels: list[RssLevel], idle_rss: int | None) -> tuple[float | None, list[int], str | None]:
    """The slope over the levels that kept their connections: (bytes per connection, the connection
    counts it is between, a note when a level was left out and the slope starts from idle instead)."""
    kept = [(lv.held, lv.rss_bytes) for lv in levels if lv.held >= HELD_SHARE * lv.requested]
    note = None
    if len(kept) == 1 and idle_rss is not None and len(levels) > 1:
        kept.insert(0, (0, idle_rss))
        note = (f"memory per connection from idle to {kept[1][0]:,} connections: the higher level lost "
                "connections before RSS was read")
    per_conn = slope(kept)
    return per_conn, ([n for n, _ in sorted(kept)[-2:]] if per_conn is not None else []), note


__all__ = ["Startup", "IdleMemory", "measure_startup", "measure_memory", "connection_levels", "slope",
           "per_connection", "LEVELS"]
