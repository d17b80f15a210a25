"""A group's behaviour over time across its repetitions: the overload or outage verdict they all gave, or
split with how many gave each (overload.combine, outage.combine, rules/agreement.py), the
per-cell over-time figures as medians, crashes and a shared server CPU as warnings.
aggregate.Group calls it; every output reads the result through GroupFigures, none recomputes.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from . import outage, overload
from ..model import CellMetrics, CellRecord, FigureGroup
from ..rules.agreement import Agreement


class GroupOverTime(FigureGroup):
    """A group's behaviour over time (GroupFigures.over_time): the overload verdict across repetitions,
    medians of the cells' over-time figures, the earliest death, the memory limits' methods."""

    verdict: str | None = None  # the one all repetitions gave, "split" where they differ, None: none judged
    verdict_counts: str | None = None  # how many repetitions gave each: "sheds 2 of 3, slows 1"
    verdict_reason: str | None = None
    peak_ok_rps: float | None = None
    p90_at_peak_us: float | None = None
    p90_end_us: float | None = None
    failed_share_after_peak: float | None = None
    worst_second_p99_us: float | None = None
    median_second_p99_us: float | None = None
    second_p99_spread_us: float | None = None
    server_died_at_s: float | None = None
    memory_limit_method: str | None = None
    others_cpu_percent: float | None = None
    # the db-outage workload (outage.py): the during-the-outage verdict the same way, medians, and the
    # acknowledged writes of every repetition together
    during: str | None = None
    during_counts: str | None = None
    rate_before_ok_rps: float | None = None
    recovered_after_s: float | None = None
    failed_after_outage: float | None = None
    worst_p99_during_us: float | None = None
    outage_start_s: float | None = None
    outage_end_s: float | None = None
    acknowledged_writes: int | None = None
    lost_writes: int | None = None


# GroupOverTime's figures that are the median over repetitions of the CellMetrics figure of the same name
MEDIANS: dict[str, Callable[[CellMetrics], Any]] = {
    "peak_ok_rps": lambda m: m.overload.peak_ok_rps, "p90_at_peak_us": lambda m: m.overload.p90_at_peak_us,
    "p90_end_us": lambda m: m.overload.p90_end_us,
    "failed_share_after_peak": lambda m: m.overload.failed_share_after_peak,
    "worst_second_p99_us": lambda m: m.soak.worst_second_p99_us,
    "median_second_p99_us": lambda m: m.soak.median_second_p99_us,
    "second_p99_spread_us": lambda m: m.soak.second_p99_spread_us,
    "others_cpu_percent": lambda m: m.over_time.others_cpu_percent,
    "rate_before_ok_rps": lambda m: m.outage.rate_before_ok_rps, "recovered_after_s": lambda m: m.outage.recovered_after_s,
    "failed_after_outage": lambda m: m.outage.failed_after_outage,
    "worst_p99_during_us": lambda m: m.outage.worst_p99_during_us,
    "outage_start_s": lambda m: m.outage.outage_start_s, "outage_end_s": lambda m: m.outage.outage_end_s}
# Other processes using more than this share of the server's CPUs (mean over the run) make its
# figures those of a server that did not have its CPU to itself.
SHARED_CPU_PERCENT = 20.0


def _median(cells: list[CellRecord], pick: Callable[[CellMetrics], Any]) -> float | None:
    vs = [float(v) for c in cells if isinstance(v := pick(c.metrics), (int, float))]
    return statistics.median(vs) if vs else None


def _verdict(m: CellMetrics) -> tuple[str | None, str | None]:
    """A cell's over-time verdict and its reason: the overload workload's, or the outage's."""
    if m.overload.overload_verdict:
        return m.overload.overload_verdict, m.overload.overload_reason
    return m.outage.outage_verdict, m.outage.outage_reason


