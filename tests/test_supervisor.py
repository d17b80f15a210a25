"""Server lifecycle: readiness, start errors, and that stopping leaves nothing behind."""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from serverbench.processes import supervisor
from serverbench.catalog.manifests import Manifest, load_catalog
from serverbench.processes.supervisor import ServerStartError, default_cpu_split, free_port, online_cpus, parse_cpus, pinned, port_is_free, raise_nofile, run_server, stop_all

from conftest import LIFECYCLE, alive, fake_server_cmd, wait_all_gone


def manifest(servers_root: Path, make_server, sid: str, *flags: str, **fields) -> Manifest:
    make_server(sid, run=fake_server_cmd(*flags), **fields)
    return load_catalog(servers_root).servers[sid]


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def tree_pids(url: str) -> list[int]:
    info = json.loads(get(f"{url}/pids"))
    return [info["pid"], *info["workers"]]


def assert_stopped(pids: list[int], port: int) -> None:
    assert wait_all_gone(pids, timeout=0.5) == [], "a server process outlived the context"
    assert port_is_free("127.0.0.1", port)
    assert supervisor._LIVE == {}


def test_ready_pinned_and_stopped(servers_root, make_server, sandbox_paths) -> None:
    m = manifest(servers_root, make_server, "ok")
    cpu = online_cpus()[-1]
    with run_server(m, cpus=[cpu]) as srv:
        assert get(srv.url + "/") == "Hello, World!"
        assert srv.alive() and srv.returncode() is None
        assert srv.url == f"http://127.0.0.1:{srv.port}"
        assert srv.workers == 1, "WORKERS follows the pinned CPUs"
        assert psutil.Process(srv.pid).cpu_affinity() == [cpu]
        assert "workers=1" in srv.log_tail()
        assert srv.log_path == sandbox_paths / "results" / "logs" / f"ok-{srv.port}.log"
        pids = tree_pids(srv.url)
    assert srv.stopped_cleanly is True and srv.port_released is True
    assert not srv.alive()
    assert_stopped(pids, srv.port)


def test_explicit_port_and_workers(servers_root, make_server, sandbox_paths) -> None:
    m = manifest(servers_root, make_server, "ok", workers=7)
    port = free_port()
    with run_server(m, port=port) as srv:
        assert srv.port == port and srv.workers == 7
        assert "workers=7" in srv.log_tail()
    with run_server(m, port=port, workers=3) as srv:
        assert srv.workers == 3


def test_child_gets_raised_open_files_limit(servers_root, make_server, sandbox_paths) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 512)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        m = manifest(servers_root, make_server, "ok")
        with run_server(m) as srv:
            child_soft, _ = psutil.Process(srv.pid).rlimit(psutil.RLIMIT_NOFILE)
        assert child_soft == hard
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == lowered, "harness limit untouched"
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_never_ready_names_server_and_shows_log(servers_root, make_server, sandbox_paths) -> None:
    m = manifest(servers_root, make_server, "slowpoke", "--never-ready")
    with pytest.raises(ServerStartError) as ei:
        with run_server(m, ready_timeout=1.0):
            pytest.fail("must not yield")
    msg = str(ei.value)
    port = ei.value.server.port
    assert msg.startswith(f"server 'slowpoke' did not become ready on 127.0.0.1:{port} within 1 s")
    assert "last log lines:" in msg and "warming up forever" in msg
    assert_stopped([ei.value.server.pid], port)


def test_exit_at_start_reports_code(servers_root, make_server, sandbox_paths) -> None:
    m = manifest(servers_root, make_server, "crashy", "--exit-code", "3")
    t0 = time.monotonic()
    with pytest.raises(ServerStartError) as ei:
        with run_server(m):
            pytest.fail("must not yield")
    assert time.monotonic() - t0 < 10, "an exit is noticed without waiting for the timeout"
    msg = str(ei.value)
    assert msg.startswith("server 'crashy' exited with code 3")
    assert "cannot start: bad configuration" in msg
    # a check's detail is one line: the error's first, and the log's last line, which says why
    from serverbench.verify.base import start_failure
    line = start_failure(ei.value)
    assert "\n" not in line and line.startswith("server 'crashy' exited with code 3 before becoming ready")
    assert line.endswith("; its log ends: fake_server: cannot start: bad configuration (exit 3)"), line


def test_port_in_use_is_refused(servers_root, make_server, sandbox_paths) -> None:
    m = manifest(servers_root, make_server, "ok")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ServerStartError, match=f"port {port} on 127.0.0.1 is already in use"):
            with run_server(m, port=port):
                pass


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("flag", ["--fork-worker", "--setsid-worker"])
def test_exception_inside_stops_group_and_daemonized_workers(
        servers_root, make_server, sandbox_paths, exc, flag) -> None:
    m = manifest(servers_root, make_server, "forky", flag)
    with pytest.raises(exc):
        with run_server(m) as srv:
            pids = tree_pids(srv.url)
            assert len(pids) == 2 and all(alive(p) for p in pids)
            if flag == "--setsid-worker":
                assert os.getpgid(pids[1]) != os.getpgid(pids[0])
            raise exc("boom")
    assert srv.stopped_cleanly is True
    assert_stopped(pids, srv.port)


