"""What a server does past its capacity: the peak it reached and a verdict, from one cell's
per-second timeline (Stressgrid's question: not the peak alone, but the behaviour beyond it).

The figures (all from the loadgen's timeline, `timeline.LoadSecond`):
- peak: the highest successful responses/s, as a centred 3-second moving mean (one second alone
  is too noisy to rank by); `p90 at peak` is the median p90 of those 3 seconds;
- end: the last 20 % of the seconds (at least 3): mean successful responses/s, median p90;
- failed share after the peak: failed requests (timeouts and every other error) of all the
  requests that ended from the peak window on;
- answered latency: per second, the median over every request that ended, which is an answered
  request's latency while fewer than half of them failed (`LoadSecond.answered_us`); its median
  over the first 20 % of the seconds up to the peak (at least 3) is the light-load baseline.
The verdict is the first rule of `RULES` that matches; the thresholds are the constants below.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..model import OverloadFigures
from ..rules.agreement import SPLIT, Agreement, agree
from .timeline import LoadSecond, ServerSecond, median, smoothed

SMOOTH_S = 3
END_SHARE, END_MIN_S = 0.2, 3
BASE_SHARE, BASE_MIN_S = 0.2, 3
FAILED_SHARE = 0.01  # failures at or above this share of the requests after the peak count
GROWTH = 2.0  # answered latency "grew" when it more than doubled
FALL = 0.75  # "degrades": the end's throughput below this fraction of the peak
DEMAND_KEPT = 0.9  # … while demand at the end is still at least this fraction of demand at the peak
# On a shared machine other processes may take the server's CPUs: a fall in throughput that comes
# with this many more points of their CPU use at the end than at the peak is said to be suspect.
MACHINE_NOISE = 15.0

CRASHES, DEGRADES, SHEDS, SLOWS, HOLDS, KEPT_UP = "crashes", "degrades", "sheds", "slows", "holds", "kept up"
# Most severe first: the order in which a split verdict lists verdicts given as often.
SEVERITY = [CRASHES, DEGRADES, SLOWS, SHEDS, HOLDS, KEPT_UP]
RULES: list[tuple[str, str]] = [
    (CRASHES, "the server's process died during the run (killed at the memory limit included)"),
    (DEGRADES, f"successful responses/s over the end fell below {FALL:.0%} of the peak while demand stayed "
               f"at least {DEMAND_KEPT:.0%} of what it was at the peak"),
    (SHEDS, f"at least {FAILED_SHARE:.0%} of the requests from the peak on failed (timeouts or errors) while "
            f"the latency of answered requests at the end stayed within {GROWTH:g}× its value at the peak"),
    (SLOWS, f"at least {FAILED_SHARE:.0%} failed, and the latency of answered requests kept growing past the "
            f"peak (more than {GROWTH:g}×): it queues until the client's timeout gives up on requests"),
    (HOLDS, f"fewer than {FAILED_SHARE:.0%} failed while the latency of answered requests grew more than "
            f"{GROWTH:g}× its light-load value: it answers everything, later"),
    (KEPT_UP, f"fewer than {FAILED_SHARE:.0%} failed and latency stayed within {GROWTH:g}× its light-load "
              "value: demand never passed its capacity, so there is no overload behaviour to judge"),
]
RULES_INTRO = ("Verdict: the first rule that matches, from the per-second timeline of each repetition; "
               "a row's verdict is the one all its repetitions gave, and where they differ it is split, with "
               "how many gave each (\"sheds 2 of 3, slows 1\"), never the most common one (a crash in any "
               "repetition is also a warning). Peak = the highest 3-second mean of successful responses/s; "
               "end = the last 20 % of the run; answered latency = the per-second median while fewer "
               "than half of that second's requests failed.")


@dataclass(frozen=True)
class Overload:
    """One cell's overload figures; `cell_figures()` is what the cell stores of them."""

    verdict: str
    reason: str  # the figures behind the verdict, one line
    peak_ok_rps: float
    peak_at_s: int
    end_ok_rps: float
    p90_at_peak_us: float | None
    p90_end_us: float | None
    failed_share_after_peak: float
    growth_from_base: float | None  # answered latency at the end ÷ light-load baseline
    growth_from_peak: float | None  # answered latency at the end ÷ at the peak

    def cell_figures(self) -> OverloadFigures:
        d = asdict(self)
        return OverloadFigures(overload_verdict=d.pop("verdict"), overload_reason=d.pop("reason"), **d)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _others(server: list[ServerSecond], t0: float, t1: float) -> float | None:
    """Mean CPU % other processes used on the server's CPUs between t0 and t1."""
    vs = [s.others_percent for s in server if t0 <= s.t <= t1 and s.others_percent is not None]
    return sum(vs) / len(vs) if vs else None


