"""Build caching by folder hash, failure isolation, logs, and the servers' environment."""
from __future__ import annotations

import os
import time
from pathlib import Path

from serverbench import paths
from serverbench.catalog.build import build, folder_hash, is_built
from serverbench.catalog.environment import server_env
from serverbench.catalog.manifests import load_catalog, select


def counting_build(counter: Path) -> str:
    """A build command that appends one line per run to `counter` (outside the folder)."""
    return f"echo built >> '{counter}' && echo compiled ok"


def runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def test_second_build_is_cached_and_a_change_rebuilds(
        servers_root: Path, make_server, sandbox_paths: Path) -> None:
    counter = sandbox_paths / "count"
    d = make_server("app", build=counting_build(counter))
    (d / "main.py").write_text("print('v1')\n")
    m = load_catalog(servers_root).servers["app"]

    [r] = build([m], progress=False)
    assert (r.status, r.error, runs(counter)) == ("built", None, 1)
    assert r.log_path == paths.LOGS / "build-app.log"
    assert "compiled ok" in r.log_path.read_text()
    assert is_built(m)

    [r] = build([m], progress=False)
    assert (r.status, runs(counter)) == ("cached", 1)

    (d / "main.py").write_text("print('v2')\n")
    assert not is_built(m)
    [r] = build([m], progress=False)
    assert (r.status, runs(counter)) == ("built", 2)

    [r] = build([m], force=True, progress=False)
    assert (r.status, runs(counter)) == ("built", 3)


def test_build_outputs_do_not_invalidate_but_build_command_does(
        servers_root: Path, make_server, sandbox_paths: Path) -> None:
    d = make_server("app", build="true")
    (d / "src.c").write_text("int main;\n")
    m = load_catalog(servers_root).servers["app"]
    h = folder_hash(m)
    for out in ("target", "node_modules", "bin", "__pycache__"):
        (d / out).mkdir()
        (d / out / "artifact").write_text("x")
    assert folder_hash(m) == h
    (d / "new.c").write_text("")
    assert folder_hash(m) != h
    m2 = m.model_copy(update={"build": "make"})
    (d / "new.c").unlink()
    assert folder_hash(m2) != h


def test_failed_build_is_reported_and_others_still_build(
        servers_root: Path, make_server, sandbox_paths: Path) -> None:
    counter = sandbox_paths / "count"
    make_server("a-ok", build=counting_build(counter))
    make_server("b-broken", build="echo compiling; echo 'error: undefined symbol oops' >&2; exit 3")
    make_server("c-ok", build=counting_build(counter))
    ms = select(load_catalog(servers_root), None)

    res = {r.id: r for r in build(ms, progress=False)}
    assert res["a-ok"].status == res["c-ok"].status == "built"
    assert runs(counter) == 2
    bad = res["b-broken"]
    assert bad.status == "failed"
    assert "b-broken" in bad.error and "exit code 3" in bad.error and str(bad.log_path) in bad.error
    assert "error: undefined symbol oops" in bad.log_path.read_text()
    assert not is_built(ms[1])
    # still failing next time: not cached
    assert {r.id: r.status for r in build(ms, progress=False)} == {
        "a-ok": "cached", "b-broken": "failed", "c-ok": "cached"}


def test_unavailable_server_is_skipped(servers_root: Path, make_server, sandbox_paths: Path) -> None:
    counter = sandbox_paths / "count"
    make_server("needs-tool", build=counting_build(counter),
                requires=["serverbench-no-such-tool"], install={"npm": ["no-such-tool@1.0.0"]})
    [r] = build(select(load_catalog(servers_root), None), progress=False)
    assert r.status == "unavailable"
    assert "serverbench-no-such-tool" in r.error and "npm install --prefix .tools" in r.error
    assert runs(counter) == 0


def test_build_runs_in_the_folder_with_the_server_env(
        servers_root: Path, make_server, sandbox_paths: Path) -> None:
    make_server("envy", build='echo "cwd=$PWD target=$CARGO_TARGET_DIR x=$EXTRA"',
                env={"EXTRA": "from-manifest"})
    [r] = build(select(load_catalog(servers_root), None), progress=False)
    log = r.log_path.read_text()
    assert f"cwd={servers_root / 'envy'}" in log
    assert f"target={paths.CARGO_TARGET}" in log and "x=from-manifest" in log


def test_server_env(servers_root: Path, make_server, sandbox_paths: Path,
                    monkeypatch) -> None:
    make_server("e", env={"HOST": "override-wins"})
    m = load_catalog(servers_root).servers["e"]
    monkeypatch.setenv("PORT", "9999")
    env = server_env(m)
    assert env["PATH"].split(os.pathsep)[0] == str(paths.TOOLS_BIN)
    assert "PORT" not in env, "an inherited PORT must not leak"
    assert env["WORKERS"] == str(len(os.sched_getaffinity(0)))
    assert env["HELLO_FILE"] == str(paths.HELLO_FILE)
    assert env["HOST"] == "override-wins"  # manifest env is applied last
    env = server_env(m, port=18555, workers=3)
    assert (env["PORT"], env["WORKERS"]) == ("18555", "3")
    m2 = m.model_copy(update={"workers": 64})
    assert server_env(m2)["WORKERS"] == "64"


