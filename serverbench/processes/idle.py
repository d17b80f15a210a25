"""Waiting for a server to go quiet before a measured window (issue 46, item 6): what a previous load
left queued in it (requests of clients that are gone) must not be served in the next window.

python-fastapi answered none of the requests of tfb-fortunes' 80 % window on 2026-11-28 while its
CPU could serve ~1,200 a second: an overloaded open load before it (the 20 % point, 7× its capacity)
ends with up to max_connections requests queued in the server, and their clients gone. The runner
waits, before each open-load window, until the server's process tree (and the database's, for a db
workload) use less than `QUIET_PERCENT` of one CPU over `LOOK_S`, at most `LIMIT_S`; the wait is stored
with the cell, and a window that started busy says so.
"""
from __future__ import annotations

import time

import psutil

# A server working off a queue runs at least one CPU flat out (or its database does); one idling keeps
# timers and pollers only (java-rapidoid's idle JDBC workers: ~14 % of a CPU): half a CPU tells them apart.
QUIET_PERCENT = 50.0
LOOK_S = 0.1
LIMIT_S = 30.0


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its descendants alive now (0 when it is gone)."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def wait_quiet(pids: list[int], limit_s: float = LIMIT_S) -> tuple[float, bool]:
    """(seconds waited, whether they went quiet) until every tree in `pids` used under QUIET_PERCENT of a CPU
    over one LOOK_S."""
    t0 = time.monotonic()
    while True:
        before = [tree_cpu_s(p) for p in pids]
        time.sleep(LOOK_S)
        used = [tree_cpu_s(p) - b for p, b in zip(pids, before)]
        if all(100.0 * u / LOOK_S < QUIET_PERCENT for u in used):
            return round(time.monotonic() - t0, 2), True
        if time.monotonic() - t0 >= limit_s:
            return round(time.monotonic() - t0, 2), False


__all__ = ["wait_quiet", "tree_cpu_s", "QUIET_PERCENT", "LOOK_S", "LIMIT_S"]
