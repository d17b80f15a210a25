"""What a row does when its database goes away (workload kind `db-outage`, issue 46): two verdicts from
one cell's per-second timeline (`timeline.LoadSecond`) and the times the harness took the database away
and had it back (run/outage_run.py), both on the loadgen's axis.

- rate before: the mean successful responses/s over the whole seconds before the outage (the first
  second left out: the load is still starting);
- recovered: the first second ending after the database was back whose successful responses reach
  `BACK` of the rate before, and from which on the mean stays there (a burst that falls again is not a
  recovery); `recovered_after_s` counts from the database being back to that second's start (0 when it
  is the second the database came back in);
- during: from the second the outage began to the recovery (or the end), the worst one-second p99,
  over every request that ended (timed-out ones at their age), and whether any failed.
The verdicts are the first rules of `RULES` and `DURING` that match; the thresholds are the constants.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..model import OutageFigures
from ..rules.agreement import Agreement, agree
from .timeline import LoadSecond

BACK = 0.95  # "back": this share of the rate before the outage
QUICK_S = 2.0  # recovered within this long of the database being back: "recovers"
FAST_US = 100_000  # every second's p99 within 100 ms while failing: "fails fast"

CRASHES, STAYS_BROKEN, SLOWLY, RECOVERS = "crashes", "stays broken", "recovers slowly", "recovers"
SEVERITY = [CRASHES, STAYS_BROKEN, SLOWLY, RECOVERS]  # most severe first: a split lists them so
RULES: list[tuple[str, str]] = [
    (CRASHES, "the server's process exited during the run"),
    (STAYS_BROKEN, f"successful responses/s never got back to {BACK:.0%} of the rate before the outage by the "
                   "end of the run"),
    (SLOWLY, f"they got back, but more than {QUICK_S:g} s after the database was back (the reason says when)"),
    (RECOVERS, f"back to {BACK:.0%} of the rate before within {QUICK_S:g} s of the database being back"),
]
RIDES, FAILS_FAST, HANGS = "rides through", "fails fast", "hangs"
DURING: list[tuple[str, str]] = [
    (RIDES, f"no request failed and every second's p99 stayed within {FAST_US / 1000:.0f} ms, requests ending "
            "in every second"),
    (FAILS_FAST, f"requests failed, and every second's p99 stayed within {FAST_US / 1000:.0f} ms, requests ending "
                 "in every second: errors were answered at once"),
    (HANGS, f"some second's p99 passed {FAST_US / 1000:.0f} ms, or no request ended in a whole second the "
            "database was away: requests waited for the database (or for the client's timeout)"),
]
RULES_INTRO = ("Verdicts per row and outage shape, from each repetition's per-second timeline: the first rule "
               "that matches. The rate before = mean successful responses/s over the seconds before the outage; "
               "the row's verdict is the one all its repetitions gave, else split with the counts.")


@dataclass(frozen=True)
class Outage:
    """One cell's outage figures; `cell_figures()` is what the cell stores of them."""

    shape: str
    start_s: float
    end_s: float
    verdict: str
    during: str
    reason: str
    rate_before_ok_rps: float
    recovered_after_s: float | None
    failed_after_outage: int
    worst_p99_during_us: float | None

    def cell_figures(self, acknowledged: int | None = None, lost: int | None = None) -> OutageFigures:
        return OutageFigures(outage_shape=self.shape, outage_start_s=self.start_s, outage_end_s=self.end_s,
                             outage_verdict=self.verdict, outage_during=self.during, outage_reason=self.reason,
                             rate_before_ok_rps=self.rate_before_ok_rps, recovered_after_s=self.recovered_after_s,
                             failed_after_outage=self.failed_after_outage,
                             worst_p99_during_us=self.worst_p99_during_us, acknowledged_writes=acknowledged,
                             lost_writes=lost)


def _recovery(after: list[LoadSecond], before: float) -> LoadSecond | None:
    """The first second from which the rate is back and stays back on average."""
    for i, s in enumerate(after):
        rest = after[i:]
        if s.ok >= BACK * before and sum(x.ok for x in rest) / len(rest) >= BACK * before:
            return s
    return None


def _during(seconds: list[LoadSecond], start_s: float, end_s: float, until_t: int) -> tuple[str, float | None, int]:
    """(the during verdict, the worst p99 from the outage's second to `until_t`, failed requests)."""
    window = [s for s in seconds if s.t > math.floor(start_s) and s.t <= until_t]
    worst = max((s.p99_us for s in window if s.p99_us is not None), default=None)
    failed = sum(s.completed - s.ok for s in window)
    away = [s for s in seconds if s.t - 1 >= start_s and s.t <= end_s]  # whole seconds without the database
    if (worst is not None and worst > FAST_US) or (away and not any(s.completed for s in away)):
        return HANGS, worst, failed  # requests waited, or nothing at all ended while it was away
    return (FAILS_FAST if failed else RIDES), worst, failed


def judge(seconds: list[LoadSecond], shape: str, start_s: float | None, end_s: float | None,
          died_at_s: float | None = None) -> Outage | None:
    """The verdicts for one cell (None: no timeline, or no outage happened in it)."""
    if not seconds or start_s is None or end_s is None:
        return None
    base = [s for s in seconds if s.t >= 2 and s.t <= math.floor(start_s)]
    if not base:
        base = [s for s in seconds if s.t <= math.floor(start_s)]
    if not base:
        return None
    before = sum(s.ok for s in base) / len(base)
    after = [s for s in seconds if s.t > end_s]
    back = _recovery(after, before) if died_at_s is None else None
    recovered = round(max(0.0, back.t - 1 - end_s), 2) if back is not None else None
    until = back.t if back is not None else seconds[-1].t
    during, worst, failed = _during(seconds, start_s, end_s, until)
    failed_all = sum(s.completed - s.ok for s in seconds if s.t > math.floor(start_s))
    gone = f"database away {start_s:.1f}–{end_s:.1f} s; {before:,.0f} successful req/s before"
    if died_at_s is not None:
        verdict, how = CRASHES, f"its process exited at t={died_at_s:.1f} s"
    elif back is None:
        last = after[-1].ok if after else 0
        verdict, how = STAYS_BROKEN, f"not back by the end ({last:,} successful in the last second)"
    else:
        verdict = RECOVERS if recovered <= QUICK_S else SLOWLY
        how = f"back to {back.ok:,} req/s in second {back.t}, {recovered:.1f} s after the database"
    worst_txt = f"worst 1-s p99 {worst / 1000:,.0f} ms" if worst is not None else "nothing ended"
    reason = f"{gone}; {how}; {failed_all:,} requests failed from the outage on, {worst_txt} until recovery"
    return Outage(shape, round(start_s, 2), round(end_s, 2), verdict, during, reason, round(before, 1), recovered,
                  failed_all, worst)


def combine(verdicts: list[str | None]) -> Agreement:
    """A row's verdict across its repetitions: all the same, else split (rules/agreement.py)."""
    return agree(verdicts, SEVERITY)


def combine_during(verdicts: list[str | None]) -> Agreement:
    return agree(verdicts, [HANGS, FAILS_FAST, RIDES])


__all__ = ["Outage", "judge", "combine", "combine_during", "RULES", "DURING", "RULES_INTRO", "SEVERITY",
           "CRASHES", "STAYS_BROKEN", "SLOWLY", "RECOVERS", "RIDES", "FAILS_FAST", "HANGS"]
