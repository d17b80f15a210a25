"""Behaviour over time: the overload verdict rules on synthetic timelines (each verdict and the
boundaries of its thresholds), the soak figures, and the alignment of the server's series with
the loadgen's timeline."""
from __future__ import annotations

import statistics

import pytest

from serverbench.overtime import overload, soak, timeline
from serverbench.model import LoadgenReport
from serverbench.overtime.overload import CRASHES, DEGRADES, HOLDS, KEPT_UP, SHEDS, SLOWS, SPLIT
from serverbench.overtime.timeline import LoadSecond, ServerSecond

N = 40  # seconds; the end window is the last 8 (20 %)


def tl(ok: list[float], p50_ms: list[float], failed: list[int] | None = None,
       demand: list[float] | None = None) -> list[LoadSecond]:
    """A timeline: `ok` successful responses, `failed` timeouts, median latency `p50_ms` per second."""
    out = []
    for i, o in enumerate(ok):
        f = failed[i] if failed else 0
        out.append(LoadSecond(t=i + 1, completed=int(o) + f, ok=int(o), timeouts=f, errors=f,
                              p50_us=p50_ms[i] * 1000, p90_us=p50_ms[i] * 2000, p99_us=p50_ms[i] * 3000,
                              max_us=p50_ms[i] * 5000, demand=demand[i] if demand else 250.0 * (i + 1),
                              active=None))
    return out


def ramp_ok() -> list[float]:
    return [500.0 * (i + 1) for i in range(N)]  # still rising at the end: the peak is the last second


def two_level(first: float, second: float, at: int = 20) -> list[float]:
    return [first] * at + [second] * (N - at)


def judge(seconds: list[LoadSecond], **kw) -> overload.Overload:
    o = overload.judge(seconds, **kw)
    assert o is not None
    return o


# -- kept up / holds: no failures, latency growth from light load -------------------------------
@pytest.mark.parametrize("end_ms, verdict", [(20.0, KEPT_UP), (20.1, HOLDS), (300.0, HOLDS)])
def test_without_failures_latency_growth_tells_holds_from_kept_up(end_ms: float, verdict: str) -> None:
    o = judge(tl(ramp_ok(), two_level(10.0, end_ms)))
    assert o.verdict == verdict
    assert o.growth_from_base == pytest.approx(end_ms / 10.0, abs=0.001)
    assert o.peak_at_s == N and o.failed_share_after_peak == 0
    assert o.p90_end_us == end_ms * 2000 and o.p90_at_peak_us == end_ms * 2000


def test_failures_just_under_one_percent_still_hold() -> None:
    o = judge(tl([19_801.0] * N, two_level(10.0, 300.0), failed=[199] * N))  # 199 / 20,000
    assert o.failed_share_after_peak < overload.FAILED_SHARE
    assert o.verdict == HOLDS


# -- sheds / slows: at least 1 % failed; does answered latency keep growing past the peak? -------
@pytest.mark.parametrize("end_ms, verdict", [(200.0, SHEDS), (201.0, SLOWS), (2000.0, SLOWS), (100.0, SHEDS)])
def test_with_failures_growth_past_the_peak_tells_sheds_from_slows(end_ms: float, verdict: str) -> None:
    # flat throughput from the start: the (earliest) peak is at t=1, its latency 100 ms
    o = judge(tl([19_800.0] * N, two_level(100.0, end_ms), failed=[200] * N))  # exactly 1 %
    assert o.failed_share_after_peak == pytest.approx(0.01)
    assert o.peak_at_s == 1
    assert o.growth_from_peak == pytest.approx(end_ms / 100.0, abs=0.001)
    assert o.verdict == verdict
    assert "1.0% of the requests from the peak on failed" in o.reason


def test_answered_latency_ignores_seconds_where_half_or_more_failed() -> None:
    # at the end 60 % time out: those seconds' medians are timeouts, not answers -> no figure
    failed = [0] * 32 + [30_000] * 8
    o = judge(tl([20_000.0] * N, two_level(100.0, 5000.0, at=32), failed=failed))
    assert o.growth_from_peak is None
    assert o.verdict == SHEDS and "too few answered" in o.reason


