"""How steady a server stays under a fixed rate for minutes: pauses made visible.

A garbage-collector pause, a compaction, a periodic task shows as a second whose p99 stands out
from its neighbours. From one cell's per-second timeline (`timeline.LoadSecond`):
- worst 1-s p99: the highest p99 of any second (the longest stall's imprint);
- median 1-s p99: a typical second;
- spread: the 90th minus the 10th percentile of the per-second p99s — how much a row's seconds
  differ from one another, beyond its single worst one (the tie-break of the ranking).
Each second's p99 covers the responses and timeouts that ended in it.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from ..model import SoakFigures
from .timeline import LoadSecond

MIN_SECONDS = 3  # fewer seconds with requests: no figures


@dataclass(frozen=True)
class Steadiness:
    worst_second_p99_us: float
    worst_second_at_s: int
    median_second_p99_us: float
    second_p99_spread_us: float
    seconds: int  # seconds with requests that the figures cover

    def cell_figures(self) -> SoakFigures:
        """What the cell stores of them (the count of seconds covered is not stored)."""
        d = asdict(self)
        d.pop("seconds")
        return SoakFigures(**d)


def decile_spread(values: list[float]) -> float:
    """p90 − p10 of `values` (statistics' inclusive quantiles; 0 for fewer than 2)."""
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=10, method="inclusive")
    return q[-1] - q[0]


def judge(seconds: list[LoadSecond]) -> Steadiness | None:
    """The steadiness figures of one cell (None: fewer than MIN_SECONDS seconds with requests)."""
    timed = [s for s in seconds if s.p99_us is not None]
    if len(timed) < MIN_SECONDS:
        return None
    p99s = [float(s.p99_us) for s in timed]  # type: ignore[arg-type]
    worst = max(timed, key=lambda s: (s.p99_us, -s.t))
    return Steadiness(float(worst.p99_us), worst.t, statistics.median(p99s),  # type: ignore[arg-type]
                      round(decile_spread(p99s), 1), len(timed))


__all__ = ["Steadiness", "judge", "decile_spread"]
