"""Connection fairness: whether every client a closed load holds was served, not only the fast few.

loadgen counts the requests each connection *slot* completed in the measured window (a slot keeps its
count across reconnects; sessions: a user) and exports, per process, `fairness` (DESIGN.md, loadgen
JSON): slots, slots served, Σ and Σ² of the counts (Jain's index, and exact merging of shards), the
longest time any slot went without a completion, how many slots waited longer than the request
timeout, and per whole second how many slots completed at least one request.

Why it is a rule of its own: a bounded pool of 64 threads facing 400 keep-alive connections serves 64
of them thousands of times while 336 wait in the accept queue until they time out. Their timeouts are
0.06 % of all requests (a waiting connection asks once, a lucky one thousands of times), far below the
1 % "degraded" rule, so error shares alone ranked such a row among the fastest. A row that left more
than `UNFAIR_SHARE` of its slots waiting beyond the timeout is *unfair*: it ranks after the fair rows
and never sits in a tie or the client-bound block (results/ranking.py).

Pure: the `Fairness` record a cell stores is model.py's; the rules over it are here.
"""
from __future__ import annotations

import statistics
from typing import Any, Iterable, Protocol

from pydantic import BaseModel, ConfigDict

from ..model import UNFAIR_SHARE, Fairness





def jain(total: float, total_sq: float, n: int) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when every slot completed as many requests, 1/n when
    one slot completed them all; None when nothing completed."""
    if n <= 0 or total_sq <= 0:
        return None
    return total * total / (n * total_sq)


def merge(parts: Iterable[dict[str, Any] | Fairness]) -> dict[str, Any] | None:
    """Shards' fairness as one process's: counts and sums add (each shard held its own slots), the
    longest wait is the longest of any, the per-second counts add over the seconds all shards cover."""
    ps = [p if isinstance(p, Fairness) else Fairness.model_validate(p) for p in parts if p]
    if not ps:
        return None
    n, total, sq = sum(p.slots for p in ps), sum(p.completed_sum for p in ps), sum(p.completed_sum_sq for p in ps)
    seconds = min(len(p.served_per_s) for p in ps)
    return {"slots": n, "served": sum(p.served for p in ps), "completed_sum": total, "completed_sum_sq": sq,
            "jain": jain(total, sq, n), "longest_wait_us": max(p.longest_wait_us for p in ps),
            "waited_over_timeout": sum(p.waited_over_timeout for p in ps),
            "served_per_s": [sum(p.served_per_s[i] for p in ps) for i in range(seconds)]}


class _Cell(Protocol):
    """What the group rule reads of a CellRecord (model.py)."""

    metrics: Any
    loadgen: Any


def of(cells: Iterable[_Cell]) -> list[Fairness]:
    """The fairness records of closed-load cells (open loads, and cells stored before, have none).
    Sessions are left out: a user who has not arrived yet in a ramp counts as waiting in loadgen's
    figures, so every row of a ramped workload would wait "beyond the timeout" by design."""
    return [f for c in cells if (f := getattr(c.metrics, "fairness", None)) is not None and _closed(c)]


def _closed(c: _Cell) -> bool:
    report = getattr(c, "loadgen", None)
    return report is None or (report.config or {}).get("mode", "closed") == "closed"


def unfair(cells: Iterable[_Cell]) -> bool:
    """A group is unfair when the median repetition left more than UNFAIR_SHARE of its slots waiting."""
    return unfair_of(of(cells))


class GroupFairness(BaseModel):
    """A group's fairness (GroupFigures.fairness): medians over the repetitions of closed loads'
    per-connection figures; all None (and fair) where the group was not judged."""

    model_config = ConfigDict(extra="forbid")
    slots: int | None = None  # connections (sessions: users) the load held
    slots_served: int | None = None  # … that completed at least one request
    jain: float | None = None  # Jain's index over the slots' completed requests (1 = even)
    longest_wait_ms: float | None = None  # the longest any slot went without a completion
    min_served_share: float | None = None  # the lowest share of slots served within one second
    unfair: bool = False  # > 5 % of the slots waited beyond the timeout: ranked after the fair rows


def figures(cells: Iterable[_Cell]) -> GroupFairness:
    """Medians over the repetitions (slots served, Jain's index, the longest wait, the lowest
    per-second share of slots served) and the unfair verdict."""
    fs = of(cells)
    if not fs:
        return GroupFairness()

    def med(values: list[float]) -> float | None:
        return statistics.median(values) if values else None
    shares = [s for f in fs if (s := f.min_served_share) is not None]
    jains = [f.jain for f in fs if f.jain is not None]
    return GroupFairness(slots=int(med([f.slots for f in fs]) or 0), slots_served=int(med([f.served for f in fs]) or 0),
                         jain=med(jains), longest_wait_ms=(med([f.longest_wait_us for f in fs]) or 0.0) / 1000.0,
                         min_served_share=med(shares), unfair=unfair_of(fs))


def unfair_of(fs: list[Fairness]) -> bool:
    """`unfair` over records already taken from the cells."""
    return bool(fs) and statistics.median(f.waiting_share for f in fs) > UNFAIR_SHARE


def served_text(slots: int, served: int) -> str:
    """"served 64 of 400 connections": how the report names what an unfair row did."""
    return f"served {served:,} of {slots:,} connections"


__all__ = ["UNFAIR_SHARE", "Fairness", "GroupFairness", "jain", "merge", "of", "unfair", "figures", "served_text",
           "unfair_of"]