# -- degrades: throughput falls after its peak while demand does not ---------------------------
def degrading(end_rps: float, end_demand: float = 10_000.0) -> list[LoadSecond]:
    ok = [min(20_000.0, 2000.0 * (i + 1)) for i in range(32)] + [end_rps] * 8
    demand = [min(10_000.0, 1000.0 * (i + 1)) for i in range(32)] + [end_demand] * 8
    return tl(ok, [10.0] * N, demand=demand)


@pytest.mark.parametrize("end_rps, verdict", [(14_999.0, DEGRADES), (15_000.0, KEPT_UP), (5_000.0, DEGRADES)])
def test_degrades_below_three_quarters_of_the_peak(end_rps: float, verdict: str) -> None:
    o = judge(degrading(end_rps))
    assert o.peak_ok_rps == 20_000 and o.peak_at_s == 11  # the first whole 3-second window at 20k
    assert o.end_ok_rps == end_rps
    assert o.verdict == verdict


@pytest.mark.parametrize("end_demand, verdict", [(9_000.0, DEGRADES), (8_999.0, KEPT_UP)])
def test_a_fall_that_follows_falling_demand_is_not_degrading(end_demand: float, verdict: str) -> None:
    assert judge(degrading(10_000.0, end_demand)).verdict == verdict


def test_degrading_while_other_processes_took_the_cpu_is_flagged_suspect() -> None:
    def srv(others_end: float) -> list[ServerSecond]:
        return [ServerSecond(t=i + 1.0, dt=1.0, cpu_user_percent=40.0, cpu_sys_percent=20.0, rss_bytes=1,
                             threads=1, processes=1, ctx_per_s=0.0,
                             others_percent=10.0 if i < 30 else others_end) for i in range(N)]
    assert "suspect" in judge(degrading(10_000.0), server=srv(30.0)).reason
    assert "suspect" not in judge(degrading(10_000.0), server=srv(24.0)).reason  # 14 points more: not flagged


# -- crashes: a dead process wins over every other rule -----------------------------------------
def test_a_process_that_died_crashes_whatever_the_figures() -> None:
    o = judge(degrading(5_000.0), died_at_s=33.2)
    assert o.verdict == CRASHES and "died at t=33.2 s" in o.reason
    o = judge(tl(ramp_ok(), [10.0] * N), died_at_s=38.0, memory_killed_at_s=37.8)
    assert o.verdict == CRASHES and "memory limit at t=37.8 s" in o.reason
    assert o.cell_figures().overload_verdict == CRASHES and o.cell_figures().peak_ok_rps == o.peak_ok_rps


def test_no_timeline_no_verdict_and_the_peak_is_smoothed() -> None:
    assert overload.judge([]) is None
    ok = [1000.0] * 10
    ok[5] = 10_000.0  # a single-second spike counts a third
    assert judge(tl(ok, [10.0] * 10)).peak_ok_rps == pytest.approx(4000.0)


def test_repetitions_agree_or_the_verdict_is_split_with_the_counts() -> None:
    # issue 49: a verdict the repetitions disagree on is not a verdict: no majority, no crash first
    same = overload.combine([HOLDS, HOLDS, HOLDS])
    assert (same.verdict, same.split, same.text()) == (HOLDS, False, "holds 3 of 3")
    split = overload.combine([SHEDS, SLOWS, SHEDS])
    assert (split.verdict, split.split, split.text()) == (SPLIT, True, "sheds 2 of 3, slows 1")
    crash = overload.combine([HOLDS, CRASHES, HOLDS])
    assert (crash.verdict, crash.text()) == (SPLIT, "holds 2 of 3, crashes 1")
    # as often each: the more severe first (SEVERITY), never one of them chosen
    assert overload.combine([HOLDS, SHEDS]).text() == "sheds 1 of 2, holds 1"
    assert overload.combine([SLOWS, SHEDS, KEPT_UP]).text() == "slows 1 of 3, sheds 1, kept up 1"
    # a repetition that could not be judged is left out, not counted against the others
    assert (overload.combine([SHEDS, None, SHEDS]).verdict, overload.combine([SHEDS, None, SHEDS]).text()) == (
        SHEDS, "sheds 2 of 2")
    assert overload.combine([]).verdict is None and overload.combine([None]).text() is None
    assert [v for v, _ in overload.RULES] == [CRASHES, DEGRADES, SHEDS, SLOWS, HOLDS, KEPT_UP]


