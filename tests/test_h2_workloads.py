"""The HTTP/2 workloads (workloads/h2-json.toml, h2c-json.toml, h2-streams.toml) and what carries them: a
point's `http2` and `streams` (catalog/workloads.py) as validated fields, features and loadgen options
(processes/loadgen.py), which rows may run them (run/h2_run.py), the server starts they are cut into
(run/tls_run.py), and the manifest's http2_* choices (catalog/manifests.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from conftest import write_manifest
from serverbench.catalog import manifests as catalog
from serverbench.catalog import workloads as wl
from serverbench.model import RunOptions
from serverbench.processes import loadgen
from serverbench.run import h2_run, tls_run

CA = "/run/logs/run-7/tls/ca.pem"
BASE_CHOICES = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on"}


def _line(p: wl.Point, default_path: str = "/json", ca: str | None = CA) -> list[str]:
    return loadgen.command_line(p, "http://127.0.0.1:8080", default_path, threads=1, json_path="o", tls_ca=ca)


def _opt(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


# -- a point's http2 and streams -------------------------------------------------------------------------


def test_h2_is_over_tls_and_h2c_is_cleartext() -> None:
    with pytest.raises(ValueError, match=r'http2 = "h2" is HTTP/2 over TLS: give tls = "rsa" or "ecdsa"'):
        wl.Point(label="x", duration="1s", http2="h2")
    with pytest.raises(ValueError, match=r'http2 = "h2c" is cleartext HTTP/2: a point with tls speaks http2 = "h2"'):
        wl.Point(label="x", duration="1s", http2="h2c", tls="rsa")
    with pytest.raises(ValueError, match="http2"):
        wl.Point(label="x", duration="1s", http2="h3")
    assert wl.Point(label="x", duration="1s", http2="h2", tls="ecdsa").http2 == "h2"
    assert wl.Point(label="x", duration="1s", http2="h2c").tls is None


def test_streams_belong_to_an_http2_point() -> None:
    with pytest.raises(ValueError, match=r"streams \(HTTP/2 streams per connection, >= 1\) belong to a point with "
                                         "http2"):
        wl.Point(label="x", duration="1s", streams=10)
    with pytest.raises(ValueError, match="streams"):
        wl.Point(label="x", duration="1s", http2="h2c", streams=0)
    assert wl.Point(label="x", duration="1s", http2="h2c", streams=100).streams == 100
    assert wl.Point(label="x", duration="1s", http2="h2c").streams is None  # loadgen's default, one


@pytest.mark.parametrize("extra", [
    {"pipeline": 4},
    {"keepalive": False},
    {"mode": "sessions", "users": 10},
    {"mode": "capacity", "start_rate": 100},
    {"mode": "open", "rate": 100, "noise": "idle", "noise_connections": 2},
    {"mode": "open", "rate": 100, "heavy_path": "/delay?ms=50", "heavy_share": 0.1},
], ids=["pipeline", "no-keepalive", "sessions", "capacity", "noise", "heavy"])
def test_an_http2_point_is_closed_or_open_keepalive_load(extra: dict) -> None:
    with pytest.raises(ValueError, match="an http2 point is closed or open keep-alive load without pipeline"):
        wl.Point(label="x", duration="1s", http2="h2c", **extra)
    # the control: the same fields without http2 are a valid point (the error is http2's, not theirs)
    wl.Point(label="x", duration="1s", **extra)
    open_h2 = wl.Point(label="x", mode="open", rate=1000, duration="1s", http2="h2", tls="rsa", streams=10)
    assert (open_h2.mode, open_h2.streams) == ("open", 10)


def test_point_features_name_the_mode() -> None:
    assert wl.point_features(wl.Point(label="a", duration="1s", http2="h2c", streams=10)) == {"h2c"}
    assert wl.point_features(wl.Point(label="a", duration="1s", http2="h2", tls="rsa")) == {"tls", "h2"}
    assert wl.point_features(wl.Point(label="a", duration="1s", tls="rsa")) == {"tls"}
    assert wl.point_features(wl.Point(label="a", duration="1s")) == set()


def test_a_workload_declares_its_http2_features_exactly() -> None:
    base = {"name": "x", "description": "d", "origin": "o", "kind": "throughput",
            "quick": {"points": [{"label": "a", "duration": "1s", "http2": "h2c", "streams": 10}]},
            "full": {"points": [{"label": "a", "duration": "1s"}]}}
    with pytest.raises(ValueError, match=r"its points use h2c but features does not say so; set features = \['h2c'\]"):
        wl.Workload.model_validate(base)
    with pytest.raises(ValueError, match="features lists h2, which no point uses"):
        wl.Workload.model_validate({**base, "features": ["h2c", "h2"]})
    assert wl.Workload.model_validate({**base, "features": ["h2c"]}).quick.points[0].http2 == "h2c"


# -- the workload files ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workloads() -> dict[str, wl.Workload]:
    return wl.load_workloads()


def test_h2_json_sets_http2_over_tls_beside_http11_over_tls(workloads) -> None:
    w = workloads["h2-json"]
    assert (w.path, sorted(w.features), w.kind) == ("/json", ["h2", "tls"], "throughput")
    for size in (w.quick, w.full):
        h1, one, many = size.points
        assert [(p.label, p.tls, p.http2, p.streams) for p in size.points] == [
            ("h1", "rsa", None, None), ("h2-1", "rsa", "h2", 1), ("h2", "rsa", "h2", 100)]
        assert h1.connections == one.connections == many.connections == 256
        # h2-1 is h1's twin: the same load but for the protocol
        assert h1.model_dump(exclude={"label", "http2", "streams"}) == one.model_dump(exclude={"label", "http2",
                                                                                              "streams"})
        args = _line(many, w.path)
        assert args[0] == "https://127.0.0.1:8080/json" and _opt(args, "--tls-ca") == CA
        assert "--http2" in args and _opt(args, "--streams") == "100"
        assert "--http2" not in _line(h1, w.path) and "--streams" not in _line(h1, w.path)
        # the HTTP/1.1 twin on one start, the two HTTP/2 points on another
        assert [[p.label for p in s] for s in tls_run.starts(size.points)] == [["h1"], ["h2-1", "h2"]]


def test_h2c_json_is_cleartext_http2_beside_http11(workloads) -> None:
    w = workloads["h2c-json"]
    assert (w.path, w.features, w.kind) == ("/json", ["h2c"], "throughput")
    for size in (w.quick, w.full):
        assert [(p.label, p.tls, p.http2, p.streams) for p in size.points] == [
            ("h1", None, None, None), ("h2c-1", None, "h2c", 1), ("h2c", None, "h2c", 100)]
        for p in size.points[1:]:
            args = _line(p, w.path, ca=None)
            assert args[0] == "http://127.0.0.1:8080/json" and "--tls-ca" not in args
            assert "--http2" in args and _opt(args, "--streams") == str(p.streams)


def test_h2_streams_keeps_the_demand_in_three_shapes(workloads) -> None:
    w = workloads["h2-streams"]
    assert (w.path, w.features) == ("/json", ["h2c"])
    for size in (w.quick, w.full):
        shapes = [(p.label, p.connections, p.streams) for p in size.points]
        assert shapes == [("1000x1", 1000, 1), ("100x10", 100, 10), ("10x100", 10, 100)]
        assert {c * s for _, c, s in shapes} == {1000}
        assert all(p.http2 == "h2c" and p.mode == "closed" for p in size.points)
        assert len(tls_run.starts(size.points)) == 1  # one server start for the three points
    assert sum(p.planned_seconds() for p in w.quick.points) < sum(p.planned_seconds() for p in w.full.points)


def test_loadgen_gets_http2_and_streams_only_for_an_http2_point() -> None:
    h2 = wl.Point(label="h2", duration="1s", connections=8, http2="h2", tls="rsa", streams=100)
    args = _line(h2)
    assert args[0].startswith("https://127.0.0.1:8080/") and _opt(args, "--tls-ca") == CA
    assert "--http2" in args and _opt(args, "--streams") == "100"
    one = _line(wl.Point(label="c", duration="1s", http2="h2c"))
    assert "--http2" in one and _opt(one, "--streams") == "1"  # no streams given: one per connection
    assert one[0].startswith("http://")
    plain = _line(wl.Point(label="p", duration="1s"))
    assert "--http2" not in plain and "--streams" not in plain
    with pytest.raises(ValueError, match="needs the run's CA"):  # h2 is a tls point: it needs the CA
        _line(h2, ca=None)


# -- which rows may run them, and their starts -----------------------------------------------------------


def _row(**choices: object) -> SimpleNamespace:
    return SimpleNamespace(id="r", choices=SimpleNamespace(**{"http2_library": None, "http2_out": None,
                                                              **choices}))


def test_row_reason_leaves_out_rows_without_http2(workloads) -> None:
    w = workloads["h2c-json"]
    out = _row(http2_out="hand-written HTTP/1.1 over async-std")
    assert h2_run.row_reason(out, w, RunOptions()) == \
        "serves no HTTP/2 here (http2_out): hand-written HTTP/1.1 over async-std"
    why = h2_run.row_reason(_row(), w, RunOptions())
    assert why is not None and why.startswith("not an h2 row: it declares no http2_library")
    assert h2_run.row_reason(SimpleNamespace(id="bare"), w, RunOptions()) == why  # no [choices] at all
    ok = _row(http2_library="actix-web's http2 (h2 0.3)")
    assert h2_run.row_reason(ok, w, RunOptions()) is None
    assert h2_run.row_reason(ok, workloads["h2-json"], RunOptions()) is None
    assert h2_run.row_reason(ok, workloads["h2-streams"], RunOptions()) is None
    # not an HTTP/2 workload: nobody is left out of it by this rule
    assert h2_run.row_reason(out, w.model_copy(update={"features": []}), RunOptions()) is None


def test_a_server_not_started_here_cannot_get_http2(workloads) -> None:
    ok = _row(http2_library="net/http")
    w = workloads["h2c-json"]
    for opts, flag in (({"target": "http://127.0.0.1:1"}, "--target"),
                       ({"cluster": "local:2", "server_on_cluster": True}, "--server-on-cluster")):
        why = h2_run.row_reason(ok, w, RunOptions(**opts))
        assert why is not None and why.endswith(f"run h2c-json without {flag}"), why
    # the load alone on the cluster: the server still starts here, with $HTTP2
    assert h2_run.row_reason(ok, w, RunOptions(cluster="local:2")) is None


def test_env_adds_http2_of_the_mode() -> None:
    base = {"TLS_CERT": "/c.pem", "TLS_KEY": "/k.pem"}
    assert h2_run.env(None, None) is None
    assert h2_run.env(None, base) is base
    assert h2_run.env("h2c", None) == {"HTTP2": "h2c"}
    assert h2_run.env("h2", base) == {**base, "HTTP2": "h2"}
    assert base == {"TLS_CERT": "/c.pem", "TLS_KEY": "/k.pem"}  # not changed in place


def test_starts_cut_points_by_mode_and_logs_name_it() -> None:
    h1 = wl.Point(label="h1", duration="1s")
    c1 = wl.Point(label="h2c-1", duration="1s", http2="h2c", streams=1)
    c = wl.Point(label="h2c", duration="1s", http2="h2c", streams=100)
    assert [[p.label for p in s] for s in tls_run.starts([h1, c1, c])] == [["h1"], ["h2c-1", "h2c"]]
    assert [[p.label for p in s] for s in tls_run.starts([c1, h1, c])] == [["h2c-1"], ["h1"], ["h2c"]]
    assert tls_run.log_name("s", "h2c-json", [c1, c], 1) == "s.h2c-json.h2c.r1.log"
    assert tls_run.log_name("s", "h2c-json", [h1], 1) == "s.h2c-json.r1.log"
    # h2 over TLS: a start apart from the same key type's HTTP/1.1, its log named by both
    t1 = wl.Point(label="h1", duration="1s", tls="rsa")
    t2 = wl.Point(label="h2", duration="1s", tls="rsa", http2="h2")
    assert [[p.label for p in s] for s in tls_run.starts([t1, t2])] == [["h1"], ["h2"]]
    assert tls_run.log_name("s", "h2-json", [t2], 3) == "s.h2-json.tls-rsa.h2.r3.log"
    assert tls_run.log_name("s", "h2-json", [t1], 3) == "s.h2-json.tls-rsa.r3.log"


# -- the manifest's choices ------------------------------------------------------------------------------


def test_http2_choices_go_together_and_exclude_http2_out() -> None:
    with pytest.raises(ValidationError, match="an h2 row declares both http2_library and http2_max_streams"):
        catalog.Choices(**BASE_CHOICES, http2_library="hyper 1.x")
    with pytest.raises(ValidationError, match="an h2 row declares both http2_library and http2_max_streams"):
        catalog.Choices(**BASE_CHOICES, http2_max_streams="250")
    with pytest.raises(ValidationError, match="http2_library and http2_out exclude each other"):
        catalog.Choices(**BASE_CHOICES, http2_library="hyper 1.x", http2_max_streams="200",
                        http2_out="no HTTP/2 here")
    with pytest.raises(ValidationError, match="http2_out"):
        catalog.Choices(**BASE_CHOICES, http2_out="")  # a reason, not an empty string
    row = catalog.Choices(**BASE_CHOICES, http2_library="hyper 1.x", http2_max_streams="200")
    assert row.h2 and row.http2_out is None
    out = catalog.Choices(**BASE_CHOICES, http2_out="std-only row")
    assert not out.h2 and out.http2_out == "std-only row"
    assert not catalog.Choices(**BASE_CHOICES).h2


def test_a_manifest_with_half_the_http2_choices_is_a_catalog_error(tmp_path) -> None:
    root = tmp_path / "servers"
    write_manifest(root, "half", choices={**BASE_CHOICES, "http2_library": "node:http2"})
    write_manifest(root, "whole", choices={**BASE_CHOICES, "http2_library": "node:http2",
                                           "http2_max_streams": "unlimited (declared)"})
    cat = catalog.load_catalog(root)
    assert list(cat.servers) == ["whole"] and cat.servers["whole"].choices.h2
    [err] = cat.errors
    assert "half" in str(err) and "http2_max_streams" in str(err), err
