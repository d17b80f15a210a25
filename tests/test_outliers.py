"""The CPU outlier rule (outliers.py), the model notes, and how both reach a run's report."""
from __future__ import annotations

import copy
from html import escape as html_escape
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from serverbench.results import aggregate, outliers
from serverbench.catalog.manifests import Model
from serverbench.exporters import models_section
from serverbench.results.model_notes import NOTES
from serverbench.exporters.report import write_report
from serverbench.store import Store

from test_report import load_fixture


@dataclass
class FakeRow:
    server: str
    cpu_us_per_request: float | None
    info: dict[str, Any] = field(default_factory=dict)


def _jvm(server: str, cpu: float, **info: Any) -> FakeRow:
    return FakeRow(server, cpu, {"language": "Java", "runtime": "OpenJDK 17", **info})


def test_family_from_language_and_runtime() -> None:
    assert outliers.family({"language": "Kotlin", "runtime": "OpenJDK 17"}) == "JVM"
    assert outliers.family({"language": "TypeScript", "runtime": "deno"}) == "V8/JS"
    assert outliers.family({"language": "Python", "runtime": "CPython 3.11"}) == "CPython"
    assert outliers.family({"language": "Python", "runtime": "PyPy 7.3"}) == "PyPy"
    assert outliers.family({"language": "Erlang", "runtime": "OTP 25"}) == "BEAM"
    assert outliers.family({"language": "Go", "runtime": "go"}) == "native"
    assert outliers.family({"language": "Lua", "runtime": "lua5.2"}) == "Lua"  # a family of its own


def test_a_row_far_above_its_family_is_flagged_against_the_others_median() -> None:
    rows = [_jvm("java-netty", 23), _jvm("java-undertow", 30), _jvm("java-threads", 40), _jvm("kotlin-ktor", 641),
            FakeRow("rust-tokio", 5, {"language": "Rust"})]
    [f] = outliers.judge(rows)
    assert (f.server, f.peers, f.median_us) == ("kotlin-ktor", "the JVM rows'", 30)
    assert f.severity == "warning" and f.kind == "cpu-outlier"
    assert f.text() == ("641 µs CPU per request, 21× the JVM rows' median (30 µs): see "
                        "servers/kotlin-ktor/server.toml — no explanation there, an open defect")


def test_a_family_of_one_is_compared_with_the_field_and_an_explanation_is_quoted() -> None:
    py = FakeRow("python-stdlib", 300, {"language": "Python", "explanation": "the GIL serializes threads"})
    rows = [py, _jvm("java-netty", 20), FakeRow("go-nethttp", 30, {"language": "Go"}),
            FakeRow("c-epoll", 10, {"language": "C"}), FakeRow("target", None, {"language": "?"})]
    [f] = outliers.judge(rows)
    assert (f.server, f.peers, f.median_us) == ("python-stdlib", "the field's", 20)
    assert f.severity == "info" and f.kind == "cpu-explained"
    assert f.text().endswith("explained in servers/python-stdlib/server.toml: the GIL serializes threads")


def test_at_most_five_times_is_not_flagged() -> None:
    rows = [_jvm("a", 10), _jvm("b", 10), _jvm("c", 50)]
    assert outliers.judge(rows) == []
    assert [f.server for f in outliers.judge([_jvm("a", 10), _jvm("b", 10), _jvm("c", 50.1)])] == ["c"]
    assert outliers.judge([_jvm("alone", 1000)]) == []  # no peers at all: nothing to compare


def test_every_model_in_spec_has_a_note() -> None:
    assert set(NOTES) == set(get_args(Model))
    assert all(len(n) > 40 for n in NOTES.values())


SLOW = "java-slow"  # a fixture row made deliberately slow: 40× java-threads' CPU per request
EXPLAINED = "python-asyncio"  # made 10× slower too, but its manifest explains why


def _slow_run() -> Any:
    mod = load_fixture()
    run = mod.generate()
    servers = run.fingerprint["servers"]
    servers[SLOW] = {**servers["java-threads"], "choices": {"pipelined_writes": "coalesced",
                                                              "file_read": "blocking", "nodelay": "off"}}
    servers[EXPLAINED]["explanation"] = "CPython interprets every request's Python code"
    for cell in [c for c in run.cells if c["workload"] == "prantl-wrk" and c["status"] == "ok"]:
        if cell["server"] == "java-threads":
            slow = copy.deepcopy(cell)
            slow["server"] = SLOW
            slow["metrics"]["cpu_user_s"] *= 40
            slow["metrics"]["cpu_sys_s"] *= 40
            run.cells.append(slow)
        elif cell["server"] == EXPLAINED:
            cell["metrics"]["cpu_user_s"] *= 10
            cell["metrics"]["cpu_sys_s"] *= 10
    return mod, run


def test_report_warns_of_the_slow_row_and_quotes_the_explained_one(tmp_path: Path) -> None:
    mod, run = _slow_run()
    store = Store(tmp_path / "bench.db")
    run_id = mod.write_run(store, run)
    _, results = aggregate.load(store, run_id)
    found = {(w.server, w.kind, w.severity) for g in results.groups if g.workload == "prantl-wrk"
             for w in g.warnings if w.kind.startswith("cpu-")}
    assert found == {(SLOW, "cpu-outlier", "warning"), (EXPLAINED, "cpu-explained", "info")}

    paths = write_report(store, run_id, tmp_path / "out")
    md, html = paths.markdown.read_text(), paths.html.read_text()
    for text, esc in ((md, str), (html, html_escape)):
        assert esc("java-slow: ") in text and esc("the JVM rows' median") in text
        assert esc("servers/java-slow/server.toml — no explanation there, an open defect") in text
        assert esc("explained in servers/python-asyncio/server.toml: CPython interprets every request") in text
        assert esc("python-asyncio/server.toml — no explanation there") not in text
        assert esc(models_section.NAGLE) in text  # the row that leaves Nagle on says what it costs
        for model in ("async-work-stealing", "thread-per-connection", "event-loop", "green-threads"):
            assert esc(NOTES[model]) in text  # every model in the run is explained where models are listed
    assert "| java-slow | std | thread-per-connection | coalesced | blocking | off |" in md
    assert "TCP_NODELAY off" in html