def test_whole_catalog_noop_build_is_fast(servers_root: Path, make_server,
                                          sandbox_paths: Path) -> None:
    for i in range(12):
        d = make_server(f"s{i:02d}", build="true", version="echo 1")
        for j in range(30):
            (d / f"file{j}.txt").write_text("x" * 2000)
    ms = select(load_catalog(servers_root), None)
    assert {r.status for r in build(ms, progress=False)} == {"built"}
    t0 = time.monotonic()
    assert {r.status for r in build(ms, progress=False)} == {"cached"}
    assert time.monotonic() - t0 < 2.0


def test_hashing_the_real_catalog_is_fast() -> None:
    """The cost of a no-op `serverbench build` over the repository's servers."""
    ms = select(load_catalog(paths.SERVERS), None)
    t0 = time.monotonic()
    for m in ms:
        folder_hash(m)
    assert time.monotonic() - t0 < 2.0


def test_a_change_in_a_shared_folder_rebuilds_its_users(
        servers_root: Path, make_server, sandbox_paths: Path) -> None:
    lib = servers_root / "_shared" / "lib"
    lib.mkdir(parents=True)
    (lib / "common.c").write_text("int common;\n")
    counter = sandbox_paths / "count"
    make_server("app", build=counting_build(counter), shares=["../_shared/lib"])
    cat = load_catalog(servers_root)
    assert cat.errors == [] and list(cat.servers) == ["app"]  # _shared is not a contestant
    m = cat.servers["app"]
    build([m], progress=False)
    [r] = build([m], progress=False)
    assert r.status == "cached"
    (lib / "common.c").write_text("int common = 1;\n")
    [r] = build([m], progress=False)
    assert (r.status, runs(counter)) == ("built", 2)


def test_shares_must_name_a_folder(servers_root: Path, make_server) -> None:
    make_server("app", shares=["../_shared/missing"])
    cat = load_catalog(servers_root)
    assert "app" not in cat.servers
    assert any("'shares'" in e and "../_shared/missing" in e for e in cat.errors)


def test_builds_run_two_at_a_time_and_keep_the_order(servers_root: Path, make_server, sandbox_paths: Path) -> None:
    """Each build waits until the other has started: one at a time, neither would ever finish (the
    wait is bounded, and a build that timed out exits 1). Results keep the catalog's order."""
    marks = sandbox_paths / "marks"
    marks.mkdir()
    for me, other in (("a", "b"), ("b", "a")):
        make_server(me, build=f"touch '{marks}/{me}'; for i in $(seq 100); do [ -e '{marks}/{other}' ] && exit 0; "
                              "sleep 0.05; done; exit 1")
    res = build(select(load_catalog(servers_root), None), progress=False, jobs=2)
    assert [(r.id, r.status) for r in res] == [("a", "built"), ("b", "built")], [r.error for r in res]


def test_an_interrupt_kills_every_running_build_and_its_children(
        servers_root: Path, make_server, sandbox_paths: Path) -> None:
    """Builds run in process groups of their own (a terminal's Ctrl-C does not reach them): an
    interrupt of the harness kills each whole group, children included, and propagates."""
    import signal
    import threading
    import pytest
    from serverbench.catalog import build as build_mod
    pids = sandbox_paths / "pids"
    pids.mkdir()
    for name in ("x", "y"):
        make_server(name, build=f"sleep 60 & echo $! > '{pids}/{name}-child'; wait")

    def interrupt_when_running() -> None:
        for _ in range(200):
            if len(list(pids.iterdir())) == 2:
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)
    # the interrupt arrives once both builds (and their children) are running, as a Ctrl-C would;
    # SIGINT's default handler set here, since a background job (CI under nohup) inherits it ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_when_running, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            build(select(load_catalog(servers_root), None), progress=False, jobs=2)
    finally:
        signal.signal(signal.SIGINT, previous)
    children = [int(p.read_text()) for p in pids.iterdir()]
    assert len(children) == 2 and build_mod._RUNNING == {}
    for pid in children:
        for _ in range(100):
            if not _alive(pid):
                break
            time.sleep(0.05)
        assert not _alive(pid), f"build child {pid} still running"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_builds_sharing_a_tool_cache_run_in_one_lane_and_never_overlap(
        servers_root: Path, make_server, sandbox_paths: Path) -> None:
    """Two cargo rows never build at once (they share build/cargo-target; Maven rows share ~/.m2): they
    are one lane, built one after another on one slot from the start, while the other slots take the
    rest (no slot waits on the tool's lock)."""
    from serverbench.catalog import build as build_mod
    log = sandbox_paths / "spans"
    for name in ("r1", "r2"):
        make_server(name, build=f"echo start {name} >> '{log}'; sleep 0.3; echo end {name} >> '{log}'; true cargo")
    make_server("s1", build="true")
    ms = select(load_catalog(servers_root), None)
    assert [[m.id for m, _ in lane] for lane in build_mod._lanes([(m, None) for m in ms])] == [["r1", "r2"], ["s1"]]
    assert [r.status for r in build(ms, progress=False, jobs=2)] == ["built"] * 3
    lines = log.read_text().split("\n")[:4]
    assert lines[0].split()[0] == "start" and lines[1] == lines[0].replace("start", "end"), lines
