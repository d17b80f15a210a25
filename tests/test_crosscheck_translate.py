"""The translation of each workload kind into each tool's own terms, and what each cannot express."""
from __future__ import annotations

import json
import re

import pytest

from serverbench.crosscheck.session import CrosscheckError, check_servers, ordered_tools
from serverbench.crosscheck.translate import Invocation, Unsupported, translate
from serverbench.catalog.workloads import Point, load_workloads

BASE = "http://127.0.0.1:8080"
URL = BASE + "/tenth?ms=0"
CLOSED = Point(label="c=400", connections=400, duration="6s", timeout="2s")
COUNT = Point(label="c=100", connections=100, requests=5000, keepalive=False, time_limit="10s")
OPEN = Point(label="rate=10k", mode="open", rate=10000, duration="5s")
SESSIONS = Point(label="users=500", mode="sessions", users=500, spawn_rate=100, think="500ms", think_jitter=50,
                 duration="10s")
TLS = Point(label="tls", connections=400, duration="6s", timeout="10s", tls="rsa")
CA = "/run/tls/ca.pem"


def inv(tool: str, p: Point, hint: int | None = None, cores: int = 1) -> Invocation:
    out = translate(tool, p, BASE, cores, count_hint=hint)
    assert isinstance(out, Invocation), out
    return out


def refused(tool: str, p: Point) -> str:
    out = translate(tool, p, BASE, 1)
    assert isinstance(out, Unsupported), out
    return out.reason


# -- closed load for a duration (prantl-wrk) ------------------------------------------------------
def test_closed_duration_per_tool() -> None:
    assert inv("wrk", CLOSED).args == ["-t", "1", "-c", "400", "-d", "6s", "--timeout", "2s", "--latency", URL]
    assert inv("hey", CLOSED).args == ["-c", "400", "-t", "2", "-cpus", "1", "-z", "6s", URL]
    assert inv("oha", CLOSED).args == ["--no-tui", "--output-format", "json", "-t", "2s", "-c", "400", "-z", "6s", URL]
    ab = inv("ab", CLOSED, hint=150_000)
    assert ab.args == ["-t", "6", "-c", "400", "-s", "2", "-l", "-r", "-q", "-k", "-n", "300000", URL]
    assert any("-t alone caps at 50,000" in n for n in ab.notes)
    lg = inv("loadgen", CLOSED)
    assert lg.args[:1] == [URL] and "--connections" in lg.args and "400" in lg.args
    assert "--warmup" not in lg.args


def test_wrk_threads_follow_the_client_cores() -> None:
    assert inv("wrk", CLOSED, cores=4).args[:2] == ["-t", "4"]
    assert inv("wrk", CLOSED, cores=4).cores == 4
    assert inv("ab", CLOSED, cores=4).cores == 1  # one thread whatever the CPUs


def test_k6_closed_is_constant_vus() -> None:
    i = inv("k6", CLOSED)
    opts = json.loads(re.search(r"export const options = (\{.*?\n\});", i.files["script.js"], re.S).group(1))
    sc = opts["scenarios"]["crosscheck"]
    assert sc == {"executor": "constant-vus", "vus": 400, "duration": "6s", "gracefulStop": "0s"}
    assert opts["noConnectionReuse"] is False
    assert "timeout: '2s'" in i.files["script.js"] and URL in i.files["script.js"]
    assert "--no-usage-report" in i.args  # nothing leaves the machine


def test_locust_closed_spawns_every_user_at_once() -> None:
    i = inv("locust", CLOSED)
    assert i.args[i.args.index("-u") + 1] == "400" and i.args[i.args.index("-r") + 1] == "400"
    assert i.args[i.args.index("-t") + 1] == "6s" and "--headless" in i.args
    assert "wait_time = constant(0)" in i.files["locustfile.py"]
    assert 'self.client.get("/tenth?ms=0"' in i.files["locustfile.py"]


def test_drill_on_a_duration_needs_loadgens_count() -> None:
    assert "no duration" in refused("drill", CLOSED)
    i = inv("drill", CLOSED, hint=12345)
    plan = json.loads(i.files["plan.yml"])
    assert plan["iterations"] == 12345 and plan["concurrency"] == 400
    assert plan["plan"][0]["request"]["url"] == "/tenth?ms=0" and plan["base"] == BASE
    assert any("12,345 iterations" in n for n in i.notes)


# -- closed load for a request count without keep-alive (deepu-ab) --------------------------------
def test_count_without_keepalive_per_tool() -> None:
    ab = inv("ab", COUNT).args
    assert ab == ["-t", "10", "-c", "100", "-s", "10", "-l", "-r", "-q", "-n", "5000", URL]  # no -k
    assert "-disable-keepalive" in inv("hey", COUNT).args and "-n" in inv("hey", COUNT).args
    oha = inv("oha", COUNT).args
    assert "--disable-keepalive" in oha and oha[oha.index("-n") + 1] == "5000"
    k6 = inv("k6", COUNT).files["script.js"]
    assert '"executor": "shared-iterations"' in k6 and '"iterations": 5000' in k6
    assert '"noConnectionReuse": true' in k6
    assert json.loads(inv("drill", COUNT).files["plan.yml"])["plan"][0]["request"]["headers"] == {"Connection": "close"}
    assert "no request count" in refused("wrk", COUNT)
    assert "no request count" in refused("locust", COUNT)


def test_wrk_without_keepalive_says_how() -> None:
    i = inv("wrk", CLOSED.model_copy(update={"keepalive": False}))
    assert i.args[-3:-1] == ["-H", "Connection: close"]
    assert any("Connection: close" in n for n in i.notes)


