"""Check kinds (serverbench/rules/admission.py): what a failed check costs a row, end to end.

The rows are the reference server (tests/fixtures/refserver.py) with one defect each, verified by
the real suite, then run with a fake loadgen (tests/fixtures/run/) and reported."""
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from serverbench.results import aggregate
from serverbench.catalog import manifests as catalog
from serverbench import paths  # noqa: E402
from serverbench.catalog import workloads as wl  # noqa: E402
from serverbench.exporters import to_html, to_markdown  # noqa: E402
from serverbench.run.runner import RunOptions, run_matrix  # noqa: E402
from serverbench.store import Store  # noqa: E402
from serverbench.verify import CHECKS, verify_servers
from serverbench.rules import admission as kinds  # noqa: E402

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"
# row -> the refserver defect it carries, and the one check that defect fails
ROWS = {"ref-garbage": ("garbage-stall", "bad-request"), "ref-pipeline": ("pipeline-misframe", "pipeline"),
        "ref-no404": ("no-404", "not-found")}
WORKLOAD = """
name = "{name}"
description = "one short closed point{what}"
origin = "serverbench"
kind = "throughput"
{features}
[quick]
steady_max = "0s"  # no warm-up to steady state: the fake loadgen has nothing to settle
[[quick.points]]
label = "c=2"
connections = 2
duration = "300ms"
{pipe}
[full]
[[full.points]]
label = "c=2"
connections = 2
duration = "10s"
{pipe}
"""


def _workload(name: str, piped: bool) -> str:
    return WORKLOAD.format(name=name, what=", 4 pipelined" if piped else "",
                           features='features = ["pipelining"]' if piped else "", pipe="pipeline = 4" if piped else "")


