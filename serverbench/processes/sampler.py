"""CPU, memory, threads and context switches of a whole process tree, sampled with psutil.

CPU time and context switches are deltas between start() and stop(), summed over
every process seen in the tree; a process that exits in between keeps its last
sampled values (what it used after its last sample, at most one interval, is lost).

Besides the totals, every second (at the first sample past it) becomes one row of a per-second
series (`SERIES_COLUMNS`), made of the sums the samples compute anyway, so the series costs the
harness almost nothing more. The root process's death is noted with its time, and an optional
RSS limit calls back the first time the tree's RSS passes it (the memory-limit watchdog).
"""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import psutil

PEAK_WINDOW_S = 0.5  # CPU% peak over windows this long: single ticks are too coarse
# Listing a tree walks /proc (every process's children); the counters of known processes are
# cheap to read. So the tree is re-listed this often, the counters read every interval.
TREE_REFRESH_S = 1.0
SERIES_EVERY_S = 1.0
# One row per second: t_s = end of the row's window (seconds since start()), dt_s = its length;
# CPU seconds and context switches used in the window; RSS = the window's highest sample;
# threads and processes = the last sample's; with `cpus`, others_cpu_s = CPU time other processes
# spent on those CPUs (see OtherProcesses).
SERIES_COLUMNS = ("t_s", "dt_s", "cpu_user_s", "cpu_sys_s", "rss_bytes", "threads", "processes",
                  "ctx_voluntary", "ctx_involuntary")
CPUS_COLUMN = "others_cpu_s"


class OtherProcesses:
    """CPU time that processes outside the server's tree may have taken from the server's CPUs.

    Per process, from its own counters (the kernel's exact run time): the CPU it used times the
    share of the CPUs it may run on that are the server's (1 for one pinned there, 1/2 for an
    unpinned one on a 2-CPU machine, 0 for the load generator pinned elsewhere) — an estimate for
    unpinned ones. /proc/stat's per-CPU busy time is not used: it is sampled at timer ticks, and
    on this project's VM it read 0.19 s busy on a CPU where the server alone used 1.83 s (4 s of a
    server waking 2,000 times a second). Kernel threads (ksoftirqd, kworkers) are left out: on
    loopback they mostly carry the server's own traffic. One pass over /proc took 2.5 ms here
    (65 processes), on the client CPUs, once a second.
    """

    def __init__(self, cpus: list[int]) -> None:
        self.cpus = set(cpus)
        self._last: dict[tuple[int, float], float] = {}
        self._at = time.time()
        self._primed = False

    def _weight(self, p: psutil.Process) -> float:
        allowed = set(p.cpu_affinity())
        return len(allowed & self.cpus) / len(allowed) if allowed else 0.0

    def step(self, tree: set[int]) -> float:
        """CPU seconds other processes used on the server's CPUs since the last step."""
        now, total, seen = time.time(), 0.0, {}
        for p in psutil.process_iter():
            try:
                if p.pid in tree or p.pid == 2 or p.ppid() == 2:
                    continue
                with p.oneshot():
                    key = (p.pid, p.create_time())
                    t = p.cpu_times()
                    used = t.user + t.system
                    w = self._weight(p)
            except psutil.Error:
                continue
            seen[key] = used
            # new since the last pass: all its CPU is recent (create_time rests on the boot time
            # in whole seconds, hence the slack); an old one first seen now: a baseline only
            before = self._last.get(key, 0.0 if self._primed and key[1] >= self._at - 2.0 else None)
            if before is not None and w > 0:
                total += max(0.0, used - before) * w
        self._last, self._at, self._primed = seen, now, True
        return total


@dataclass
class Usage:
    duration_s: float
    samples: int
    cpu_user_s: float
    cpu_sys_s: float
    cpu_percent_mean: float  # 100 = one CPU fully busy
    cpu_percent_peak: float
    rss_peak_bytes: int
    rss_mean_bytes: int
    threads_peak: int
    ctx_voluntary: int
    ctx_involuntary: int
    processes_peak: int
    # {"started_unix": wall clock of start(), "columns": SERIES_COLUMNS, "rows": [[...], ...]}
    series: dict[str, Any] = field(default_factory=dict)
    died_at_s: float | None = None  # first sample (s after start()) that found the root process gone
    rss_limit_hit_s: float | None = None  # first sample whose tree RSS passed the limit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Counters:
    user: float
    sys: float
    vol: int
    invol: int


