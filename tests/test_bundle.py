"""`serverbench bundle`: built rows run from the bundle on a PATH without their build toolchains.

Bundles c-epoll, go-tcp and rust-tokio (building them first when `make test` has not yet: it runs
pytest before `serverbench build`), unpacks the bundle into a fresh directory and runs the quick
workload there with a PATH holding only sh and taskset: no go, cargo, rustc, gcc, mvn or nim.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from serverbench.catalog import build, bundle, manifests as catalog, doctor
from serverbench import paths
from serverbench.store import Store

ROWS = ["c-epoll", "go-tcp", "rust-tokio"]
BUILD_TOOLS = ("go", "cargo", "rustc", "gcc", "cc", "mvn", "nim")


def _built(ids: list[str]) -> list:
    """The rows, built here if they are not yet (skipped where this machine cannot build them)."""
    ms = catalog.select(catalog.load_catalog(), ids)
    todo = [m for m in ms if not build.is_built(m)]
    for m in todo:
        a = doctor.check(m, "build")
        if not a.available:
            pytest.skip(f"{m.id} is not built and cannot be built here ({a.reason})")
    bad = [r for r in build.build(todo, progress=False) if r.status not in ("built", "cached")]
    assert not bad, f"building for the bundle test failed: {bad[0].error}"
    return ms


@pytest.mark.timeout(600)  # three rows × the quick workload, each start warmed to steady
def test_built_rows_run_from_a_bundle_without_build_toolchains(tmp_path: Path) -> None:
    if not paths.loadgen_binary().is_file():
        pytest.skip("loadgen not built (make loadgen)")
    ms = _built(ROWS)
    out = tmp_path / "bench.tar.zst"
    summary = bundle.write_bundle(out, ms)
    assert summary.rows == ROWS and summary.left_out == {}

    dest = tmp_path / "bench"
    bundle.extract(out, dest)
    shipped = [p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()]
    assert "build/cargo-target/release/rust-tokio" in shipped and "servers/go-tcp/bin/server" in shipped
    # no caches: cargo's dependency builds, Go's build cache, the harness's venv or results
    assert not [s for s in shipped if s.startswith(("build/cargo-target/release/deps", "build/go-", ".venv/",
                                                    "results/", ".git/")) or "__pycache__" in s]

    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("sh", "taskset"):
        if (found := shutil.which(name)) is not None:
            (tools / name).symlink_to(found)
    path = str(tools)
    assert [t for t in BUILD_TOOLS if shutil.which(t, path=path)] == []
    env = {"PATH": path, "HOME": str(tmp_path), "LANG": "C.UTF-8", "PYTHONPATH": str(dest)}
    # the bundle's own harness answers, not this checkout's
    where = subprocess.run([sys.executable, "-c", "import serverbench; print(serverbench.__file__)"], cwd=dest,
                           env=env, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(dest), where

    db = dest / "results" / "bench.db"
    r = subprocess.run([sys.executable, "-m", "serverbench", "run", "-s", ",".join(ROWS), "-w", "quick", "--quick",
                        "-d", "1s", "--allow-unverified", "--db", str(db)],
                       cwd=dest, env=env, capture_output=True, text=True, timeout=500)
    with Store(db) as store:
        run = store.run(store.latest_run_id())
        cells = store.cells(run.id)
    assert run.status == "finished", r.stdout[-3000:] + r.stderr[-3000:]
    assert {c.server for c in cells} == set(ROWS)
    bad = [(c.server, c.workload, c.point, c.status, c.error) for c in cells if c.status != "ok"]
    assert bad == [], bad
    assert all((c.metrics.counts.rps or 0) > 0 for c in cells)
    # the toolchain versions come from the build stamps: go and rustc are not there to ask
    versions = {sid: info.get("version") for sid, info in run.fingerprint["servers"].items()}
    assert versions["go-tcp"].startswith("go version") and versions["rust-tokio"].startswith("rustc")
    assert run.fingerprint["cpu_split"]["mode"] == "auto"
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_a_bundle_refuses_other_names_and_nothing_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ms = catalog.select(catalog.load_catalog(), ["c-epoll"])
    with pytest.raises(bundle.BundleError, match=r"\.tar\.zst"):
        bundle.write_bundle(tmp_path / "b.tgz", ms)
    monkeypatch.setattr(paths, "STAMPS", tmp_path / "no-stamps")
    with pytest.raises(bundle.BundleError, match="no built row"):
        bundle.write_bundle(tmp_path / "b.tar.zst", ms)


def test_every_row_says_what_it_needs_at_run_time() -> None:
    """run_requires defaults to nothing, so a row that left it out would pass `doctor`'s run check on a
    bench machine without its runtime: every row writes it, [] for a native binary."""
    import tomllib
    missing = [p.parent.name for p in sorted(paths.SERVERS.glob("*/server.toml"))
               if "run_requires" not in tomllib.loads(p.read_text())]
    assert missing == [], f"add run_requires = [...] to these server.toml files: {missing}"
