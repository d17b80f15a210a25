"""cli_run.prepare: each row verified as its build ends, the others still building; a row with a
failed check verified again after the builds; an error in verify stops the builds it overlapped."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest

from serverbench import cli_run, cli_verify
from serverbench.catalog import build, doctor, install
from serverbench.catalog.manifests import load_catalog
from serverbench.verify import CheckResult, ServerVerdict


@pytest.fixture
def rows(servers_root: Path, make_server, sandbox_paths: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Three rows: `quick` and `dev` build at once, `slow` builds for 1.5 s; no install step."""
    make_server("quick", build="true")
    make_server("dev", build="true")
    make_server("slow", build="sleep 1.5")
    monkeypatch.setattr(install, "install_missing", lambda ms, dry_run: [])
    monkeypatch.setattr(doctor, "is_root", lambda: False)
    return load_catalog(servers_root).servers


def fake_verify(log: list[tuple[str, bool, bool]], failing: set[str], raise_at: str | None = None):
    """A verify_servers stand-in: logs (row, builds still running, a later pass) and fails a check of
    the rows in `failing` while the builds run (as a missed time limit would)."""
    passes: dict[str, int] = {}

    def verify_servers(manifests: Iterable[Any], store: Any, **kw: Any) -> Iterator[ServerVerdict]:
        for m in manifests:
            assert build.is_built(m)  # never handed over before its build has ended
            running = bool(build._RUNNING)
            passes[m.id] = passes.get(m.id, 0) + 1
            log.append((m.id, running, passes[m.id] > 1))
            if m.id == raise_at:
                raise RuntimeError("verify broke")
            ok = not (m.id in failing and running)
            yield ServerVerdict(m.id, True, [CheckResult("root", True, "ok"),
                                             CheckResult("bad-request", ok, "ok" if ok else "no answer in 3 s")])
    return verify_servers


def test_rows_are_verified_while_others_build_and_failed_checks_again_after(
        rows: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log: list[tuple[str, bool, bool]] = []
    monkeypatch.setattr(cli_verify, "verify_servers", fake_verify(log, failing={"dev"}))
    ready = cli_run.prepare(list(rows.values()), store=None)
    assert sorted(m.id for m in ready) == ["dev", "quick", "slow"]
    first = {row: running for row, running, again in log if not again}
    # the quick rows were verified while `slow` was still building; `slow` after its own build
    assert first["quick"] and first["dev"] and not first["slow"]
    # dev's check failed under the builds: verified again once they ended, and only that verdict shown
    assert [(row, running) for row, running, again in log if again] == [("dev", False)]
    out = capsys.readouterr().out
    assert "verifying again now that the builds have ended" in out and "dev" in out
    assert out.count("dev: PASS") == 1 and "bad-request" not in out


def test_an_error_in_verify_stops_the_builds(rows: dict[str, Any], servers_root: Path, make_server,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    make_server("slower", build="sleep 30")
    ms = load_catalog(servers_root).servers
    log: list[tuple[str, bool, bool]] = []
    monkeypatch.setattr(cli_verify, "verify_servers", fake_verify(log, failing=set(), raise_at="quick"))
    with pytest.raises(RuntimeError, match="verify broke"):
        cli_run.prepare([ms["quick"], ms["slower"], ms["slow"]], store=None)
    # the 30 s build was killed, not waited for (a finished build is stamped), and nothing is left running
    assert build._RUNNING == {} and not build.is_built(ms["slower"])