class Sampler:
    """Sample process `pid` and all its descendants every `interval` s in a thread (a measured
    server: run/measure.SAMPLE_INTERVAL, through the server's own `sampler`).

    With `rss_limit`, `on_rss_limit(rss)` is called (once, from the sampling thread) at the first
    sample whose tree RSS exceeds it: between samples the tree may grow past the limit unseen.
    With `cpus` (the server's), each series row also says how busy those CPUs were."""

    def __init__(self, pid: int, *, interval: float, tree_every: float = TREE_REFRESH_S,
                 rss_limit: int | None = None, on_rss_limit: Callable[[int], None] | None = None,
                 cpus: list[int] | None = None) -> None:
        self.pid = pid
        self.cpus = list(cpus) if cpus else None
        self._others = OtherProcesses(self.cpus) if self.cpus else None
        self.interval = interval
        self.tree_every = tree_every
        self.rss_limit = rss_limit
        self.on_rss_limit = on_rss_limit
        self._limit_hit: float | None = None
        self._died: float | None = None
        self._started_unix = 0.0
        self._rows: list[list[float]] = []
        self._row_at = 0.0  # monotonic time of the last row's end
        self._row_base = (0.0, 0.0, 0, 0)  # user, sys, vol, invol totals at that time
        self._row_rss = 0
        self._latest: tuple[tuple[float, float, int, int], int, int] = ((0.0, 0.0, 0, 0), 0, 0)
        self.usage: Usage | None = None
        self._procs: dict[tuple[int, float], psutil.Process] = {}
        self._base: dict[tuple[int, float], _Counters] = {}
        self._last: dict[tuple[int, float], _Counters] = {}
        self._times: list[float] = []
        self._cpu: list[float] = []  # cumulative tree CPU seconds at each sample
        self._rss: list[int] = []
        self._threads_peak = 0
        self._procs_peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._t0 = 0.0
        self._tree_cache: list[psutil.Process] = []
        self._tree_at = float("-inf")

    def _tree(self) -> list[psutil.Process]:
        now = time.monotonic()
        if now - self._tree_at >= self.tree_every:
            try:
                root = psutil.Process(self.pid)
                self._tree_cache = [root, *root.children(recursive=True)]
            except psutil.Error:
                self._tree_cache = []
            self._tree_at = now
        return self._tree_cache

    def _tree_pids(self) -> set[int]:
        return {p.pid for p in self._tree_cache}

    def _key(self, p: psutil.Process) -> tuple[int, float] | None:
        try:
            return (p.pid, p.create_time())
        except psutil.Error:
            return None

    def _sample(self, baseline: bool = False) -> None:
        rss = threads = nprocs = 0
        root_seen = False
        for p in self._tree():
            key = self._key(p)
            if key is None:
                continue
            p = self._procs.setdefault(key, p)  # keep one object per process (cache)
            try:
                with p.oneshot():
                    if p.pid == self.pid and p.status() == psutil.STATUS_ZOMBIE:
                        continue  # exited, not yet reaped by its parent: gone
                    ct = p.cpu_times()
                    mem = p.memory_info().rss
                    nt = p.num_threads()
                    cs = p.num_ctx_switches()
            except psutil.Error:
                continue  # exited between listing and reading
            root_seen = root_seen or p.pid == self.pid
            c = _Counters(ct.user, ct.system, cs.voluntary, cs.involuntary)
            # processes born after start() count from zero
            self._base.setdefault(key, c if baseline else _Counters(0.0, 0.0, 0, 0))
            self._last[key] = c
            rss += mem
            threads += nt
            nprocs += 1
        now = time.monotonic()
        user = sys_ = 0.0
        vol = invol = 0
        for k, c in self._last.items():
            b = self._base[k]
            user += c.user - b.user
            sys_ += c.sys - b.sys
            vol += c.vol - b.vol
            invol += c.invol - b.invol
        with self._lock:
            self._times.append(now)
            self._cpu.append(user + sys_)
            self._rss.append(rss)
            self._threads_peak = max(self._threads_peak, threads)
            self._procs_peak = max(self._procs_peak, nprocs)
            if not root_seen and self._died is None:
                self._died = now - self._t0
            self._row_rss = max(self._row_rss, rss)
            self._latest = ((user, sys_, vol, invol), threads, nprocs)
            if baseline:
                self._row_at, self._row_base, self._row_rss = now, (user, sys_, vol, invol), rss
                if self._others is not None:
                    self._others.step(self._tree_pids())
            elif now - self._row_at >= SERIES_EVERY_S - self.interval / 2:
                self._add_row(now, (user, sys_, vol, invol), threads, nprocs)
        if self.rss_limit is not None and rss > self.rss_limit and self._limit_hit is None:
            self._limit_hit = now - self._t0
            if self.on_rss_limit is not None:
                self.on_rss_limit(rss)

    def _add_row(self, now: float, totals: tuple[float, float, int, int], threads: int, nprocs: int) -> None:
        b = self._row_base
        row = [round(now - self._t0, 3), round(now - self._row_at, 3),
               round(max(0.0, totals[0] - b[0]), 4), round(max(0.0, totals[1] - b[1]), 4),
               self._row_rss, threads, nprocs, max(0, totals[2] - b[2]), max(0, totals[3] - b[3])]
        if self._others is not None:
            row.append(round(self._others.step(self._tree_pids()), 3))
        self._rows.append(row)
        self._row_at, self._row_base, self._row_rss = now, totals, 0

    def _loop(self) -> None:
        next_t = time.monotonic() + self.interval
        while not self._stop.wait(max(0.0, next_t - time.monotonic())):
            self._sample()
            next_t += self.interval
            if next_t < time.monotonic():  # fell behind (busy machine): don't burst
                next_t = time.monotonic() + self.interval

    def start(self) -> "Sampler":
        if self._thread is not None:
            raise RuntimeError("Sampler.start() called twice; create a new Sampler per window")
        self._t0 = time.monotonic()
        self._started_unix = time.time()
        self._sample(baseline=True)
        self._thread = threading.Thread(target=self._loop, name=f"sampler-{self.pid}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> Usage:
        if self._thread is None:
            raise RuntimeError("Sampler.stop() before start()")
        self._stop.set()
        self._thread.join()
        self._tree_at = float("-inf")  # the final reading sees every process of the tree
        self._sample()
        if self._times[-1] - self._row_at > 0.05:  # the last, partial second
            self._add_row(self._times[-1], *self._latest)
        duration = self._times[-1] - self._t0
        user = sum(self._last[k].user - self._base[k].user for k in self._last)
        sys_ = sum(self._last[k].sys - self._base[k].sys for k in self._last)
        vol = sum(self._last[k].vol - self._base[k].vol for k in self._last)
        invol = sum(self._last[k].invol - self._base[k].invol for k in self._last)
        # the first sample is the baseline; RSS statistics use every sample
        rss_samples = self._rss or [0]
        self.usage = Usage(
            duration_s=duration,
            samples=len(self._times),
            cpu_user_s=max(0.0, user),
            cpu_sys_s=max(0.0, sys_),
            cpu_percent_mean=100.0 * (user + sys_) / duration if duration > 0 else 0.0,
            cpu_percent_peak=self._peak_percent(),
            rss_peak_bytes=max(rss_samples),
            rss_mean_bytes=int(sum(rss_samples) / len(rss_samples)),
            threads_peak=self._threads_peak,
            ctx_voluntary=max(0, vol),
            ctx_involuntary=max(0, invol),
            processes_peak=self._procs_peak,
            series={"started_unix": round(self._started_unix, 3), "rows": self._rows,
                    "columns": list(SERIES_COLUMNS) + ([CPUS_COLUMN] if self.cpus else []),
                    **({"cpus": self.cpus} if self.cpus else {})},
            died_at_s=round(self._died, 3) if self._died is not None else None,
            rss_limit_hit_s=round(self._limit_hit, 3) if self._limit_hit is not None else None,
        )
        return self.usage

    def _peak_percent(self) -> float:
        t, c = self._times, self._cpu
        if len(t) < 2:
            return 0.0
        if t[-1] - t[0] <= PEAK_WINDOW_S:
            return 100.0 * (c[-1] - c[0]) / (t[-1] - t[0]) if t[-1] > t[0] else 0.0
        peak, j = 0.0, 0
        for i in range(1, len(t)):
            while j + 1 < i and t[i] - t[j + 1] >= PEAK_WINDOW_S:
                j += 1
            if t[i] - t[j] >= PEAK_WINDOW_S:
                peak = max(peak, (c[i] - c[j]) / (t[i] - t[j]))
        return 100.0 * peak

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