# -- open load (latency-at-rate) ------------------------------------------------------------------
def test_open_load_per_tool() -> None:
    assert "no open load" in refused("wrk", OPEN)
    assert "no rate" in refused("ab", OPEN)
    assert "no open load" in refused("drill", OPEN)
    assert "no open load" in refused("locust", OPEN)
    oha = inv("oha", OPEN)
    assert oha.args[oha.args.index("-q") + 1] == "10000" and "--latency-correction" in oha.args
    assert oha.co_corrected
    hey = inv("hey", OPEN)
    assert hey.args[hey.args.index("-q") + 1] == "10" and hey.args[hey.args.index("-c") + 1] == "1000"
    assert not hey.co_corrected and any("per-worker pace" in n for n in hey.notes)
    k6 = inv("k6", OPEN).files["script.js"]
    assert '"executor": "constant-arrival-rate"' in k6 and '"rate": 10000.0' in k6
    lg = inv("loadgen", OPEN)
    assert lg.co_corrected and "--rate" in lg.args and "--warmup" not in lg.args


# -- sessions (locust-users) ----------------------------------------------------------------------
def test_sessions_per_tool() -> None:
    loc = inv("locust", SESSIONS)
    assert loc.args[loc.args.index("-r") + 1] == "100" and "between(0.25, 0.75)" in loc.files["locustfile.py"]
    k6 = inv("k6", SESSIONS).files["script.js"]
    assert '"executor": "ramping-vus"' in k6 and '"target": 500' in k6 and "sleep(0.25 + Math.random() * 0.5)" in k6
    for tool in ("wrk", "ab", "hey", "oha", "drill"):
        refused(tool, SESSIONS)


# -- what nobody but loadgen takes ----------------------------------------------------------------
def test_pipelining_capacity_and_calibrated_rates_are_refused() -> None:
    piped = CLOSED.model_copy(update={"pipeline": 16})
    assert "does not pipeline" in refused("wrk", piped)
    assert isinstance(translate("loadgen", piped, BASE, 1), Invocation)
    cap = Point(label="cap", mode="capacity", start_rate=1000)
    assert "capacity" in refused("oha", cap)
    pct = Point(label="half", mode="open", rate="50%", duration="5s")
    assert "calibrated" in refused("k6", pct)


def test_every_tool_on_every_real_workload_either_runs_or_says_why() -> None:
    tools = ("loadgen", "wrk", "ab", "oha", "hey", "k6", "drill", "locust")
    for w in load_workloads().values():
        if w.includes:
            continue
        for p in w.size(False).points:
            for t in tools:
                out = translate(t, p, BASE, 1, count_hint=1000, tls_ca=CA if p.tls else None)
                if isinstance(out, Unsupported):
                    assert out.reason and out.tool == t
                else:
                    assert out.limit_s > out.planned_s > 0 or p.requests is not None
                    urls = [x for i, x in enumerate(out.args) if x.startswith("http") and out.args[i - 1] != "--host"]
                    assert all("/tenth?ms=0" in x for x in urls), (w.name, t, out.args)


def test_loadgen_first_then_the_others_reversed_on_even_repetitions() -> None:
    assert ordered_tools(["wrk", "ab", "loadgen", "k6"], 1) == ["loadgen", "wrk", "ab", "k6"]
    assert ordered_tools(["wrk", "ab", "loadgen", "k6"], 2) == ["loadgen", "k6", "ab", "wrk"]
    assert ordered_tools(["wrk"], 1) == ["wrk"]


def test_per_process_counters_are_refused() -> None:
    class M:
        id, counter = "node-cluster", "per-process"
    with pytest.raises(CrosscheckError, match="counts /tenth per process"):
        check_servers([M()])


def test_a_tls_point_is_https_for_wrk_and_verified_by_loadgen() -> None:
    wrk = translate("wrk", TLS, BASE, 1, tls_ca=CA)
    assert isinstance(wrk, Invocation)
    assert wrk.args[-1] == "https://127.0.0.1:8080/tenth?ms=0" and "--tls-ca" not in wrk.args
    assert any("does not verify" in n for n in wrk.notes)
    lg = translate("loadgen", TLS, BASE, 1, tls_ca=CA)
    assert isinstance(lg, Invocation)
    assert lg.args[0] == "https://127.0.0.1:8080/tenth?ms=0"
    assert lg.args[lg.args.index("--tls-ca") + 1] == CA
    plain = TLS.model_copy(update={"tls": None})  # its plaintext twin is unchanged
    assert inv("wrk", plain).args[-1] == URL and "--tls-ca" not in inv("loadgen", plain).args


def test_a_tls_point_without_the_runs_ca_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="needs the run's CA"):
        translate("wrk", TLS, BASE, 1)


@pytest.mark.parametrize("tool", ["ab", "oha", "hey", "k6", "drill", "locust"])
def test_other_tools_refuse_a_tls_point_naming_themselves(tool: str) -> None:
    out = translate(tool, TLS, BASE, 1, count_hint=1000, tls_ca=CA)
    assert isinstance(out, Unsupported)
    assert out.reason == f"{tool}: TLS points are cross-checked with wrk, h2load and loadgen only"


def test_a_workload_with_tls_points_is_cross_checked() -> None:
    from serverbench.crosscheck.session import check_workload
    tls = load_workloads()["tls-json"]
    assert [p.tls for p in tls.size(False).points] == [None, "rsa"]
    check_workload(tls, False)  # no longer refused
    check_workload(load_workloads()["prantl-wrk"], False)
