"""CPU, memory, threads and context switches of a whole process tree, sampled with psutil.

CPU time and context switches are deltas between start() and stop(), summed over
every process seen in the tree; a process that exits in between keeps its last
sampled values (what it used after its last sample, at most one interval, is lost).
"""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import psutil

PEAK_WINDOW_S = 0.5  # CPU% peak over windows this long: single ticks are too coarse
# Listing a tree walks /proc (every process's children); the counters of known processes are
# cheap to read. So the tree is re-listed this often, the counters read every interval.
TREE_REFRESH_S = 1.0


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Counters:
    user: float
    sys: float
    vol: int
    invol: int


class Sampler:
    """Sample process `pid` and all its descendants every `interval` s in a thread."""

    def __init__(self, pid: int, interval: float = 0.2, tree_every: float = TREE_REFRESH_S) -> None:
        self.pid = pid
        self.interval = interval
        self.tree_every = tree_every
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

    def _key(self, p: psutil.Process) -> tuple[int, float] | None:
        try:
            return (p.pid, p.create_time())
        except psutil.Error:
            return None

    def _sample(self, baseline: bool = False) -> None:
        rss = threads = nprocs = 0
        for p in self._tree():
            key = self._key(p)
            if key is None:
                continue
            p = self._procs.setdefault(key, p)  # keep one object per process (cache)
            try:
                with p.oneshot():
                    ct = p.cpu_times()
                    mem = p.memory_info().rss
                    nt = p.num_threads()
                    cs = p.num_ctx_switches()
            except psutil.Error:
                continue  # exited between listing and reading
            c = _Counters(ct.user, ct.system, cs.voluntary, cs.involuntary)
            # processes born after start() count from zero
            self._base.setdefault(key, c if baseline else _Counters(0.0, 0.0, 0, 0))
            self._last[key] = c
            rss += mem
            threads += nt
            nprocs += 1
        with self._lock:
            self._times.append(time.monotonic())
            self._cpu.append(sum(self._last[k].user - self._base[k].user
                                 + self._last[k].sys - self._base[k].sys for k in self._last))
            self._rss.append(rss)
            self._threads_peak = max(self._threads_peak, threads)
            self._procs_peak = max(self._procs_peak, nprocs)

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