# -- soak -----------------------------------------------------------------------------------------
def test_soak_figures_worst_second_median_and_decile_spread() -> None:
    p99_ms = [2.0] * 30 + [40.0] + [2.0] * 9 + [3.0] * 20
    p99_ms[10] = 5.0
    seconds = tl([2000.0] * 60, [p / 3 for p in p99_ms])
    st = soak.judge(seconds)
    assert st is not None
    assert st.worst_second_p99_us == pytest.approx(40_000) and st.worst_second_at_s == 31
    assert st.median_second_p99_us == pytest.approx(2000)
    q = statistics.quantiles([p * 1000 for p in p99_ms], n=10, method="inclusive")
    assert st.second_p99_spread_us == pytest.approx(q[-1] - q[0], abs=0.1)
    assert st.seconds == 60 and set(st.cell_figures().model_dump(exclude_unset=True)) == {"worst_second_p99_us", "worst_second_at_s",
                                                       "median_second_p99_us", "second_p99_spread_us"}


def test_soak_needs_a_few_timed_seconds() -> None:
    assert soak.judge(tl([10.0, 10.0], [1.0, 1.0])) is None
    empty = [LoadSecond(t, 0, 0, 0, 0, None, None, None, None, 2000.0, 0) for t in range(1, 10)]
    assert soak.judge(empty) is None
    assert soak.decile_spread([5.0]) == 0.0


# -- one axis: loadgen seconds and the server's series -----------------------------------------
def report(timeline_rows: list[dict], started_at: str = "2026-01-01T00:00:10.500Z", duration: float = 3.004) -> LoadgenReport:
    return LoadgenReport.parse({
        "schema": "loadgen/1", "config": {"mode": "sessions"}, "started_at": started_at, "duration_s": duration,
        "summary": {"requests": 0, "errors": 0, "rps": 0.0, "latency_us": {}}, "timeline": timeline_rows}, "test")


def test_server_series_is_shifted_onto_the_loadgen_axis() -> None:
    rows = [{"t": t, "completed": 10, "ok": 9, "errors": {"timeout": 1, "connect": 0}, "p50_us": 100, "p90_us": 200,
             "p99_us": 300, "max_us": 400, "active_users": 5, "target_users": 5.0} for t in (1, 2, 3, 4)]
    rows[1].update(completed=0, ok=0, errors={"timeout": 0}, p50_us=0, p90_us=0, p99_us=0, max_us=0)
    rep = report(rows)
    load = timeline.load_seconds(rep)
    assert [s.t for s in load] == [1, 2, 3]  # t=4 would be after the measured 3.004 s
    assert load[0].timeouts == 1 and load[0].errors == 1 and load[0].demand == 5.0 and load[0].active == 5
    assert load[1].p90_us is None and load[1].answered_us is None  # nothing ended that second
    # the sampler started 0.5 s before the loadgen measured (open load's warm-up, say)
    started = rep.started_at and timeline._unix(rep.started_at)
    usage = {"series": {"started_unix": started - 0.5, "columns": ["t_s", "dt_s", "cpu_user_s", "cpu_sys_s",
                                                                   "rss_bytes", "threads", "processes",
                                                                   "ctx_voluntary", "ctx_involuntary", "cpus_busy_s"],
                        "rows": [[0.4, 0.4, 0.1, 0.0, 10, 1, 1, 0, 0, 0.4],
                                 [1.4, 1.0, 0.3, 0.2, 20, 2, 1, 5, 5, 0.9],
                                 [2.4, 1.0, 0.5, 0.1, 30, 2, 1, 1, 1, 0.6]]}}
    off = timeline.offset_s(rep, usage)
    assert off == pytest.approx(0.5)
    srv = timeline.server_seconds(usage, off)
    assert [s.t for s in srv] == [pytest.approx(0.9), pytest.approx(1.9)]  # the warm-up row is left out
    assert srv[0].cpu_percent == pytest.approx(50.0) and srv[0].ctx_per_s == 10
    assert srv[0].others_percent == pytest.approx(40.0) and srv[1].others_percent == 0.0  # never negative
    assert timeline.on_axis(2.0, off) == 1.5 and timeline.on_axis(None, off) is None
    assert timeline.demand_label(rep) == "active devices (target)"
    assert timeline.offset_s(rep, None) is None and timeline.server_seconds(None, None) == []
