"""The db-outage workload (issue 46, item 4): the verdict rules on made-up timelines, the point's rules,
and end to end against the harness's own PostgreSQL with real loadgen: a reference row that reconnects
recovers, one that keeps its broken connection stays broken, one that exits crashes; the restart loses
no acknowledged write; a harness SIGKILLed while PostgreSQL is frozen leaves nothing running."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from serverbench import paths
from serverbench.catalog import doctor
from serverbench.catalog import workloads as wl
from serverbench.catalog.manifests import Choices, load_catalog
from serverbench.catalog.workloads import Point
from serverbench.exporters import to_html, to_markdown
from serverbench.model import RunOptions
from serverbench.overtime import outage
from serverbench.overtime.timeline import LoadSecond
from serverbench.results import aggregate
from serverbench.run.runner import run_matrix
from serverbench.store import Store

HERE = Path(__file__).parent
REFSERVER = HERE / "fixtures" / "refserver.py"
FIXTURES = HERE / "fixtures" / "run" / "servers"
CHILD = HERE / "fixtures" / "lifecycle" / "outage_child.py"
LOADGEN = paths.loadgen_binary()
needs_all = pytest.mark.skipif(doctor.postgres_bindir() is None or not LOADGEN.is_file(),
                               reason="needs PostgreSQL's server binaries and the loadgen binary (make loadgen)")


def _s(t: int, ok: int, failed: int = 0, p99_ms: float = 2.0) -> LoadSecond:
    return LoadSecond(t, ok + failed, ok, 0, failed, 1000.0, 1500.0, p99_ms * 1000, p99_ms * 1000, 100.0, 4)


def _timeline(during: list[tuple[int, int, float]], after: list[int]) -> list[LoadSecond]:
    """Seconds 1–4 at 100/s, then `during` (ok, failed, p99 ms), then `after` (ok)."""
    out = [_s(t, 100) for t in range(1, 5)]
    for ok, failed, p99 in during:
        out.append(_s(len(out) + 1, ok, failed, p99))
    return out + [_s(len(out) + 1 + i, ok) for i, ok in enumerate(after)]


def test_a_row_back_within_two_seconds_recovers_and_failing_fast_is_named() -> None:
    seconds = _timeline([(40, 60, 20.0)], [99, 100, 100, 100])
    v = outage.judge(seconds, "restart", 4.2, 4.9)
    assert v is not None and (v.verdict, v.during) == (outage.RECOVERS, outage.FAILS_FAST), v
    assert v.rate_before_ok_rps == 100.0 and v.recovered_after_s == 0.1 and v.failed_after_outage == 60


def test_a_row_back_later_recovers_slowly_and_says_when() -> None:
    seconds = _timeline([(0, 0, 0.0)] * 5, [10, 20, 30, 100, 100, 100])
    v = outage.judge(seconds, "freeze", 4.0, 9.0)
    assert v is not None and v.verdict == outage.SLOWLY and v.recovered_after_s == 3.0, v
    assert v.during == outage.HANGS  # nothing ended while the database was away
    assert "3.0 s after the database" in v.reason


def test_a_row_never_back_stays_broken_and_one_that_exited_crashes() -> None:
    broken = _timeline([(0, 100, 1.0)], [0, 0, 0, 0])
    v = outage.judge(broken, "restart", 4.1, 4.8)
    assert v is not None and (v.verdict, v.during) == (outage.STAYS_BROKEN, outage.FAILS_FAST), v
    assert outage.judge(broken, "restart", 4.1, 4.8, died_at_s=5.2).verdict == outage.CRASHES


def test_a_burst_that_falls_again_is_not_a_recovery_and_a_row_that_noticed_nothing_rides_through() -> None:
    burst = _timeline([(0, 0, 0.0)], [150, 20, 20, 20])
    assert outage.judge(burst, "freeze", 4.0, 5.0).verdict == outage.STAYS_BROKEN
    calm = _timeline([(100, 0, 3.0)], [100, 100])
    v = outage.judge(calm, "restart", 4.3, 4.6)
    assert (v.verdict, v.during) == (outage.RECOVERS, outage.RIDES)
    slow = _timeline([(100, 0, 900.0)], [100, 100])
    assert outage.judge(slow, "restart", 4.3, 4.6).during == outage.HANGS


def test_no_outage_no_verdict() -> None:
    assert outage.judge(_timeline([], [100]), "restart", None, None) is None
    assert outage.judge([], "restart", 1.0, 2.0) is None


def test_an_outage_point_is_open_load_at_a_fixed_rate_with_the_outage_inside_it() -> None:
    base = {"label": "x", "mode": "open", "rate": 100, "duration": "10s", "outage": "freeze", "outage_at": "2s",
            "outage_for": "3s"}
    assert Point(**base).outage == "freeze"
    for bad, words in (({"rate": "50%"}, "fixed rate"), ({"outage_at": None}, "outage_at"),
                       ({"outage_for": None}, "outage_for"), ({"outage_for": "9s"}, "inside the point"),
                       ({"outage": "restart"}, "outage_for")):
        with pytest.raises(ValueError, match=words):
            Point(**{**base, **bad})
    with pytest.raises(ValueError, match="belong to a point with outage"):
        Point(label="y", mode="open", rate=1, duration="1s", outage_at="1s")


WORKLOAD = """name = "outage-test"
description = "a short restart"
origin = "serverbench"
kind = "db-outage"
path = "/db"
features = ["db"]
[quick]
warmup = "200ms"
[[quick.points]]
label = "restart"
mode = "open"
rate = 100
connections = 8
max_connections = 64
duration = "7s"
timeout = "1s"
outage = "restart"
outage_at = "2s"
[full]
warmup = "200ms"
[[full.points]]
label = "restart"
mode = "open"
rate = 100
connections = 8
max_connections = 64
duration = "7s"
timeout = "1s"
outage = "restart"
outage_at = "2s"
"""
DB_CHOICES = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on", "db_driver": "psycopg",
              "db_pool": "one connection", "db_wait": "blocking", "db_pipelining": "off", "db_prepared": "off"}


@needs_all
def test_a_restart_tells_a_row_that_reconnects_from_one_that_stays_broken_and_one_that_crashes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "outage-test.toml").write_text(WORKLOAD)
    plain = load_catalog(FIXTURES).servers["py-ok"]
    rows = [plain.model_copy(update={"id": f"ref-{mode}", "name": f"ref-{mode}", "choices": Choices(**DB_CHOICES),
                                     "run": f"DB_ON_ERROR={mode} exec {sys.executable} {REFSERVER}"})
            for mode in ("reconnect", "keep", "exit")]
    cpus = sorted(os.sched_getaffinity(0))
    opts = RunOptions(servers=[r.id for r in rows], workloads=["outage-test"], repeat=1, allow_unverified=True,
                      ready_timeout=10, server_cpus=[cpus[0]], client_cpus=[cpus[-1]])
    store = Store(tmp_path / "r.db")
    res = run_matrix(store, opts, manifests=rows, workloads=[wl.load_workloads(tmp_path / "w")["outage-test"]],
                     fingerprint={})
    cells = {c.server: c for c in store.cells(res.run_id)}
    got = {s: (c.status, c.metrics.outage.outage_verdict) for s, c in cells.items()}
    assert got == {"ref-reconnect": ("ok", outage.RECOVERS), "ref-keep": ("ok", outage.STAYS_BROKEN),
                   "ref-exit": ("ok", outage.CRASHES)}, {s: c.metrics.outage.outage_reason or c.error
                                                         for s, c in cells.items()}
    ok = cells["ref-reconnect"].metrics.outage
    assert ok.outage_start_s is not None and 1.5 < ok.outage_start_s < 3.0 and ok.outage_end_s > ok.outage_start_s
    # the harness's own writes through /updates, about 20 a second: every acknowledged one is in the table
    assert ok.acknowledged_writes and ok.acknowledged_writes > 20 and ok.lost_writes == 0, ok
    assert cells["ref-exit"].metrics.over_time.server_died_at_s is not None
    # the report: ranked by the verdict, every row's rate on one axis, the rules and the writes stated
    w = wl.load_workloads(tmp_path / "w")["outage-test"]
    fp = {"cpu_model": "test", "cores": 2, "workloads": {"outage-test": w.facts()}}
    run = SimpleNamespace(id=res.run_id, fingerprint=fp, options={}, status="finished",
                          started_at="2026-01-01T00:00:00", finished_at=None)
    results = aggregate.collect(res.run_id, store.cells(res.run_id), fp, facts={})
    pt = results.workloads[0].points[0]
    assert [g.server for g in pt.groups] == ["ref-reconnect", "ref-keep", "ref-exit"]
    md = to_markdown.render(run, results).decode()
    line = next(x for x in md.splitlines() if x.startswith("| 1 | ref-reconnect"))
    assert "| recovers |" in line and "| 0 of " in line, line
    assert "At a glance: recovers: ref-reconnect (" in md and "; stays broken: ref-keep; crashes: ref-exit." in md
    assert "- stays broken:" in md and "- during the outage, fails fast:" in md and "Acknowledged writes" in md
    page = to_html.render(run, results).decode()
    assert "of every row" in page and "database away" in page and "grey: the database away" in page
    assert 'class="sub">1 workload · ' in page  # one workload, said in the singular
    # the start's log is the point's own (a workload whose points each get a start keeps a log per point)
    assert (paths.run_logs(res.run_id, store.path) / "ref-keep.outage-test.restart.r1.log").is_file()


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


@needs_all
def test_a_harness_killed_while_postgres_is_frozen_leaves_nothing_running(tmp_path: Path) -> None:
    h = subprocess.Popen([sys.executable, str(CHILD), str(tmp_path / "r.db"), str(tmp_path / "logs")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    kids: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and h.poll() is None:
            kids = _descendants(h.pid)
            stopped = [k for k in kids if _status(k) == psutil.STATUS_STOPPED]
            if any("serverbench.database.freeze" in " ".join(_cmdline(k)) for k in kids) and len(stopped) > 1:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"PostgreSQL was never frozen under the harness: {_output(h)}")
        kids = _descendants(h.pid)
        os.kill(h.pid, signal.SIGKILL)
        h.wait(10)
        left = _left(kids, within_s=15)
        assert left == [], f"left running after a SIGKILL of the harness during a freeze: {left}"
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()
        for k in kids:
            if _status(k) not in (None, psutil.STATUS_ZOMBIE):
                k.send_signal(signal.SIGCONT)
                k.kill()


def _status(p: psutil.Process) -> str | None:
    try:
        return p.status()
    except psutil.Error:
        return None


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _left(procs: list[psutil.Process], within_s: float) -> list[str]:
    deadline = time.monotonic() + within_s
    while True:
        left = [p for p in procs if _status(p) not in (None, psutil.STATUS_ZOMBIE)]
        if not left or time.monotonic() > deadline:
            return [f"{p.pid} {' '.join(_cmdline(p))[:60]} ({_status(p)})" for p in left]
        time.sleep(0.2)


def _output(h: subprocess.Popen[bytes]) -> str:
    if h.poll() is None:
        return "still running"
    return (h.stdout.read() if h.stdout else b"").decode(errors="replace")[-500:]