def _catalog(root: Path) -> dict:
    for row, (brk, _) in ROWS.items():
        d = root / row
        d.mkdir(parents=True)
        (d / "server.toml").write_text(f'''name = "{row}"
language = "Python"
runtime = "python3"
model = "event-loop"
framework = "asyncio"
origin = "serverbench"
description = "test fixture: refserver.py with the defect {brk}"
build = ""
run = "exec {sys.executable} {REFSERVER}"
version = "python3 --version"
requires = ["python3"]
[env]
BREAK = "{brk}"
''')
    cat = catalog.load_catalog(root)
    assert cat.errors == []
    return cat.servers


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The three rows verified once by the real suite into one store (about 10 s each)."""
    tmp = tmp_path_factory.mktemp("gating")
    servers = _catalog(tmp / "servers")
    store = Store(tmp / "r.db")
    verdicts = {v.server: v for v in verify_servers(list(servers.values()), store, server_cpus=[0],
                                                    allow_unavailable=False)}
    return {"tmp": tmp, "servers": servers, "store": store, "verdicts": verdicts}


def test_each_fixture_fails_exactly_its_check(verified: dict) -> None:
    for row, (_, check) in ROWS.items():
        v = verified["verdicts"][row]
        assert v.problem is None, v.problem
        failed = [r.name for r in v.checks if not r.passed and not r.skipped]
        assert failed == [check], (row, [(r.name, r.detail) for r in v.checks if not r.passed])


def test_kinds_decide_admission(verified: dict) -> None:
    vs, store = verified["verdicts"], verified["store"]
    garbage, pipe, no404 = vs["ref-garbage"], vs["ref-pipeline"], vs["ref-no404"]
    assert garbage.passed and [f.check for f in garbage.admission.deviations] == ["bad-request"]
    assert pipe.passed and list(pipe.admission.features) == ["pipelining"] and not pipe.admission.deviations
    assert not no404.passed and [f.check for f in no404.admission.refused] == ["not-found"]
    assert store.verdict("ref-garbage").passed and not store.verdict("ref-no404").passed  # as stored


def test_run_skips_only_the_cells_a_failed_check_affects(verified: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp, store, servers = verified["tmp"], verified["store"], verified["servers"]
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp)))
    monkeypatch.setenv("FAKE_LOADGEN_LOG", str(tmp / "calls.jsonl"))
    monkeypatch.setattr(paths, "LOGS", tmp / "logs")
    wdir = tmp / "workloads"
    wdir.mkdir(exist_ok=True)
    (wdir / "plain.toml").write_text(_workload("plain", False))
    (wdir / "piped.toml").write_text(_workload("piped", True))
    workloads = wl.load_workloads(wdir)
    opts = RunOptions(servers=list(ROWS), workloads=["plain", "piped"], allow_unverified=False, ready_timeout=10,
                      server_cpus=[0], client_cpus=[sorted(os.sched_getaffinity(0))[-1]])
    res = run_matrix(store, opts, manifests=[servers[s] for s in ROWS],
                     workloads=[workloads["plain"], workloads["piped"]], fingerprint={"test": True})
    cells = {(c.server, c.workload): c for c in store.cells(res.run_id)}
    # a robustness failure: measured everywhere
    assert cells["ref-garbage", "plain"].status == "ok" and cells["ref-garbage", "piped"].status == "ok"
    # a feature failure: measured where the feature is unused, skipped with the check's reason where it is
    assert cells["ref-pipeline", "plain"].status == "ok", cells["ref-pipeline", "plain"].error
    skipped = cells["ref-pipeline", "piped"]
    assert skipped.status == "skipped" and skipped.error.startswith("not run — ")
    assert skipped.error.endswith("(pipeline)"), skipped.error
    # a measurement failure: refused everywhere
    for w in ("plain", "piped"):
        assert cells["ref-no404", w].status == "skipped"
        assert "failed verification (not-found)" in cells["ref-no404", w].error

    run, results = aggregate.load(store, res.run_id)
    assert list(results.deviations) == ["ref-garbage"] and "(bad-request)" in results.deviations["ref-garbage"][0]
    md = to_markdown.render(run, results).decode()
    assert re.search(r"\| ref-garbage[^|]* \[\^deviations-ref-garbage\] \|", md), md
    assert "[^deviations-ref-garbage]: ref-garbage: deviation: " in md
    assert f"- ref-pipeline: {skipped.error}" in md
    assert "- ref-no404: not run — failed verification (not-found)" in md
    page = to_html.render(run, results).decode()
    assert 'href="#deviations-ref-garbage"' in page and 'id="deviations-ref-garbage"' in page
    assert "ref-pipeline: not run — " in page


def test_allow_unverified_runs_a_refused_row_but_not_a_failed_feature(
        verified: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp, store, servers = verified["tmp"], verified["store"], verified["servers"]
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp)))
    monkeypatch.setattr(paths, "LOGS", tmp / "logs")
    workloads = wl.load_workloads(tmp / "workloads")
    opts = RunOptions(servers=["ref-no404", "ref-pipeline"], workloads=["piped"], allow_unverified=True,
                      ready_timeout=10, server_cpus=[0], client_cpus=[sorted(os.sched_getaffinity(0))[-1]])
    res = run_matrix(store, opts, manifests=[servers["ref-no404"], servers["ref-pipeline"]],
                     workloads=[workloads["piped"]], fingerprint={"test": True})
    status = {c.server: c.status for c in store.cells(res.run_id)}
    assert status == {"ref-no404": "ok", "ref-pipeline": "skipped"}


def test_verdicts_stored_before_kinds_read_by_kind() -> None:
    # a verdict of the old suite: passed = every check passed, so bad-request alone failed it
    old = [{"name": "root", "passed": True, "detail": "", "skipped": False},
           {"name": "bad-request", "passed": False, "detail": "b'GARBAGE\\r\\n'…: expected 400 or close, got neither"}]
    a = kinds.admission(old, False)
    assert a.admitted and [f.check for f in a.deviations] == ["bad-request"]
    assert not kinds.admission([], False).admitted and kinds.admission([], True).admitted
    # a check this code does not know counts as measurement: the safe side
    assert not kinds.admission([{"name": "gone-check", "passed": False}], False).admitted


def test_ab_needs_http10_and_reader_lines_name_the_reason() -> None:
    checks = [{"name": "http10", "passed": False, "detail": "kept open without announcing it"},
              {"name": "smuggling", "passed": False, "detail": "framed by Content-Length"}]
    a = kinds.admission(checks)
    w = wl.load_workloads()["prantl-wrk"]
    assert a.not_run_reason(kinds.workload_features(w)) is None
    assert a.not_run_reason(kinds.workload_features(w, "ab")) == "not run — kept open without announcing it (http10)"
    assert kinds.reader_lines(a, [w]) == [
        "security deviation: framed by Content-Length (smuggling, security)",
        "cross-check with ab: not run — kept open without announcing it (http10)"]


def test_workload_features_must_match_the_points(tmp_path: Path) -> None:
    (tmp_path / "piped.toml").write_text(_workload("piped", True).replace('features = ["pipelining"]', ""))
    with pytest.raises(wl.WorkloadError, match=r"use pipelining but features does not say so; "
                                               r"set features = \['pipelining'\]"):
        wl.load_workload(tmp_path / "piped.toml")
    (tmp_path / "plain.toml").write_text(_workload("plain", False).replace(
        'kind = "throughput"', 'kind = "throughput"\nfeatures = ["pipelining"]'))
    with pytest.raises(wl.WorkloadError, match="features lists pipelining, which no point uses"):
        wl.load_workload(tmp_path / "plain.toml")
    real = wl.load_workloads()
    assert real["tfb-plaintext"].features == ["pipelining"]
    assert real["deepu-ab"].features == ["new-connection-per-request"]


def test_spec_lists_every_check_with_its_kind_and_gates() -> None:
    text = (Path(paths.REPO) / "SPEC.md").read_text().split("\n## Checks\n", 1)[1]
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \| ([^|]+?) \|", text, re.M))
    assert sorted(rows) == sorted([*CHECKS, "starts", "sigterm"])
    for name, kind in rows.items():
        k = kinds.kind_of(name)
        assert kind.startswith(k.kind) and ("security" in kind) == k.security, (name, kind)
    real = list(wl.load_workloads().values())
    assert kinds.gated_workloads("pipeline", real) == ["tfb-plaintext"]
    assert kinds.gates("pipeline", real) == "tfb-plaintext"
    assert kinds.gates("http10", real) == "the cross-check's ab"
    assert kinds.gates("smuggling", real) == "nothing (a deviation)" and kinds.gates("root", real) == "every workload"
    assert "tfb-plaintext" in re.search(r"^\| `pipeline` .*$", text, re.M).group(0)


def test_crosscheck_skips_only_the_tool_that_needs_a_failed_feature(
        verified: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from serverbench.catalog import build
    from serverbench.crosscheck.session import CrosscheckOptions, run_crosscheck
    tmp, servers = verified["tmp"], verified["servers"]
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp)))
    monkeypatch.setattr(paths, "LOGS", tmp / "logs")
    (tmp_path / "plain.toml").write_text(_workload("plain", False))
    plain = wl.load_workload(tmp_path / "plain.toml")
    m = servers["ref-garbage"]
    store = Store(tmp_path / "x.db")
    store.record_verdict(m.id, True, [{"name": "root", "passed": True},
                                      {"name": "http10", "passed": False, "detail": "kept open, not announced"}],
                         build.folder_hash(m))
    opts = CrosscheckOptions(servers=[m.id], workload="plain", tools=["loadgen", "ab"], server_cpus=[0],
                             client_cpus=[sorted(os.sched_getaffinity(0))[-1]])
    res = run_crosscheck(store, opts, [m], plain)
    cells = {c.point.split(" · ")[1]: c for c in store.cells(res.run_id)}
    assert cells["ab"].status == "skipped" and cells["ab"].error == "not run — kept open, not announced (http10)"
    assert cells["loadgen"].status != "skipped", cells["loadgen"].error


def test_the_verify_summary_line_names_each_refused_rows_checks(verified: dict,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # CI logs keep the tail: the last line must say which check kept a row out, not only which row.
    from serverbench.verify import show as cli_verify
    vs = verified["verdicts"]
    monkeypatch.setattr(cli_verify, "verify_servers", lambda *a, **k: iter(vs.values()))
    why: dict[str, str] = {}
    passed, failed = cli_verify.verify_and_show([], verified["store"], server_cpus=None,
                                                allow_unavailable=False, why=why)
    assert failed == ["ref-no404"] and why == {"ref-no404": "not-found: GET /nope: expected status 404, got 200 "
                                                            "text/plain b'Hello, World!' (13 B)"}
    assert sorted(passed) == ["ref-garbage", "ref-pipeline"]
