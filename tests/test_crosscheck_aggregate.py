"""Server-side truth: the /tenth counter arithmetic, and the tools-compared aggregation and finding."""
from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from serverbench.results.aggregate import collect
from serverbench.crosscheck.servercount import CounterError, answered, read_counter
from serverbench.rules.tools import rate
from serverbench.exporters import to_json, to_markdown
from serverbench.model import CellMetrics, CellRecord, ToolRun


def test_answered_excludes_the_second_read() -> None:
    # before-read returned 10; the tool sent 100; the after-read itself is the 111th increment
    assert answered(10, 111) == 100
    assert answered(1, 2) == 0
    with pytest.raises(CounterError, match="per-process counter or a restarted server"):
        answered(50, 3)


def test_rate() -> None:
    assert rate(6000, 2.0) == 3000.0
    assert rate(None, 2.0) is None and rate(10, 0.0) is None and rate(10, None) is None


@pytest.fixture
def counter_server() -> Iterator[str]:
    count = {"n": 0}

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/tenth?ms=0":
                self.send_error(404)
                return
            count["n"] += 1
            body = str(count["n"]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_read_counter_against_a_live_counter(counter_server: str) -> None:
    import urllib.request
    before = read_counter(counter_server)
    for _ in range(7):
        urllib.request.urlopen(counter_server + "/tenth?ms=0").read()
    assert answered(before, read_counter(counter_server)) == 7


def test_read_counter_names_a_bad_answer(counter_server: str) -> None:
    with pytest.raises(CounterError, match="is the server still running"):
        read_counter("http://127.0.0.1:1")


def cell(server: str, tool: str, reported: float | None, counted: int | None, basis: float, *,
         cpu: float = 50.0, peak: float | None = None, srv_cpu: float = 90.0, status: str = "ok",
         reason: str | None = None, timeouts: int = 0, requests: int = 1000, cores: int = 1,
         wall: float | None = None) -> CellRecord:
    run = ToolRun(tool=tool, tool_version="v1", source_workload="prantl-wrk", source_point="c=400",
                  reported_rps=reported, server_counted=counted, server_basis_s=basis, reason=reason, cores=cores,
                  wall_s=wall,
                  client_cpu_peak_percent=peak, command=[tool, "-c", "400"], notes=[f"{tool} note"])
    m = CellMetrics(kind="throughput", tool=run, client_cpu_percent=cpu, client_saturated=cpu >= 90 * cores,
                    cpu_percent=srv_cpu, p50_us=1000, p99_us=5000, requests=requests, timeouts=timeouts,
                    errors=timeouts)
    return CellRecord(server, "crosscheck:prantl-wrk", f"c=400 · {tool}", 1, status, error=reason, metrics=m)


def test_tools_compared_rows_ratio_and_finding() -> None:
    cells = [
        cell("go-nethttp", "loadgen", 30_000, 60_400, 2.0, cpu=60, srv_cpu=98),
        cell("go-nethttp", "wrk", 29_500, 59_200, 2.0, cpu=55, srv_cpu=97),
        cell("go-nethttp", "locust", 3_000, 4_000, 2.0, cpu=95, srv_cpu=8),
        cell("go-nethttp", "drill", None, None, 0, status="skipped", reason="drill has no duration"),
        cell("rust-tokio", "loadgen", 40_000, 80_000, 2.0, srv_cpu=99),
        cell("rust-tokio", "wrk", 39_000, 78_000, 2.0, srv_cpu=99),
    ]
    res = collect(1, cells, {})
    assert res.workloads == []  # cross-check cells are not ranked as a workload
    (tc,) = res.tools
    assert tc.servers == ["go-nethttp", "rust-tokio"]
    rows = {(r.server, r.tool): r for r in tc.rows}
    lg = rows["go-nethttp", "loadgen"]
    assert lg.server_counted_rps == 30_200 and lg.ratio == pytest.approx(30_000 / 30_200)
    assert rows["go-nethttp", "drill"].status == "cannot express"
    assert rows["go-nethttp", "locust"].client_bound
    f = tc.finding
    assert "on go-nethttp, locust drove the server to 2,000 requests/s" in f and "15.1× apart" in f
    assert "client CPU saturation" in f and "server's CPU stayed at 8 %" in f
    assert "locust on go-nethttp printed 3,000 requests/s, 1.50× what the server counted" in f
    assert "none is corrected for coordinated omission" in f
    md = to_markdown.tools_compared(res)
    assert "## tools compared" in md and any("| drill | v1 | cannot express: drill has no duration |" in x for x in md)
    assert any(x.startswith("| locust |") and "client-bound" in x for x in md)


def test_finding_with_peak_saturation_and_timeouts() -> None:
    peak = [cell("a", "loadgen", 10_000, 20_000, 2.0, srv_cpu=95),
            cell("a", "k6", 2_000, 4_000, 2.0, cpu=60, peak=99, srv_cpu=30)]
    f = collect(1, peak, {}).tools[0].finding
    assert "peaked at 99 %" in f and "includes its start-up" in f
    slow = [cell("a", "loadgen", 10_000, 20_000, 2.0), cell("a", "wrk", 5_000, 10_000, 2.0, timeouts=400)]
    assert "timeouts — wrk counted 400 timed-out requests" in collect(1, slow, {}).tools[0].finding


def test_json_export_carries_the_tools() -> None:
    import json

    from serverbench.store import RunRow
    run = RunRow(1, "2026-01-01T00:00:00", None, "finished", {}, {})
    res = collect(1, [cell("a", "loadgen", 10_000, 20_000, 2.0), cell("a", "wrk", 9_000, 18_000, 2.0)], {})
    doc = json.loads(to_json.render(run, res))
    assert [r["tool"] for r in doc["tools"][0]["rows"]] == ["loadgen", "wrk"]
    obj = res.tools[0].rows[1].json_object()
    assert list(obj)[:8] == ["tool", "version", "reported_rps", "server_counted_rps", "p50_us", "p99_us",
                             "client_cpu_percent", "notes"]


def test_finding_names_client_cpu_per_request() -> None:
    # loadgen: 0.2 core × 10 s for 200,000 answers = 10 µs each; locust: 0.7 × 10 s for 20,000 = 350 µs
    cells = [cell("a", "loadgen", 20_000, 200_000, 10.0, cpu=20, wall=10.0, srv_cpu=95),
             cell("a", "locust", 2_000, 20_000, 10.0, cpu=70, wall=10.0, srv_cpu=10)]
    (tc,) = collect(1, cells, {}).tools
    rows = {r.tool: r for r in tc.rows}
    assert rows["loadgen"].client_cpu_us_per_request == pytest.approx(10.0)
    assert rows["locust"].client_cpu_us_per_request == pytest.approx(350.0)
    f = tc.finding
    assert "client CPU per request — locust (single-threaded) spent 350 µs" in f and "(35× more)" in f
    assert "could not send more than about 2,857 requests/s" in f and "not client-bound at 70 %" in f
    assert "Even under" not in f  # the server was busy under loadgen: no lower-bound caveat


def test_finding_says_when_even_the_fastest_tool_left_the_server_idle() -> None:
    cells = [cell("a", "loadgen", 20_000, 200_000, 10.0, srv_cpu=40), cell("a", "wrk", 19_000, 190_000, 10.0)]
    assert "Even under loadgen the server used 40 % of its CPU" in collect(1, cells, {}).tools[0].finding


def test_a_tool_killed_at_its_deadline_keeps_the_servers_count_and_is_flagged() -> None:
    from serverbench.exporters.tools_section import flags
    killed = cell("a", "drill", None, 300_000, 42.0, wall=42.0)
    killed.metrics.tool.exit_code = None  # what session.py stores for a tool it had to kill
    done = cell("a", "loadgen", 50_000, 500_000, 10.0, wall=10.0)
    done.metrics.tool.exit_code = 0
    rows = {r.tool: r for r in collect(1, [done, killed], {}).tools[0].rows}
    assert rows["drill"].killed == 1 and rows["loadgen"].killed == 0
    assert rows["drill"].server_counted_rps == pytest.approx(300_000 / 42.0) and rows["drill"].ratio is None
    assert "killed at its deadline in 1 of 1 runs" in flags(rows["drill"])
