"""loadgen.py against a fake loadgen (same CLI, real HTTP, loadgen/1 JSON) and a tiny server."""
import os
import sys
import time
from pathlib import Path

import psutil
import pytest
from hdrh.histogram import HdrHistogram

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from serverbench.processes.loadgen import LoadgenError, run_loadgen, validate, version  # noqa: E402
from serverbench.catalog.workloads import Point  # noqa: E402

POINT = Point(label="c=1", connections=1, duration="300ms")


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = runfix.fake_loadgen(tmp_path)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(exe))
    monkeypatch.setenv("FAKE_LOADGEN_LOG", str(log))
    return log


def test_missing_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(tmp_path / "nope"))
    with pytest.raises(LoadgenError, match=r"^loadgen binary not found at .*nope; build it with `make loadgen`$"):
        run_loadgen("http://127.0.0.1:1", POINT, default_path="/", client_cpus=None)
    assert version() is None


def test_runs_pinned_parses_json_and_measures_client_cpu(fake: Path) -> None:
    cpu = sorted(os.sched_getaffinity(0))[-1]
    with runfix.tiny_server() as url:
        r = run_loadgen(url, POINT, default_path="/json", client_cpus=[cpu])
    assert r.report.schema_ == "loadgen/1" and r.report.summary.ok > 10 and r.report.summary.errors == 0
    [call] = runfix.log_lines(fake)
    assert call["affinity"] == [cpu]
    assert call["argv"][:5] == [f"{url}/json", "--connections", "1", "--duration", "300ms"]
    assert call["argv"][-5:] == ["--threads", "1", "--json", call["argv"][-2], "--quiet"]
    assert not Path(call["argv"][-2]).exists()  # temp result removed after a good run
    assert 0.3 <= r.wall_s < 10
    assert r.client_cpu_s > 0 and 0 < r.client_cpu_percent < 200 and r.client_cores == 1
    assert r.client_saturated == (r.client_cpu_percent >= 90)
    h = HdrHistogram.decode(r.report.histograms.latency)
    assert h.get_total_count() == r.report.summary.requests
    assert version() == "loadgen 0.0.0-fake"


@pytest.mark.parametrize("behaviour, message", [
    ("bad-schema", r"serverbench-loadgen-.*\.json: schema is 'nope/0', expected 'loadgen/1'"),
    ("garbage", r"serverbench-loadgen-.*\.json: invalid JSON from loadgen"),
    ("exit1", r"loadgen exited with code 1: loadgen: fatal: simulated failure"),
])
def test_bad_results_are_one_line_errors(fake: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str,
                                         message: str) -> None:
    monkeypatch.setenv("FAKE_LOADGEN_BEHAVIOUR", behaviour)
    with runfix.tiny_server() as url, pytest.raises(LoadgenError, match=message) as e:
        run_loadgen(url, POINT, default_path="/", client_cpus=None)
    assert "\n" not in str(e.value)
    if behaviour != "exit1":  # the bad file is kept for inspection; the error names it
        kept = Path(str(e.value).split(":")[0])
        assert kept.exists()
        kept.unlink()


def test_overrun_is_killed_within_bounds(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LOADGEN_BEHAVIOUR", "hang")
    t0 = time.monotonic()
    with pytest.raises(LoadgenError, match="overran its 0.2s plan by 1s and was killed"):
        run_loadgen("http://127.0.0.1:1", Point(label="x", connections=1, duration="200ms"),
                    default_path="/", client_cpus=None, timeout_grace=1.0)
    assert time.monotonic() - t0 < 6
    [call] = runfix.log_lines(fake)
    assert not psutil.pid_exists(call["pid"]) or psutil.Process(call["pid"]).status() == psutil.STATUS_ZOMBIE


def test_validate_requires_summary_fields() -> None:
    with pytest.raises(LoadgenError, match="f.json: field summary.rps: Field required"):
        validate({"schema": "loadgen/1", "summary": {"requests": 1, "ok": 1, "errors": 0, "latency_us": {}}}, "f.json")
    with pytest.raises(LoadgenError, match="f.json: schema is None"):
        validate({}, "f.json")
