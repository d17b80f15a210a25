"""`make bench` shows each row's verify verdict in one line (cli_verify.show_verdict compact)."""
from __future__ import annotations


def test_compact_verdict_is_one_line_plus_the_checks_that_did_not_pass() -> None:
    """make bench's verify output: one line per row, the failing checks named with their detail."""
    import io
    from rich.console import Console
    from serverbench import verify as vf
    from serverbench.verify.show import show_verdict
    from serverbench.verify.servers import ServerVerdict
    checks = [vf.CheckResult("root", True, "ok"), vf.CheckResult("file", False, "404 [not found]")]
    buf = io.StringIO()
    show_verdict(ServerVerdict("row", False, checks), Console(file=buf, width=200), compact=True)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("row: FAIL") and "1 of 2 checks passed" in lines[0], lines
    assert len(lines) == 2 and lines[1].startswith("  file: ") and lines[1].endswith("404 [not found]"), lines
    buf = io.StringIO()
    show_verdict(ServerVerdict("row", True, checks[:1]), Console(file=buf, width=200), compact=True)
    assert buf.getvalue().splitlines() == ["row: PASS, 1 of 1 checks passed"]


def test_the_summary_names_a_row_that_could_not_be_checked_by_its_problem(monkeypatch) -> None:
    """verify's last line: a row with no checks (not built) is named by its problem, never by "?"."""
    from serverbench.verify import show as cli_verify
    from serverbench.verify.servers import ServerVerdict
    from serverbench.verify.base import CheckResult

    def fake(manifests, store, **_):
        yield ServerVerdict("unbuilt", False, problem="not built; run `serverbench build unbuilt`")
        yield ServerVerdict("broken", False, [CheckResult("root", False, "404")])
        yield ServerVerdict("worse", False, [CheckResult("root", False, "404"), CheckResult("json", False, "x" * 300)])
        yield ServerVerdict("long", False, [CheckResult("date", False, "y" * 300)])
    monkeypatch.setattr(cli_verify, "verify_servers", fake)
    why: dict[str, str] = {}
    passed, failed = cli_verify.verify_and_show([], None, server_cpus=[0], allow_unavailable=False, why=why)
    assert failed == ["unbuilt", "broken", "worse", "long"] and passed == []
    # the refused checks, and the first one's detail: what a CI log's last line keeps of a failure
    assert why == {"unbuilt": "not built; run `serverbench build unbuilt`", "broken": "root: 404",
                   "worse": "root, json; root: 404", "long": "date: " + "y" * 200 + "…"}
