"""The TLS workloads (workloads/tls-*.toml) as files and as loadgen command lines, and loadgen's `tls`
object read into a cell's figures (processes/loadgen.py, rules/tlsfigures.py)."""
from __future__ import annotations

import copy
from typing import get_args

import pytest
from hdrh.histogram import HdrHistogram

from serverbench.catalog import workloads as wl
from serverbench.model import CellMetrics, CellRecord, LoadgenReport
from serverbench.processes import loadgen
from serverbench.processes.loadgen import LoadgenError, LoadgenResult
from serverbench.rules import tlsfigures
from serverbench.exporters import tls_section
from serverbench.run import measure
from serverbench.tls.certs import KEY_TYPES

CA = "/run/logs/run-7/tls/ca.pem"


def _line(p: wl.Point, default_path: str, ca: str | None = CA) -> list[str]:
    return loadgen.command_line(p, "http://127.0.0.1:8080", default_path, threads=1, json_path="o", tls_ca=ca)


def test_tls_json_has_a_plaintext_twin_and_an_rsa_point_of_the_same_load() -> None:
    w = wl.load_workloads()["tls-json"]
    assert (w.path, w.features, w.kind) == ("/json", ["tls"], "throughput")
    for size in (w.quick, w.full):
        plain, tls = size.points
        assert (plain.label, plain.tls, tls.label, tls.tls) == ("plain", None, "tls", "rsa")
        assert plain.connections == tls.connections == 400 and plain.keepalive and tls.keepalive
        assert plain.model_dump(exclude={"label", "tls"}) == tls.model_dump(exclude={"label", "tls"})
        assert _line(plain, w.path)[0] == "http://127.0.0.1:8080/json" and "--tls-ca" not in _line(plain, w.path)
        args = _line(tls, w.path)
        assert args[0] == "https://127.0.0.1:8080/json" and args[args.index("--tls-ca") + 1] == CA
        assert "--no-keepalive" not in args and "--tls-resume" not in args
    assert sum(p.planned_seconds() for p in w.quick.points) <= 15 < sum(p.planned_seconds() for p in w.full.points)


def test_tls_handshake_opens_a_connection_per_request_for_each_key_type() -> None:
    w = wl.load_workloads()["tls-handshake"]
    assert sorted(w.features) == ["new-connection-per-request", "tls"]
    for size in (w.quick, w.full):
        assert [(p.label, p.tls) for p in size.points] == [("rsa", "rsa"), ("ecdsa", "ecdsa")]
        for p in size.points:
            args = _line(p, w.path)
            # Connection: close on every request (loadgen's --no-keepalive), resumption off (no --tls-resume)
            assert args[0].startswith("https://127.0.0.1:8080/") and "--no-keepalive" in args
            assert "--tls-resume" not in args and args[args.index("--tls-ca") + 1] == CA


def test_a_tls_point_needs_the_ca_and_the_feature() -> None:
    p = wl.Point(label="x", duration="1s", tls="ecdsa")
    with pytest.raises(ValueError, match="needs the run's CA"):
        _line(p, "/", ca=None)
    assert _line(p, "/")[0] == "https://127.0.0.1:8080/"
    base = {"name": "x", "description": "d", "origin": "o", "kind": "throughput",
            "quick": {"points": [{"label": "a", "duration": "1s", "tls": "rsa"}]},
            "full": {"points": [{"label": "a", "duration": "1s"}]}}
    with pytest.raises(ValueError, match=r"its points use tls but features does not say so"):
        wl.Workload.model_validate(base)
    assert wl.Workload.model_validate({**base, "features": ["tls"]}).quick.points[0].tls == "rsa"
    with pytest.raises(ValueError, match="tls"):
        wl.Point(label="x", duration="1s", tls="dsa")
    with pytest.raises(ValueError, match="noise speaks plain HTTP"):
        wl.Point(label="x", duration="1s", tls="rsa", noise="idle")


def test_the_key_types_are_the_certificates_the_harness_makes() -> None:
    point = next(a for a in get_args(wl.Point.model_fields["tls"].annotation) if a is not type(None))
    assert get_args(point) == get_args(tlsfigures.KeyType) == tls_section.KEY_TYPES == KEY_TYPES


