"""h2load in the cross-check (issue 47 item 5): what it is given for an HTTP/2 point, what it refuses, and
its output read into the figures the report compares with the server's own count."""
from __future__ import annotations

from serverbench.catalog.workloads import Point
from serverbench.crosscheck.parsers import ToolOutputError, parse
from serverbench.crosscheck.translate import Invocation, Unsupported, translate
from serverbench.rules.tools import DEFAULT_ORDER, TOOLS

BASE = "http://127.0.0.1:8080"
H2C = Point(label="h2c", connections=256, duration="4s", timeout="10s", http2="h2c", streams=100)
H2 = Point(label="h2", connections=256, duration="4s", timeout="10s", tls="rsa", http2="h2", streams=100)
PLAIN = Point(label="c=256", connections=256, duration="4s")

# recorded here from `h2load -c 16 -m 10 -D 3 http://127.0.0.1:19001/json` against go-nethttp (h2c)
OUTPUT = """starting benchmark...
spawning thread #0: 16 total client(s). Timing-based test with 0s of warm-up time and 3s of main duration for measurements.
Warm-up phase is over for thread #0.
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 3.00s, 25366.67 req/s, 1.19MB/s
requests: 76100 total, 76260 started, 76100 done, 76100 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 76100 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 3.57MB (3745224) total, 1.09MB (1141948) headers (space savings 72.44%), 2.03MB (2131600) data
                     min         max         mean         sd        +/- sd
time for request:      113us     28.78ms      6.12ms      2.23ms    71.20%
time for connect:      172us      1.25ms       720us       378us    62.50%
time to 1st byte:     1.86ms     12.37ms      6.14ms      3.01ms    68.75%
req/s           :    1488.94     1688.52     1585.38       52.12    68.75%
"""


def test_h2load_is_a_known_tool_from_debian() -> None:
    assert "h2load" in DEFAULT_ORDER
    assert TOOLS["h2load"].install_hint().endswith("apt-get install -y nghttp2-client)")


def test_an_http2_point_becomes_connections_streams_and_a_duration() -> None:
    out = translate("h2load", H2C, BASE, 2)
    assert isinstance(out, Invocation)
    assert out.args == ["-c", "256", "-m", "100", "-t", "2", "-D", "4", BASE + "/tenth?ms=0"]
    assert any("1 GiB" in n for n in out.notes), "the windows differ from loadgen's, said beside the figures"
    tls = translate("h2load", H2, BASE, 1, tls_ca="/run/ca.pem")
    assert isinstance(tls, Invocation) and tls.args[-1].startswith("https://")
    assert any("does not verify" in n for n in tls.notes)


def test_what_h2load_and_the_http1_tools_refuse() -> None:
    plain = translate("h2load", PLAIN, BASE, 1)
    assert isinstance(plain, Unsupported) and "HTTP/2 points" in plain.reason
    wrk = translate("wrk", H2C, BASE, 1)
    assert isinstance(wrk, Unsupported) and "loadgen and h2load" in wrk.reason
    opened = translate("h2load", Point(label="o", mode="open", rate=100, duration="2s", http2="h2c"), BASE, 1)
    assert isinstance(opened, Unsupported) and "closed loop" in opened.reason
    assert isinstance(translate("loadgen", H2C, BASE, 1), Invocation)


def test_h2load_output_is_read_into_counts_and_its_max() -> None:
    f = parse("h2load", OUTPUT, "", {})
    assert (f.requests, f.ok, f.errors, f.timeouts, f.reported_rps) == (76100, 76100, 0, 0, 25366.67)
    assert (f.duration_s, f.max_us, f.p99_us) == (3.0, 28780.0, None)


def test_h2load_failures_and_statuses_are_errors_and_no_summary_is_one_line() -> None:
    bad = OUTPUT.replace("76100 succeeded, 0 failed, 0 errored, 0 timeout", "76000 succeeded, 100 failed, 60 errored, "
                         "40 timeout").replace("76100 2xx, 0 3xx, 0 4xx, 0 5xx", "75990 2xx, 0 3xx, 10 4xx, 0 5xx")
    f = parse("h2load", bad, "", {})
    assert (f.ok, f.errors, f.timeouts) == (76000, 110, 40)
    assert f.error_classes == {"status": 10, "errored": 60, "timeout": 40}
    try:
        parse("h2load", "connect to 127.0.0.1 port 1 failed: Connection refused\n", "", {})
    except ToolOutputError as e:
        assert "no summary" in str(e) and "\n" not in str(e)
    else:
        raise AssertionError("no summary must be an error")