def _reason(cells: list[CellRecord], agreement: Agreement) -> str | None:
    """The figures behind the group's verdict: a repetition's that gave it, or, split, each repetition's."""
    judged = [c for c in cells if _verdict(c.metrics)[0]]
    if not agreement.split:
        return next((_verdict(c.metrics)[1] for c in judged), None)
    return "; ".join(f"repetition {c.repetition}: {_verdict(c.metrics)[0]} — {_verdict(c.metrics)[1] or 'no reason stored'}"
                     for c in sorted(judged, key=lambda c: c.repetition))


def _sum(cells: list[CellRecord], pick: Callable[[CellMetrics], int | None]) -> int | None:
    vs = [v for c in cells if (v := pick(c.metrics)) is not None]
    return sum(vs) if vs else None


def figures(cells: list[CellRecord]) -> GroupOverTime:
    """The over-time figures of a group's measured cells."""
    outages = [c.metrics.outage.outage_verdict for c in cells]
    agreement = (outage.combine(outages) if any(outages) else
                 overload.combine([c.metrics.overload.overload_verdict for c in cells]))
    during = outage.combine_during([c.metrics.outage.outage_during for c in cells])
    verdict, reason = agreement.verdict, _reason(cells, agreement)
    died = [c.metrics.over_time.server_died_at_s for c in cells if c.metrics.over_time.server_died_at_s is not None]
    methods = sorted({c.metrics.memory.memory_limit_method for c in cells if c.metrics.memory.memory_limit_method})
    return GroupOverTime(verdict=verdict, verdict_counts=agreement.text(), verdict_reason=reason,
                         **{k: _median(cells, pick) for k, pick in MEDIANS.items()},
                         server_died_at_s=min(died) if died else None, memory_limit_method=", ".join(methods) or None,
                         during=during.verdict, during_counts=during.text(),
                         acknowledged_writes=_sum(cells, lambda m: m.outage.acknowledged_writes),
                         lost_writes=_sum(cells, lambda m: m.outage.lost_writes))


def verdict_text(t: GroupOverTime) -> str | None:
    """The verdict as a reader sees it: "split (sheds 2 of 3, slows 1)" where the repetitions differ."""
    return f"{t.verdict} ({t.verdict_counts})" if t.verdict == overload.SPLIT else t.verdict


def during_text(t: GroupOverTime) -> str | None:
    """The during-the-outage verdict the same way."""
    return f"{t.during} ({t.during_counts})" if t.during == overload.SPLIT else t.during


def warnings(cells: list[CellRecord]) -> list[tuple[str, str, str]]:
    """(kind, severity, text): each repetition whose server died during the measured run (a result,
    not a failure), and a server CPU that other processes shared."""
    out = [("crashed", "error", text) for text in crash_warnings(cells)]
    others = _median(cells, MEDIANS["others_cpu_percent"])
    if others is not None and others > SHARED_CPU_PERCENT:
        out.append(("shared-cpu", "warning", f"other processes used {others:.0f} % of its CPUs during the run "
                                             "(mean; 100 = one CPU): it did not have them to itself, so its "
                                             "figures understate what it does alone"))
    return out


def crash_warnings(cells: list[CellRecord]) -> list[str]:
    """One line per repetition whose server died during the measured run (a result, not a failure)."""
    out = []
    for c in cells:
        m = c.metrics
        if m.over_time.server_died_at_s is None and m.memory.memory_killed_at_s is None:
            continue
        if m.memory.memory_killed_at_s is not None:
            what = (f"killed at its {(m.memory.memory_limit_bytes or 0) / 2**20:,.0f} MiB memory limit "
                    f"({m.memory.memory_limit_method}) at t={m.memory.memory_killed_at_s:.1f} s")
        else:
            code = f" (exit code {m.over_time.server_exit_code})" if m.over_time.server_exit_code is not None else ""
            what = f"its process died at t={m.over_time.server_died_at_s:.1f} s{code}"
        out.append(f"crashed in repetition {c.repetition} — {what}")
    return out


__all__ = ["GroupOverTime", "figures", "verdict_text", "during_text", "warnings", "crash_warnings", "MEDIANS", "SHARED_CPU_PERCENT"]
