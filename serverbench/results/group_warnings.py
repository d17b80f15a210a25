"""The warnings of one aggregated group (part of the one aggregation): what a reader must see beside
its figures: noise, outliers, a saturated client, stalls, errors, unanswered requests, failed
repetitions, steal on the server's CPUs, and the cores, over-time, warm-up and CPU-outlier findings.
aggregate.Group.warnings calls `judge`; every output reads the list and none judges again."""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..catalog.kinds import FAILURES_MEASURED
from ..rules import fairness
from ..rules.shards import SKEW_WARN_MS
from ..overtime import figures as overtime
from ..rules import cores, warmup
from ..rules.machine_speed import steal_warnings as steal
from .stats import MIN_EFFECT, NOISE_CV, noisy, outliers


@dataclass(frozen=True)
class Caveat:
    """A finding a reader must see beside the figures ("warnings are data")."""

    kind: str  # noisy | outlier | unfair | steal | client-bound | did-not-hold | lower-bound | errors | stalls | unanswered | failed | missed-sends | histogram | crashed | shared-cpu | cpu-overlap
    severity: Literal["info", "warning", "error"]
    server: str
    text: str


# A noisy row whose server CPU per request varied by at least this share of its rate's CV: the same
# requests cost a different amount of CPU from one repetition to the next. On the 2-core VM that was
# every noisy row (median CV 11.7 % of the rate, 11.1 % of CPU per request, the server at 90-98 % of its
# CPU) while fixed cache-bound work alone on the server's CPU varied 6.1 % over 4 s (bench/machine_noise.py).
SAME_CAUSE = 0.7


def _noise_cause(rate_cv: float, cpu: Any) -> str:
    """What the CPU per request says of a noisy rate: the cost of each request moved with it (the
    machine's speed, batching), or it stayed put (the rate moved for another reason: the client, CPU
    time lost)."""
    if cpu is None or cpu.n < 2:
        return ""
    if cpu.cv >= SAME_CAUSE * rate_cv:
        return (f"; server CPU per request varied as much (CV {cpu.cv:.1%}): the same requests cost a different "
                "amount of CPU from one repetition to the next (the machine's own speed varies, "
                "bench/machine_noise.py, and so does how many requests one wake-up serves), not CPU time the "
                "server went without")
    return (f"; server CPU per request was steadier (CV {cpu.cv:.1%}): the rate moved for another reason "
            "than the cost of a request (the client, or CPU time the server did not get)")


def _load_warnings(g: Any, add: Callable[[str, Any, str], None]) -> None:
    """Errors, a rate not held, requests unanswered or not sent, a window that began busy."""
    measured = g.kind in FAILURES_MEASURED  # the outage's errors and fallen rate: its verdict says them
    if (g.errors or g.timeouts) and not measured:
        req = g.total(lambda m: m.counts.requests)
        share = f" in {req:,} requests ({g.errors / req:.2%})" if req else ""
        add("errors", "error", f"{g.errors:,} errors ({g.timeouts:,} timeouts){share}"
            + ("; degraded: ranked after the clean rows" if g.degraded and g.kind != "overload" else ""))
    if g.held is False and not measured:
        add("did-not-hold", "error", f"did not hold {g.target_rate:,.0f} req/s (achieved "
                                     f"{g.rps.median if g.rps else 0:,.0f} successful)")
    unanswered = g.total(lambda m: m.offered.unanswered)
    if unanswered:
        oldest = max(c.metrics.offered.unanswered_oldest_us for c in g.ok) / 1e6
        add("unanswered", "error", f"{unanswered:,} request{'s' if unanswered != 1 else ''} still unanswered "
                                   "when the run ended, "
                                   f"the oldest after {oldest:.1f} s (stalled connections)")
    missed = g.total(lambda m: m.offered.missed_sends)
    if missed:
        add("missed-sends", "warning", f"{missed:,} request{'s' if missed != 1 else ''} not sent on schedule "
                                       "(connection pool exhausted)")
    busy = sum(1 for c in g.ok if c.metrics.timing.busy_at_window)
    if busy:
        add("busy-at-window", "warning", f"{busy} of {len(g.ok)} windows began while the server (or its database) "
                                         "was still busy after 30 s of waiting: a previous load's queue was served "
                                         "in them")


