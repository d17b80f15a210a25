"""verify/prepare.py: each row verified as its build ends, the others still building; a row with a
failed check verified again after the builds; an error in verify stops the builds it overlapped."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest

from serverbench.verify import prepare as cli_run, show as cli_verify
from serverbench.catalog import build, doctor, install
from serverbench.catalog.manifests import load_catalog
from serverbench.verify import CheckResult, ServerVerdict


@pytest.fixture
def rows(servers_root: Path, make_server, sandbox_paths: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Three rows: `quick` and `dev` build at once; `slow` builds until the file `go` exists (the fake
    verify makes it once it has seen both quick rows), or fails after 20 s. No install step."""
    go = sandbox_paths / "go"
    make_server("quick", build="true")
    make_server("dev", build="true")
    make_server("slow", build=f"for i in $(seq 400); do [ -e '{go}' ] && exit 0; sleep 0.05; done; exit 1")
    monkeypatch.setattr(install, "install_missing", lambda ms, dry_run: [])
    monkeypatch.setattr(doctor, "is_root", lambda: False)
    return {"go": go, **load_catalog(servers_root).servers}


log_kw: list[tuple[Any, Any]] = []  # (features, recheck) of each fake verify_servers call


def fake_verify(log: list[tuple[str, bool, bool]], failing: set[str], rows: dict[str, Any],
                raise_at: str | None = None):
    """A verify_servers stand-in: logs (row, `slow` still building, a later pass), lets `slow`'s build
    end once quick and dev have been seen, and fails a check of the rows in `failing` while `slow`
    still builds (as a time limit missed under the builds' load would)."""
    passes: dict[str, int] = {}

    def verify_servers(manifests: Iterable[Any], store: Any, **kw: Any) -> Iterator[ServerVerdict]:
        log_kw.append((kw.get("features"), kw.get("recheck")))
        for m in manifests:
            assert build.is_built(m)  # never handed over before its build has ended
            building = not build.is_built(rows["slow"])
            passes[m.id] = passes.get(m.id, 0) + 1
            log.append((m.id, building, passes[m.id] > 1))
            if m.id == raise_at:
                raise RuntimeError("verify broke")
            if {"quick", "dev"} <= set(passes):
                rows["go"].touch()
            ok = not (m.id in failing and building)
            yield ServerVerdict(m.id, True, [CheckResult("root", True, "ok"),
                                             CheckResult("bad-request", ok, "ok" if ok else "no answer in 3 s")])
    return verify_servers


def test_rows_are_verified_while_others_build_and_failed_checks_again_after(
        rows: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log: list[tuple[str, bool, bool]] = []
    monkeypatch.setattr(cli_verify, "verify_servers", fake_verify(log, {"dev"}, rows))
    ready = cli_run.prepare([rows[r] for r in ("quick", "dev", "slow")], store=None)
    assert sorted(m.id for m in ready) == ["dev", "quick", "slow"]
    first = {row: building for row, building, again in log if not again}
    # the quick rows were verified while `slow` was still building (it waits for them); `slow` after
    assert first == {"quick": True, "dev": True, "slow": False}
    # dev's check failed under the builds: verified again once they ended, and only that verdict shown
    assert [(row, building) for row, building, again in log if again] == [("dev", False)]
    out = capsys.readouterr().out
    assert "verifying again the checks that failed, now that the builds have ended" in out and "dev" in out
    assert out.count("dev: PASS") == 1 and "bad-request" not in out
    # the second pass runs only what failed (verify_servers' recheck); features reach both passes
    assert log_kw[-2:] == [(None, False), (None, True)]


def test_an_error_in_verify_stops_the_builds(rows: dict[str, Any], servers_root: Path, make_server,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    make_server("slower", build="sleep 30")
    ms = load_catalog(servers_root).servers
    log: list[tuple[str, bool, bool]] = []
    monkeypatch.setattr(cli_verify, "verify_servers", fake_verify(log, set(), rows, raise_at="quick"))
    with pytest.raises(RuntimeError, match="verify broke"):
        cli_run.prepare([ms["quick"], ms["slower"], ms["slow"]], store=None)
    # the 30 s build was killed or never started, not waited for (a finished build is stamped), the
    # queued one likewise, and nothing is left running
    assert build._RUNNING == {} and not build.is_built(ms["slower"]) and not build.is_built(ms["slow"])


def test_an_error_in_the_builds_reaches_the_caller(rows: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    real = build.build

    def broken(ms: list[Any], **kw: Any) -> list[Any]:
        real(ms[:1], progress=False, on_result=kw["on_result"])  # the first row builds, then it breaks
        raise OSError("disk full")
    log: list[tuple[str, bool, bool]] = []
    monkeypatch.setattr(build, "build", broken)
    monkeypatch.setattr(cli_verify, "verify_servers", fake_verify(log, set(), rows))
    # raised in prepare's thread, not only printed on the builds' own: the rows built so far verified first
    with pytest.raises(OSError, match="disk full"):
        cli_run.prepare([rows["quick"], rows["dev"]], store=None)
    assert [row for row, _, _ in log] == ["quick"]
