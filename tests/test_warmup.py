"""The steady-state rule and the warm-up loop (warmup.py), with made-up rates and a made-up clock."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from serverbench.rules import warmup
from serverbench.model import CellMetrics


@pytest.mark.parametrize("rates, steady", [
    ([100, 100, 100, 100, 100, 100], True),
    ([10, 50, 100, 101, 99, 100, 102, 98], True),   # a cold start does not matter once two windows agree
    ([100, 100, 100], False),                        # too few seconds to judge (two windows of 3)
    ([90, 95, 100, 100, 104, 108], False),           # last window 4.7 % above the one before: still rising
    ([80, 111, 98, 91, 79, 100], True),              # noisy but flat (a warm JVM on this VM)
    ([0, 0, 0, 0, 0, 0], False),                     # nothing answered yet (a cold JIT): keep warming
    ([0, 0, 0, 0, 0, 10], False),
    ([110, 110, 110, 100, 100, 100], True),          # falling is not warming up
])
def test_steady_rule(rates, steady) -> None:
    assert warmup.is_steady(rates) is steady


def test_warm_to_steady_stops_when_steady_and_records_the_rates() -> None:
    # a JIT-like server: slow at first, then flat
    rates = iter([20_000, 40_000, 80_000, 100_000, 101_000, 100_500, 99_000, 100_000, 99_500, 1, 1])
    w = warmup.warm_to_steady(lambda: next(rates), max_s=20)
    assert w.rates == [20_000, 40_000, 80_000, 100_000, 101_000, 100_500, 99_000, 100_000, 99_500]
    assert w.steady and w.steady_after_s == 9.0
    assert w.first_share == pytest.approx(20_000 / ((99_000 + 100_000 + 99_500) / 3))
    m = CellMetrics(warmup=w.cell_figures())
    assert m.warmup.warmup_steady is True and m.warmup.warmup_steady_s == 9.0 and m.warmup.warmup_rates[0] == 20_000
    assert m.dump()["warmup_steady_s"] == 9.0  # stored flat, as before the figures were grouped


def test_warm_to_steady_gives_up_at_its_maximum_and_says_not_steady() -> None:
    n = iter(range(1, 100))
    w = warmup.warm_to_steady(lambda: 1000.0 * next(n), max_s=5)  # always rising
    assert len(w.rates) == 5 and not w.steady
    assert w.steady_after_s is None and w.first_share is None
    assert w.cell_figures().warmup_steady is False


def _cell(**metrics):
    return SimpleNamespace(metrics=CellMetrics.model_validate(metrics))


def test_figures_and_not_steady_warning_across_repetitions() -> None:
    cells = [_cell(warmup_steady=True, warmup_steady_s=4.0, warmup_first_share=0.5, warmup_max_s=20.0),
             _cell(warmup_steady=True, warmup_steady_s=8.0, warmup_first_share=0.7, warmup_max_s=20.0),
             _cell(warmup_steady=False, warmup_max_s=20.0)]
    f = warmup.figures(cells)
    assert f == warmup.GroupWarmup(steady_s=6.0, first_second_share=0.6, not_steady=1, warmup_max_s=20.0)
    (kind, severity, text), = warmup.warnings(cells)
    assert kind == "not-steady" and severity == "error" and "1 of 3 repetitions" in text and "20 s" in text
    # brief warm-ups (later points of a start) are neither steady nor not steady
    assert warmup.warnings([_cell(warmup_brief=True, warmup_rates=[5.0])]) == []


def test_judge_finds_the_second_one_kept_connection_run_became_steady() -> None:
    # one loadgen --warmup of 10 s (its connections kept): the same rule, judged afterwards
    w = warmup.judge([0, 20, 60, 90, 100, 101, 99, 100, 100, 101], 10)
    assert w.steady and w.steady_after_s == 9.0 and len(w.rates) == 10  # rates after it are kept
    f = w.cell_figures()
    assert f.warmup_steady is True and f.warmup_steady_s == 9.0 and f.warmup_max_s == 10
    rising = warmup.judge([10, 20, 30, 40, 50, 60, 70, 80], 8)
    assert not rising.steady and rising.steady_after_s is None and rising.cell_figures().warmup_steady is False


def test_a_kept_connection_points_warm_up_runs_inside_its_measured_run() -> None:
    from serverbench.catalog.workloads import Point, Size
    from serverbench.run import measure
    tls = Point(label="tls", mode="closed", tls="rsa", connections=400, duration="6s")
    size = Size(warmup="1s", steady_max="12s", points=[tls])
    assert measure.keeps_connections(tls)
    assert not measure.keeps_connections(tls.model_copy(update={"keepalive": False}))  # a handshake per request anyway
    assert not measure.keeps_connections(tls.model_copy(update={"tls": None}))
    assert measure.warm_up_point(lambda *a: pytest.fail("no separate warm-up run"), "throughput", size, tls,
                                 True) == (None, 12.0)
    assert measure.warm_up_point(lambda *a: pytest.fail("no separate warm-up run"), "throughput", size, tls,
                                 False) == (None, 1.0)
    # loadgen leaves out trailing seconds without a success: they are seconds of 0
    report = SimpleNamespace(model_extra={"warmup_ok": [5, 50, 100, 100, 100, 100, 100, 100, 100, 100]})
    first = measure.judge_in_run(report, "throughput", size, True, 12.0)
    assert first.steady and first.steady_after_s == 8.0 and first.rates[-2:] == [0.0, 0.0]
    later = measure.judge_in_run(report, "throughput", size, False, 1.0)
    assert later.brief and later.rates == [5.0]


def test_an_open_load_at_a_fixed_rate_is_judged_by_requests_per_server_cpu_second() -> None:
    """Issue 49: at a fixed offered rate the rate is flat from the first second while a JIT still makes each
    request cheaper; the rounds read requests per server CPU-second, so the warm-up goes on until that stops
    rising, where the rate alone would have called it steady after 6 rounds."""
    from serverbench.catalog.workloads import Point, Size
    from serverbench.run import measure
    import itertools
    cpu_per_round = itertools.chain([0.5, 0.3, 0.2], itertools.repeat(0.1))
    used = [0.0]

    def load(point: Point) -> SimpleNamespace:
        used[0] += next(cpu_per_round)  # the server's CPU over this round
        return SimpleNamespace(report=SimpleNamespace(summary=SimpleNamespace(ok=1000), duration_s=1.0))

    p = Point(label="fixed", mode="open", rate=1000, duration="5s")
    size = Size(steady_max="20s", points=[p])
    w = measure.warm_up(load, "fixed-load", size, p, first=True, cpu_s=lambda: used[0])
    assert w.basis == warmup.CPU_BASIS and w.steady and len(w.rates) == 9, w.rates
    assert [round(r) for r in w.rates[:4]] == [2000, 3333, 5000, 10000]
    assert w.cell_figures().warmup_basis == "cpu"
    # the same load judged by its rate (a server elsewhere: no CPU to read) is steady after 6 rounds
    assert len(measure.warm_up(load, "fixed-load", size, p, first=True).rates) == 6
