"""A row leaves nothing behind in $TMPDIR: each built row is started and stopped the harness's
way (supervisor.run_server, as `verify` and every run do) with TMPDIR pointing at a fresh
directory, which must hold the same entries afterwards. Files a server keeps per start (Yaws's
auth log was one per port) pile up over a benchmark's hundreds of starts.

Rows that are not available or not built here are skipped with the reason."""
from __future__ import annotations

from pathlib import Path

import pytest

from serverbench.catalog import build, doctor
from serverbench.catalog.manifests import load_catalog
from serverbench.processes import supervisor

CATALOG = load_catalog()


def _entries(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@pytest.mark.parametrize("sid", sorted(CATALOG.servers))
def test_row_leaves_tmpdir_as_it_found_it(sid: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = CATALOG.servers[sid]
    avail = doctor.check(m, "run")
    if not avail.available:
        pytest.skip(f"{sid}: unavailable here ({avail.reason or 'missing ' + ', '.join(avail.missing)})")
    if not build.is_built(m):
        pytest.skip(f"{sid}: not built; run `serverbench build {sid}`")
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    (tmp / "already-here").write_text("a file the row must not touch\n")
    monkeypatch.setenv("TMPDIR", str(tmp))  # server_env passes the harness's environment on
    before = _entries(tmp)
    with supervisor.run_server(m, cpus=supervisor.default_cpu_split()[0], log_path=tmp_path / f"{sid}.log"):
        pass  # run_server returns once GET / has answered 200
    after = _entries(tmp)
    assert after == before, (f"{sid} left {sorted(after - before)[:10]} in $TMPDIR and removed "
                             f"{sorted(before - after)[:10]}")
