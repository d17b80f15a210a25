"""Each load tool's output parser, on outputs recorded from real runs here (tests/fixtures/crosscheck/):
normal runs, timeouts, non-2xx answers and refused connections."""
from __future__ import annotations

from pathlib import Path

import pytest

from serverbench.crosscheck.parsers import ToolOutputError, parse

FX = Path(__file__).parent / "fixtures" / "crosscheck"


def text(name: str) -> str:
    return (FX / name).read_text()


# -- wrk ------------------------------------------------------------------------------------------
def test_wrk_summary() -> None:
    f = parse("wrk", text("wrk-ok.txt"), "", {})
    assert (f.requests, f.ok, f.errors, f.timeouts) == (39903, 39903, 0, 0)
    assert f.reported_rps == 19606.28 and f.duration_s == 2.04
    assert (f.p50_us, f.p90_us, f.p99_us, f.max_us) == pytest.approx((2070, 7070, 12640, 17190))


def test_wrk_socket_timeouts_are_errors_not_requests() -> None:
    f = parse("wrk", text("wrk-timeouts.txt"), "", {})
    assert (f.requests, f.ok, f.timeouts, f.errors) == (376, 376, 20, 20)
    assert f.error_classes == {"timeout": 20}
    assert f.p50_us == pytest.approx(160.0)  # microsecond unit


def test_wrk_non_2xx_are_not_ok() -> None:
    f = parse("wrk", text("wrk-non2xx.txt"), "", {})
    assert (f.requests, f.ok, f.errors) == (24973, 0, 24973)
    assert f.error_classes == {"status": 24973}


def test_wrk_refused_is_a_one_line_error() -> None:
    with pytest.raises(ToolOutputError, match="unable to connect to 127.0.0.1:18099 Connection refused"):
        parse("wrk", text("wrk-refused.txt"), "", {})


# -- ab -------------------------------------------------------------------------------------------
def test_ab_keepalive_summary() -> None:
    f = parse("ab", text("ab-keepalive.txt"), "", {})
    assert (f.requests, f.ok, f.errors) == (30222, 30222, 0)
    assert f.reported_rps == 15104.53 and f.duration_s == 2.001
    assert (f.p50_us, f.p90_us, f.p99_us, f.max_us) == (2000.0, 9000.0, 16000.0, 22000.0)


def test_ab_without_keepalive_says_nothing_about_reuse() -> None:
    f = parse("ab", text("ab-noka.txt"), "", {})
    assert (f.requests, f.ok) == (500, 500)
    assert not any("reused" in n for n in f.notes)


def test_ab_timeout_aborts_the_run_and_says_so() -> None:
    f = parse("ab", text("ab-timeouts.txt"), "", {})
    assert f.requests == 178 and f.reported_rps is None and f.p50_us is None
    assert any("aborted after 178 requests" in n and "timeout specified has expired" in n for n in f.notes)


def test_ab_non_2xx_and_refused() -> None:
    f = parse("ab", text("ab-non2xx.txt"), "", {})
    assert (f.requests, f.ok, f.errors) == (2000, 0, 2000)
    refused = parse("ab", text("ab-refused.txt"), "", {})
    assert refused.ok == 0 and refused.errors == 150 and refused.error_classes == {"read": 150}
    assert refused.p50_us is None  # ab prints 0 ms for requests that never got an answer


# -- hey ------------------------------------------------------------------------------------------
def test_hey_summary() -> None:
    f = parse("hey", text("hey-ok.txt"), "", {})
    assert (f.requests, f.ok, f.errors) == (25657, 25657, 0)
    assert f.reported_rps == pytest.approx(12729.3966) and f.duration_s == pytest.approx(2.0156)
    assert (f.p50_us, f.p90_us, f.p99_us, f.max_us) == pytest.approx((2300, 8600, 23200, 56400))


def test_hey_timeouts_come_from_its_error_distribution() -> None:
    f = parse("hey", text("hey-timeouts.txt"), "", {})
    assert (f.requests, f.ok, f.timeouts, f.errors) == (593, 533, 60, 60)
    # its Requests/sec counts the errors too: (533 + 60) / 3.1129 s
    assert f.reported_rps == pytest.approx(593 / 3.1129, rel=1e-3)


def test_hey_refused_and_non_2xx() -> None:
    f = parse("hey", text("hey-refused.txt"), "", {})
    assert (f.requests, f.ok, f.errors, f.p50_us, f.max_us) == (100, 0, 100, None, None)
    assert f.error_classes == {"connect": 100}
    g = parse("hey", text("hey-non2xx.txt"), "", {})
    assert (g.ok, g.errors, g.error_classes) == (0, 1000, {"status": 1000})


# -- k6 -------------------------------------------------------------------------------------------
def test_k6_summary_from_handle_summary_json() -> None:
    f = parse("k6", "", "", {"result": text("k6-ok.json")})
    assert (f.requests, f.ok, f.errors) == (9866, 9866, 0)
    assert f.reported_rps == pytest.approx(4918.15, rel=1e-4) and f.duration_s == pytest.approx(2.006, rel=1e-3)
    assert f.p50_us == pytest.approx(6007.8165) and f.p99_us == pytest.approx(53491.8059)


