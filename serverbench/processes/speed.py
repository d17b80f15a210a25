"""The machine's own speed around a cell (issue 49 item 5): a short CPU probe pinned to the server's
CPUs, and the steal time the kernel reports for them.

The probe hashes one fixed 64 KiB buffer with SHA-256 (C code in hashlib, which releases the GIL, so
the interpreter adds almost nothing) in a thread of its own pinned to the CPUs asked for, for
PROBE_S, and reports MiB hashed per CPU-second of that thread. Per CPU-second, not per wall
second: a server's CPU per request is its CPU time over its requests, so what explains a change in
it is how much work a CPU-second does (frequency, the cache a VM shares with its host's other
tenants), not how much CPU time the probe got (another process on the CPU, or the server still
closing its connections, would lower a wall-clock rate and say nothing about the cost of a request).
The thread is new and pins only itself (sched_setaffinity of thread 0), so the harness's own
threads stay on the client CPUs (run/lifecycle.py).

Steal is read per CPU from /proc/stat through psutil (`cpu_times(percpu=True)`), as the sampler
reads the rest of /proc: the time the hypervisor ran something else while this VM's vCPU wanted to
run. The server's CPUs are the ones whose lost time moves the server's figures.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import psutil

PROBE_S = 0.06  # per probe: two per cell (before, after) cost ~0.13 s of a cell's wall time
BUFFER = bytes(range(256)) * 256  # 64 KiB, the same bytes every time: a fixed unit of work
MIB = 1024 * 1024


@dataclass(frozen=True)
class Probe:
    """One probe: its rate, the CPUs its thread ran on, and the time it took."""

    mib_per_cpu_s: float  # MiB hashed per CPU-second of the probe's thread
    mib_per_wall_s: float  # the same per wall second (lower when the thread waited for its CPU)
    ran_on: tuple[int, ...]  # the probe thread's affinity while it worked
    wall_s: float


def probe(cpus: Sequence[int] | None, seconds: float = PROBE_S) -> Probe:
    """SHA-256 of BUFFER, over and over for `seconds` of wall time, in a thread pinned to `cpus`
    (None: wherever this process may run). OSError when the CPUs cannot be used."""
    result: list[Probe | BaseException] = []

    def work() -> None:
        try:
            if cpus:
                os.sched_setaffinity(0, set(cpus))  # 0 = this thread only
            ran_on = tuple(sorted(os.sched_getaffinity(0)))
            n, w0, c0 = 0, time.perf_counter(), time.thread_time()
            while (w1 := time.perf_counter()) - w0 < seconds or n == 0:
                hashlib.sha256(BUFFER).digest()
                n += 1
            cpu, wall, mib = max(time.thread_time() - c0, 1e-9), w1 - w0, n * len(BUFFER) / MIB
            result.append(Probe(round(mib / cpu, 1), round(mib / wall, 1), ran_on, round(wall, 4)))
        except BaseException as e:  # handed to the caller's thread
            result.append(e)

    t = threading.Thread(target=work, name="speed-probe", daemon=True)
    t.start()
    t.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


@dataclass(frozen=True)
class CpuTimes:
    """Steal and all time of some CPUs, seconds since boot (/proc/stat)."""

    steal_s: float
    total_s: float


def cpu_times(cpus: Sequence[int] | None) -> CpuTimes:
    """The summed /proc/stat times of `cpus` (None: every CPU)."""
    per = psutil.cpu_times(percpu=True)
    chosen = [per[i] for i in cpus if i < len(per)] if cpus else per
    steal = sum(getattr(t, "steal", 0.0) for t in chosen)
    # guest time is already inside user on Linux: leave it out of the total
    total = sum(sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0) for t in chosen)
    return CpuTimes(steal, total)


def steal_percent(before: CpuTimes, after: CpuTimes) -> float | None:
    """Steal between two readings as a % of those CPUs' time then (None: no time passed)."""
    total = after.total_s - before.total_s
    return round(100.0 * max(0.0, after.steal_s - before.steal_s) / total, 2) if total > 0 else None


__all__ = ["PROBE_S", "Probe", "probe", "CpuTimes", "cpu_times", "steal_percent"]