def judge(g: Any) -> list[Caveat]:
    """The warnings of `g`, an aggregate.Group (typed loosely: aggregate imports this module)."""
    w: list[Caveat] = []
    s = g.server

    def add(kind: str, severity: Literal["info", "warning", "error"], text: str) -> None:
        w.append(Caveat(kind, severity, s, f"{s}: {text}"))

    t = g.throughput
    if t is not None and noisy(t):
        add("noisy", "warning", f"noisy — requests/s varies by CV {t.cv:.1%} across {t.n} repetitions "
                                f"(> {NOISE_CV:.0%}){_noise_cause(t.cv, g.cpu_per_request_stats)}; "
                                "treat its place as uncertain")
    vals = g.values((lambda m: m.capacity.capacity_rps) if g.is_capacity else (lambda m: m.counts.rps))
    med = statistics.median(vals) if vals else 0.0
    # a modified z-score flags 765 among 774, 775 when the others agree exactly: only report
    # outliers that also differ by more than the 5 % a reader would notice
    idx = [i for i in outliers(vals) if med and abs(vals[i] - med) / med > MIN_EFFECT]
    if idx:
        shown = ", ".join(f"repetition {i + 1} = {vals[i]:,.0f}" for i in idx)
        add("outlier", "warning", f"statistical outlier among the repetitions ({shown} req/s); another "
                                  "process may have interfered, consider re-running")
    if g.client_saturated:
        cpu = g.median(lambda m: m.client.client_cpu_percent)
        db = g.median(lambda m: m.database.db_cpu_percent if m.database.db_shares_client_cpus else None)
        # the database on the load generator's CPUs: their two CPUs together are what saturated them
        used = (f" ({cpu:.0f} % CPU, and PostgreSQL {db:.0f} % on the same CPUs)" if cpu is not None and db
                else f" ({cpu:.0f} % CPU)" if cpu is not None else "")
        add("client-bound", "warning", "client-bound — the load generator's CPUs were saturated" + used
            + "; the server may be faster than shown")
    skews = [c.metrics.client.shard_start_skew_ms for c in g.ok if c.metrics.client.shard_start_skew_ms is not None]
    if skews and max(skews) > SKEW_WARN_MS:
        add("shard-skew", "warning", f"load shards started up to {max(skews):.1f} ms apart (> {SKEW_WARN_MS:g} ms): "
                                     "their windows did not line up, so the merged seconds blur at the edges")
    if g.is_capacity and any(c.metrics.capacity.capacity_ceiling for c in g.ok):
        add("lower-bound", "info", "capacity is a lower bound — every step of the schedule held; "
                                   "raise the workload's max_steps to find the limit")
    elif (g.is_capacity and not g.client_saturated
          and any(c.metrics.capacity.capacity_client_bound for c in g.ok)):
        add("client-bound", "warning", "capacity is a lower bound — the load generator was "
                                       "saturated at the step that failed")
    if g.unfair:
        f = fairness.figures(g.ok)
        add("unfair", "error", f"unfair — {fairness.served_text(f.slots or 0, f.slots_served or 0)}; more than "
                               f"{fairness.UNFAIR_SHARE:.0%} of them waited longer than the request timeout (the longest "
                               f"{(f.longest_wait_ms or 0) / 1000:.1f} s): ranked after the fair rows")
    bound, conns = g.bound, g.connections
    if bound and conns and bound < conns:
        add("stalls", "error", f"stalls expected: model holds at most {bound} connections ({conns:.0f} offered)")
    _load_warnings(g, add)
    for kind, severity, text in [*cores.warnings(g.ok, overtime.warnings(g.ok)), *warmup.warnings(g.ok), *steal(g.ok)]:
        add(kind, severity, text)  # type: ignore[arg-type]
    for f in g.cpu_findings:  # far above its runtime family's CPU per request (outliers.py)
        add(f.kind, f.severity, f.text())
    if g.bad and (g.ok or any(c.status != "skipped" for c in g.bad)):
        # (a row with every repetition skipped is named with the reason under its point instead)
        first = g.bad[0]
        add("failed", "error", f"{len(g.bad)} of {len(g.ok) + len(g.bad)} repetitions "
                               f"{first.status} — {first.error or 'no error message'}")
    if g.ok and g.histogram is None and any(c.loadgen and c.loadgen.histograms.latency for c in g.ok):
        add("histogram", "warning", "latency histograms missing or unreadable; "
                                    "percentiles are medians of the repetitions")
    return w