def test_k6_timeouts_from_its_warning_lines() -> None:
    f = parse("k6", "", text("k6-timeouts.stderr.txt"), {"result": text("k6-timeouts.json")})
    assert (f.requests, f.ok, f.errors, f.timeouts) == (574, 534, 40, 40)
    assert f.max_us == pytest.approx(1003505.556)


def test_k6_open_load_reports_its_rate() -> None:
    f = parse("k6", "", "", {"result": text("k6-open.json")})
    assert f.requests == 3894 and f.errors == 0


def test_k6_without_summary_is_an_error() -> None:
    with pytest.raises(ToolOutputError, match="k6 wrote no summary: level=error"):
        parse("k6", "", "time=x level=error msg=\"bad script\"\nlevel=error", {})


# -- Locust ---------------------------------------------------------------------------------------
def test_locust_aggregated_row() -> None:
    f = parse("locust", "", "", {"result_stats.csv": text("locust-ok_stats.csv"),
                                 "result_failures.csv": text("locust-ok_failures.csv")})
    assert (f.requests, f.ok, f.errors, f.timeouts) == (3965, 3965, 0, 0)
    assert f.reported_rps == pytest.approx(1922.926, rel=1e-5)
    assert (f.p50_us, f.p90_us, f.p99_us) == (16000.0, 34000.0, 120000.0)
    assert f.duration_s is None  # Locust prints no run time


def test_locust_timeouts_from_its_failures() -> None:
    f = parse("locust", "", "", {"result_stats.csv": text("locust-timeouts_stats.csv"),
                                 "result_failures.csv": text("locust-timeouts_failures.csv")})
    assert (f.requests, f.ok, f.errors, f.timeouts) == (371, 351, 20, 20)


def test_locust_without_statistics_is_an_error() -> None:
    with pytest.raises(ToolOutputError, match="Locust wrote no statistics"):
        parse("locust", text("locust-timeouts.stdout.txt"), "", {})


# -- oha ------------------------------------------------------------------------------------------
def test_oha_json_summary() -> None:
    f = parse("oha", text("oha-ok.json"), "", {})
    # 50 requests cut off at the -z deadline are in oha's errors (and its rate), not failures
    assert (f.requests, f.ok, f.errors, f.timeouts) == (39906, 39906, 0, 0)
    assert f.reported_rps == pytest.approx((39906 + 50) / 2.009000001)
    assert (f.p50_us, f.p99_us, f.max_us) == pytest.approx((1565.012, 11131.565, 17151.615))
    assert any("50 requests cut off at the deadline" in n for n in f.notes)


def test_oha_timeouts_refused_and_non_2xx() -> None:
    f = parse("oha", text("oha-timeouts.json"), "", {})
    assert (f.requests, f.ok, f.timeouts, f.errors) == (573, 533, 40, 40)
    r = parse("oha", text("oha-refused.json"), "", {})
    assert (r.requests, r.ok, r.errors, r.p50_us, r.max_us) == (100, 0, 100, None, None)
    assert r.error_classes == {"connect": 100}
    n = parse("oha", text("oha-non2xx.json"), "", {})
    assert (n.ok, n.errors, n.error_classes) == (0, 1000, {"status": 1000})


def test_oha_open_load_with_latency_correction() -> None:
    f = parse("oha", text("oha-open.json"), "", {})
    assert f.requests == 3998 and f.reported_rps == pytest.approx(1991.95, rel=1e-4)


def test_oha_error_line_instead_of_json() -> None:
    with pytest.raises(ToolOutputError, match="oha printed no JSON summary: error: invalid value"):
        parse("oha", "", "error: invalid value '2x' for '-z <DURATION>'", {})


# -- drill ----------------------------------------------------------------------------------------
def test_drill_statistics() -> None:
    f = parse("drill", text("drill-ok.txt"), "", {})
    assert (f.requests, f.ok, f.errors) == (5000, 5000, 0)
    assert f.reported_rps == 9160.87
    assert f.duration_s == pytest.approx(5000 / 9160.87)  # not its printed "0.5 seconds"
    assert (f.p50_us, f.p99_us, f.max_us) == (3759.0, 14783.0, 18559.0)


def test_drill_timeouts_are_failures_it_does_not_name() -> None:
    f = parse("drill", text("drill-timeouts.txt"), "", {})
    assert (f.requests, f.ok, f.errors, f.timeouts) == (300, 270, 30, None)
    assert f.max_us == 1003519.0


def test_drill_non_2xx_and_refused_have_no_latency() -> None:
    for name, total in (("drill-non2xx.txt", 1000), ("drill-refused.txt", 100)):
        f = parse("drill", text(name), "", {})
        assert (f.requests, f.ok, f.errors, f.p50_us) == (total, 0, total, None)


def test_drill_bad_plan_is_an_error() -> None:
    with pytest.raises(ToolOutputError, match="drill printed no statistics: thread 'main' panicked"):
        parse("drill", "", "thread 'main' panicked at src/benchmark.rs", {})