def test_sigterm_ignored_gets_sigkill(servers_root, make_server, sandbox_paths,
                                      monkeypatch) -> None:
    monkeypatch.setattr(supervisor, "STOP_GRACE_S", 1.0)  # the real 5 s would only slow the test
    m = manifest(servers_root, make_server, "stubborn", "--ignore-term", "--fork-worker")
    with run_server(m) as srv:
        pids = tree_pids(srv.url)
    assert srv.stopped_cleanly is False
    assert_stopped(pids, srv.port)


def test_stop_all_stops_registered_servers(servers_root, make_server, sandbox_paths) -> None:
    m = manifest(servers_root, make_server, "forky", "--fork-worker")
    cm = run_server(m)
    srv = cm.__enter__()
    pids = tree_pids(srv.url)
    assert supervisor._LIVE == {srv.pid: srv}
    stop_all()
    assert supervisor._LIVE == {}
    assert wait_all_gone(pids, timeout=0.5) == []
    cm.__exit__(None, None, None)  # stopping a stopped server is harmless


def _start_harness(servers_root: Path, sid: str, log: Path,
                   *extra: str) -> tuple[subprocess.Popen, dict]:
    h = subprocess.Popen([sys.executable, str(LIFECYCLE / "harness_child.py"), str(servers_root),
                          sid, str(log), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    ready, _, _ = select.select([h.stdout], [], [], 30)
    if not ready:
        h.kill()
        pytest.fail(f"harness did not report a ready server; stderr: {h.stderr.read()!r}")
    line = h.stdout.readline()
    if not line:
        h.wait()
        pytest.fail(f"harness exited early: {h.stderr.read().decode()}")
    return h, json.loads(line)


@pytest.mark.parametrize("via", ["direct", "--via-cli"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signalled_harness_leaves_no_orphan(servers_root, make_server, tmp_path, sig, via) -> None:
    make_server("forky", run=fake_server_cmd("--fork-worker"))
    h, info = _start_harness(servers_root, "forky", tmp_path / "forky.log",
                             *([via] if via != "direct" else []))
    try:
        pids = [info["pids"]["pid"], *info["pids"]["workers"]]
        assert info["pid"] == pids[0] and all(alive(p) for p in pids)
        h.send_signal(sig)
        rc = h.wait(timeout=15)
        assert rc != 0
        assert wait_all_gone(pids, timeout=1) == []
        assert port_is_free("127.0.0.1", info["port"])
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()


def test_sigkilled_harness_server_gets_sigterm_from_kernel(servers_root, make_server,
                                                           tmp_path) -> None:
    """PR_SET_PDEATHSIG: even an uncatchable kill of the harness stops an exec'd server."""
    make_server("plain", run=fake_server_cmd())
    h, info = _start_harness(servers_root, "plain", tmp_path / "plain.log")
    try:
        h.send_signal(signal.SIGKILL)
        h.wait(timeout=5)
        assert wait_all_gone([info["pid"]], timeout=5) == []
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()
        if alive(info["pid"]):
            os.kill(info["pid"], signal.SIGKILL)


def test_parse_cpus() -> None:
    assert parse_cpus("0", check_online=False) == [0]
    assert parse_cpus("0-3", check_online=False) == [0, 1, 2, 3]
    assert parse_cpus("0,2", check_online=False) == [0, 2]
    assert parse_cpus("4-5, 1", check_online=False) == [1, 4, 5]
    for bad in ("", "a", "3-1", "1-", "-1", "1,,2", "0.5"):
        with pytest.raises(ValueError, match="invalid CPU list"):
            parse_cpus(bad, check_online=False)
    with pytest.raises(ValueError, match="not available to this process"):
        parse_cpus("4095")
    assert parse_cpus(",".join(map(str, online_cpus()))) == online_cpus()


def test_cpu_split_and_pinning() -> None:
    server, client = default_cpu_split()
    cpus = online_cpus()
    if len(cpus) == 1:
        assert server == client == cpus
    else:
        assert server and client and not set(server) & set(client)
        assert sorted(server + client) == cpus
    assert pinned(["x"], None) == ["x"]
    assert pinned(["x", "y"], [0, 1]) == ["taskset", "-c", "0,1", "x", "y"]


def test_raise_nofile_and_free_port() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        assert raise_nofile() == hard
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    p = free_port()
    assert 1024 <= p <= 65535 and port_is_free("127.0.0.1", p)