def judge(seconds: list[LoadSecond], died_at_s: float | None = None, memory_killed_at_s: float | None = None,
          server: list[ServerSecond] | None = None) -> Overload | None:
    """The verdict for one cell (None: no timeline to judge). `server`: the server's series on the
    same axis, to say when a fall in throughput came with other processes taking its CPUs."""
    if not seconds:
        return None
    n = len(seconds)
    rates = smoothed([float(s.ok) for s in seconds], SMOOTH_S)
    i_peak = max(range(n), key=lambda i: (rates[i], -i))  # the earliest of equal peaks
    peak = rates[i_peak]
    win = seconds[max(0, i_peak - SMOOTH_S // 2): i_peak + SMOOTH_S // 2 + 1]
    end_n = max(END_MIN_S, math.ceil(END_SHARE * n))
    end = seconds[-end_n:]
    end_rps = sum(s.ok for s in end) / len(end)
    after = seconds[max(0, i_peak - SMOOTH_S // 2):]
    done = sum(s.completed for s in after)
    failed = (done - sum(s.ok for s in after)) / done if done else 0.0
    before = [s for s in seconds[: i_peak + 1] if s.answered_us is not None]
    base = median([s.answered_us for s in before[: max(BASE_MIN_S, math.ceil(BASE_SHARE * len(before)))]])
    at_peak = median([s.answered_us for s in win])
    at_end = median([s.answered_us for s in end])
    fig = dict(peak_ok_rps=round(peak, 1), peak_at_s=seconds[i_peak].t, end_ok_rps=round(end_rps, 1),
               p90_at_peak_us=median([s.p90_us for s in win]), p90_end_us=median([s.p90_us for s in end]),
               failed_share_after_peak=round(failed, 5), growth_from_base=_ratio(at_end, base),
               growth_from_peak=_ratio(at_end, at_peak))
    g_base, g_peak = fig["growth_from_base"], fig["growth_from_peak"]
    demand_peak = median([s.demand for s in win])
    demand_end = median([s.demand for s in end])
    demand_kept = demand_peak is None or demand_end is None or demand_end >= DEMAND_KEPT * demand_peak
    share = f"{failed:.1%} of the requests from the peak on failed"
    if died_at_s is not None or memory_killed_at_s is not None:
        if memory_killed_at_s is not None:
            why = f"killed at the memory limit at t={memory_killed_at_s:.1f} s"
        else:
            why = f"its process died at t={died_at_s:.1f} s"
        return Overload(CRASHES, why, **fig)
    if i_peak < n - end_n and end_rps < FALL * peak and demand_kept:
        why = f"{end_rps:,.0f} successful req/s over the end, {end_rps / peak:.0%} of its {peak:,.0f} peak at t={seconds[i_peak].t} s"
        t_peak = seconds[i_peak].t
        at_peak_o = _others(server or [], t_peak - SMOOTH_S / 2 - 1, t_peak + SMOOTH_S / 2)
        at_end_o = _others(server or [], end[0].t - 1, end[-1].t + 1)
        if at_peak_o is not None and at_end_o is not None and at_end_o - at_peak_o >= MACHINE_NOISE:
            why += (f" — suspect: other processes used {at_end_o:.0f} % of its CPUs over the end against "
                    f"{at_peak_o:.0f} % at the peak (a shared machine's noise)")
        return Overload(DEGRADES, why, **fig)
    if failed >= FAILED_SHARE:
        if g_peak is None or g_peak <= GROWTH:
            flat = f"answered latency ×{g_peak:.2g} from the peak to the end" if g_peak else "too few answered to time"
            return Overload(SHEDS, f"{share}; {flat}", **fig)
        return Overload(SLOWS, f"{share}; answered latency ×{g_peak:.2g} from the peak to the end", **fig)
    grew = f"answered latency ×{g_base:.2g} its light-load value" if g_base else "answered latency unknown"
    if g_base is not None and g_base > GROWTH:
        return Overload(HOLDS, f"{share}; {grew}", **fig)
    return Overload(KEPT_UP, f"{share}; {grew}", **fig)


def combine(verdicts: list[str | None]) -> Agreement:
    """The verdict of several repetitions (rules/agreement.py): the one they all gave, else split with how
    many gave each, most given first and ties in SEVERITY's order ("sheds 2 of 3, slows 1")."""
    return agree(verdicts, SEVERITY)


__all__ = ["Overload", "judge", "combine", "RULES", "RULES_INTRO", "SEVERITY", "CRASHES", "DEGRADES", "SHEDS",
           "SLOWS", "HOLDS", "KEPT_UP", "SPLIT"]