def test_warm_up_and_calibration_loads_keep_the_key_type() -> None:
    p = wl.Point(label="o", mode="open", rate="50%", duration="2s", tls="rsa", keepalive=False)
    assert measure.calibration_point(p).tls == "rsa" and measure.warmup_point(p, "1s").tls == "rsa"
    assert measure.steady_point(p).tls == "rsa"
    assert measure.warmup_point(wl.Point(label="c", duration="1s", tls="ecdsa"), "1s").tls == "ecdsa"


def _hist(values: list[int]) -> str:
    h = HdrHistogram(1, 3_600_000_000, 3)
    for v in values:
        h.record_value(v)
    return h.encode().decode()


TLS = {"provider": "rustls 0.23 (ring)", "resumption": False, "alpn": "http/1.1", "version": "TLSv1_3",
       "suite": "TLS13_AES_256_GCM_SHA384", "handshakes": 1200, "resumed": 0,
       "handshake_latency": {"min": 300, "mean": 900.5, "stdev": 10, "p50": 800, "p75": 900, "p90": 1000,
                             "p99": 4100, "p99_9": 5000, "p99_99": 5000, "max": 6000},
       "handshake_histogram": _hist([800, 4100]), "handshake_errors": {"alert": 2, "timeout": 1, "reset": 0}}
REPORT = {"schema": "loadgen/1", "config": {"connections": 64}, "duration_s": 2.0,
          "summary": {"requests": 1203, "ok": 1200, "errors": 3, "rps": 600.0,
                      "latency_us": {"p50": 900.0, "p99": 5000.0}}, "tls": TLS}


def _result(report: dict) -> LoadgenResult:
    return LoadgenResult(report=LoadgenReport.parse(report, "test"), args=[], wall_s=2.0, client_cpu_s=1.0,
                         client_cpu_percent=50.0, client_saturated=False, client_cores=1)


def test_loadgens_tls_object_becomes_the_cells_figures() -> None:
    metrics = measure.loadgen_metrics(_result(REPORT), "rsa")
    cell = CellMetrics.model_validate({**metrics, "cpu_user_s": 0.9, "cpu_sys_s": 0.3})
    stored = CellMetrics.load(cell.dump())  # as the store writes and reads it back
    t = tlsfigures.stored(stored)
    assert t == tlsfigures.TlsFigures(key_type="rsa", provider="rustls 0.23 (ring)", resumption=False,
                                      alpn="http/1.1", version="TLSv1_3", suite="TLS13_AES_256_GCM_SHA384",
                                      handshakes=1200, resumed=0, handshake_p50_us=800, handshake_p99_us=4100,
                                      handshake_max_us=6000, handshake_errors={"alert": 2, "timeout": 1, "reset": 0})
    assert t.failed == 3 and "handshake_histogram" not in stored.tls  # the histogram stays in the loadgen report
    assert tlsfigures.server_cpu_per_handshake_us(stored) == pytest.approx(1e6 * 1.2 / 1200)
    # p99 over repetitions: exact from the merged histograms, else the median of the stored p99s
    report = LoadgenReport.parse(REPORT, "t")
    cells = [CellRecord("s", "w", "p", r, "ok", loadgen=report, metrics=stored) for r in (1, 2)]
    assert tlsfigures.handshake_p99_us(cells) == pytest.approx(4100, rel=0.01)
    bare = copy.deepcopy(REPORT)
    bare["tls"]["handshake_histogram"] = None
    cells[1].loadgen = LoadgenReport.parse(bare, "t")
    assert tlsfigures.handshake_p99_us(cells) == 4100  # median of the cells' own


def test_plaintext_has_no_tls_figures_and_a_broken_object_is_one_line() -> None:
    plain = {k: v for k, v in REPORT.items() if k != "tls"}
    assert measure.loadgen_metrics(_result(plain))["tls"] is None
    assert measure.loadgen_metrics(_result({**plain, "tls": None}))["tls"] is None
    with pytest.raises(LoadgenError, match="no `tls` object for a tls point"):
        measure.loadgen_metrics(_result(plain), "ecdsa")
    broken = copy.deepcopy(REPORT)
    del broken["tls"]["handshakes"]
    with pytest.raises(LoadgenError, match=r"field tls\.handshakes: Field required; rebuild loadgen"):
        measure.loadgen_metrics(_result(broken), "rsa")
