"""Warm-up to steady state: the rule, the loop that applies it, and its figures across repetitions.

A JIT (the JVM, V8, Mono) on one server core competes with the requests for that core, so a row
reaches its speed only after seconds of load; a fixed warm-up is too short for the JVM and wasted
on C. Before a server start's first point the runner loads it with that point's own load in
one-second rounds (`warm_to_steady`) until the per-second successful rate is steady (for an open load
at a fixed rate, whose rate is flat from the start, its requests per server CPU-second: `per_cpu_second`):

    the mean of the last WINDOW (3) seconds is not more than TOLERANCE (3 %) above the mean of the
    WINDOW seconds before them (the rate stopped rising), and it is above zero

(so at least 6 s). Why means of 3 s rather than each second within ±3 %: on the 2-core VM a warm
java-netty's one-second rates swing between 79k and 111k req/s (bench/steady_state.py), so a
per-second band flagged healthy rows "not steady" at random, while its JIT ramp (8k → 90k in 5 s)
is many times that noise; comparing two 3-second means tells "still rising" from noise.

or until the size's `steady_max` (quick 20 s, full 60 s by default) has passed; then the cell is
`not steady` (flagged in every output, ranked after the steady rows). A point whose connections are
costly to open (a keep-alive TLS point: every one-second round would open its 400 connections anew,
and a slow TLS stack never finished those handshakes within a round, measured on java-netty) warms
up instead inside its measured run's own loadgen process (`--warmup`, connections kept) for the
steady maximum, judged afterwards by the same rule over that warm-up's seconds (`judge`). Later points of the same start
are warmed briefly (the size's `warmup`). The rates, the time to steady and the first second's
share of the steady rate are stored with the cell (`CellMetrics.warmup`: `Warmup.cell_figures`).

This module imports only the results model and the statistics (the aggregation reads `figures`).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..model import FigureGroup, WarmupFigures

WINDOW = 3
TOLERANCE = 0.03
ROUND_S = 1.0  # one loadgen run per second of warm-up: its successful rate is one sample


def is_steady(rates: Sequence[float], window: int = WINDOW, tolerance: float = TOLERANCE) -> bool:
    """Whether the per-second rates stopped rising (module docstring's rule)."""
    if len(rates) < 2 * window:
        return False
    last = statistics.fmean(float(r) for r in rates[-window:])
    before = statistics.fmean(float(r) for r in rates[-2 * window:-window])
    if last <= 0:
        # nothing answered yet: a cold JIT under 400 connections answers its first requests only after
        # a 1 s round has ended (kotlin-ktor: rounds of 0, 0, 0, then 1-2k req/s measured cold); keep
        # warming. A server that never answers runs to steady_max and is flagged not steady.
        return False
    return last <= (1 + tolerance) * before


@dataclass
class Warmup:
    """What one warm-up did: its per-second successful rates and whether and when it became steady."""

    rates: list[float] = field(default_factory=list)
    steady: bool = False
    brief: bool = False  # a later point of a start that was already warmed to steady state
    max_s: float = 0.0
    wall_s: float = 0.0
    # judged afterwards over one run's seconds (`judge`): how many of `rates` it took to hold
    steady_at: int | None = None
    # CPU_BASIS: `rates` are requests per server CPU-second (an open load at a fixed rate, `per_cpu_second`)
    basis: str | None = None

    @property
    def steady_after_s(self) -> float | None:
        """Seconds of load from the first request until the rule held (None when it never did)."""
        if not self.steady or self.brief:
            return None
        return float(self.steady_at if self.steady_at is not None else len(self.rates))

    @property
    def steady_rate(self) -> float | None:
        if not self.rates:
            return None
        return statistics.fmean(self.rates[-WINDOW:])

    @property
    def first_share(self) -> float | None:
        """The first second's rate as a share of the steady rate (how cold a fresh start is)."""
        steady = self.steady_rate
        if not self.steady or self.brief or not steady:
            return None
        return self.rates[0] / steady

    def cell_figures(self) -> WarmupFigures:
        """What the cell stores of this warm-up."""
        return WarmupFigures(warmup_rates=[round(r, 1) for r in self.rates],
                             warmup_steady=None if self.brief else self.steady, warmup_brief=self.brief,
                             warmup_steady_s=self.steady_after_s,
                             warmup_first_share=None if self.first_share is None else round(self.first_share, 3),
                             warmup_max_s=self.max_s or None, warmup_basis=self.basis)


def warm_to_steady(one_second: Callable[[], float], max_s: float, *,
                   clock: Callable[[], float] = time.monotonic, basis: str | None = None) -> Warmup:
    """Call `one_second()` (a one-second load returning its successful rate, or with `basis` CPU_BASIS its
    requests per server CPU-second) until the figures are steady or `max_s` seconds of warm-up have run.
    Errors from `one_second` propagate."""
    w = Warmup(max_s=max_s, basis=basis)
    t0 = clock()
    while len(w.rates) * ROUND_S < max_s:
        w.rates.append(float(one_second()))
        if is_steady(w.rates):
            w.steady = True
            break
    w.wall_s = clock() - t0
    return w


CPU_BASIS = "cpu"
CPU_TICK_S = 0.01


def per_cpu_second(one_round: Callable[[], int], cpu_s: Callable[[], float]) -> Callable[[], float]:
    """A round's figure for an open load at a fixed rate: its successful requests per second of the server's
    CPU. At a fixed offered rate the rate is flat from the first second while a JIT is still making each
    request cheaper (issue 49): what a warm server reaches is its cost, so the rule reads that instead."""
    def one() -> float:
        before = cpu_s()
        ok = one_round()
        # the kernel counts a process's CPU in clock ticks (10 ms): a round under a tick reads as one
        return ok / max(cpu_s() - before, CPU_TICK_S)
    return one


def judge(rates: Sequence[float], max_s: float) -> Warmup:
    """A warm-up that ran as one load of `max_s` seconds (its connections kept throughout, loadgen's
    --warmup), judged afterwards by the same rule over its per-second rates: steady at the first second
    the rule held. It cannot stop early, so it always lasts `max_s`; the rates after that second are
    kept (the cell shows the whole warm-up)."""
    w = Warmup(rates=[float(r) for r in rates], max_s=max_s, wall_s=max_s)
    for k in range(2 * WINDOW, len(w.rates) + 1):
        if is_steady(w.rates[:k]):
            w.steady, w.steady_at = True, k
            break
    return w


def brief(rates: list[float], seconds: float) -> Warmup:
    """A later point's short warm-up (the size's `warmup`): its per-second rates, not judged."""
    return Warmup(rates=rates, steady=True, brief=True, max_s=seconds)


# -- across repetitions (the aggregation reads these, like overtime.figures) -----------------
def _cells_warmed(cells: list[Any]) -> list[Any]:
    return [c for c in cells if c.metrics.warmup.warmup_steady is not None]


def not_steady(cells: list[Any]) -> int:
    """How many of the cells' warm-ups reached their maximum without becoming steady."""
    return sum(1 for c in _cells_warmed(cells) if c.metrics.warmup.warmup_steady is False)


class GroupWarmup(FigureGroup):
    """A group's warm-up (GroupFigures.warmup): medians over the repetitions warmed to steady state."""

    steady_s: float | None = None
    first_second_share: float | None = None
    not_steady: int = 0
    warmup_max_s: float | None = None


def figures(cells: list[Any]) -> GroupWarmup:
    """Medians over the repetitions that were warmed to steady state, and how many were not steady."""
    warmed = _cells_warmed(cells)
    steady_s = [c.metrics.warmup.warmup_steady_s for c in warmed if c.metrics.warmup.warmup_steady_s is not None]
    shares = [c.metrics.warmup.warmup_first_share for c in warmed if c.metrics.warmup.warmup_first_share is not None]
    return GroupWarmup(steady_s=statistics.median(steady_s) if steady_s else None,
                       first_second_share=statistics.median(shares) if shares else None,
                       not_steady=not_steady(cells),
                       warmup_max_s=max((c.metrics.warmup.warmup_max_s or 0 for c in warmed), default=None) or None)


def warnings(cells: list[Any]) -> list[tuple[str, str, str]]:
    """(kind, severity, text) for the group: repetitions measured before their rate was steady."""
    n = not_steady(cells)
    if not n:
        return []
    top = max(c.metrics.warmup.warmup_max_s or 0 for c in _cells_warmed(cells))
    return [("not-steady", "error",
             f"not steady — {n} of {len(cells)} repetition{'s' if len(cells) != 1 else ''} still changing rate "
             f"after the {top:g} s warm-up maximum; measured anyway and ranked after the steady rows")]


def curve(cell: Any) -> list[float]:
    """The warm-up rates of one cell (one value per second), for the warm-up chart."""
    return list(cell.metrics.warmup.warmup_rates or [])


__all__ = ["GroupWarmup", "WINDOW", "TOLERANCE", "is_steady", "Warmup", "warm_to_steady", "brief", "figures",
           "warnings", "not_steady", "curve"]
