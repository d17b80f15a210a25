"""--server-on-cluster on a LocalCluster (loopback): the server is built, verified, started and
sampled by the worker with the resource `server`, the shards run on the others."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from serverbench.catalog import manifests as catalog
from serverbench import paths
from serverbench.catalog import workloads as wl
from serverbench.model import RunOptions
from serverbench.run.runner import run_matrix
from serverbench.store import Store

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

pytestmark = pytest.mark.skipif(not paths.loadgen_binary().is_file(), reason="loadgen not built (make loadgen)")

# both points short: each test runs them on a fresh LocalCluster
WORKLOAD = runfix.SPLIT_WORKLOAD.replace('duration = "2s"', 'duration = "500ms"')


def _opts(**kw: object) -> RunOptions:
    cpus = sorted(os.sched_getaffinity(0))
    return RunOptions(servers=["py-ok"], workloads=["split"], repeat=1, ready_timeout=10, server_cpus=[cpus[0]],
                      client_cpus=[cpus[-1]], cluster="local:1", server_on_cluster=True, **kw)


def _workload(tmp_path: Path) -> wl.Workload:
    (tmp_path / "w").mkdir(exist_ok=True)
    (tmp_path / "w" / "split.toml").write_text(WORKLOAD)
    return wl.load_workloads(tmp_path / "w")["split"]


def test_the_server_runs_and_is_sampled_on_its_worker_and_stops_with_the_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    m = catalog.load_catalog(runfix.SERVERS).servers["py-ok"]
    store = Store(tmp_path / "r.db")
    seen: dict[str, object] = {}

    def watch(event: object) -> None:  # while a point runs: who is the server's parent?
        if "c=4 ·" in str(getattr(event, "what", "")):
            mine = {p.pid for p in psutil.Process().children(recursive=True)}
            servers = [p for p in psutil.process_iter(["cmdline"]) if "tiny_server.py" in " ".join(
                p.info["cmdline"] or []) and p.pid in mine]
            seen["servers"] = [(p.pid, p.ppid(), " ".join(p.parent().cmdline()), p.cpu_affinity()) for p in servers]

    res = run_matrix(store, _opts(allow_unverified=True), manifests=[m], workloads=[_workload(tmp_path)],
                     fingerprint={"test": True}, on_event=watch)
    cells = {c.point: c for c in store.cells(res.run_id)}
    assert res.status == "finished" and [c.status for c in cells.values()] == ["ok", "ok"], \
        [c.error for c in cells.values()]
    for c in cells.values():
        # sampled where it runs: CPU and memory figures and the per-second series are there
        assert c.metrics.counts.ok > 0 and c.metrics.usage.rss_peak_bytes and c.metrics.usage.cpu_percent is not None
        assert c.usage and c.usage["series"]["rows"]
        assert c.metrics.client.shards == 1  # local:1: one loadgen worker, the server's worker runs none
    # the server is a child of a Dask worker (not of the harness), pinned to the server CPU
    [(pid, ppid, parent, affinity)] = seen["servers"]
    assert ppid != os.getpid() and "multiprocessing" in parent, parent  # a spawned Dask worker
    assert affinity == [sorted(os.sched_getaffinity(0))[0]]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert all(c.metrics.client.server_host == "127.0.0.1" for c in cells.values())
    from serverbench.results.aggregate import load
    from serverbench.exporters import to_markdown
    head = to_markdown.render(*load(store, res.run_id)).decode().split("## Environment and options\n\n", 1)[1].splitlines()[0]
    assert "server on the Dask worker with the resource server (this machine)" in head, head
    # its log went to the run's log folder (same machine)
    assert list((tmp_path / "logs").glob("**/run-*/py-ok.split.r1.log"))


REF_TOML = """
name = "ref"
language = "Python"
runtime = "python3"
model = "thread-per-connection"
framework = "http.server"
origin = "serverbench"
description = "test fixture: the reference server with one defect (BREAK)"
build = ""
run = "exec python3 {server}"
version = "python3 --version"
requires = ["python3"]
[env]
BREAK = "{brk}"
"""


def test_verification_happens_on_the_server_worker_and_its_verdict_is_stored(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    folder = tmp_path / "servers" / "ref"
    folder.mkdir(parents=True)
    (folder / "server.toml").write_text(REF_TOML.format(server=Path(__file__).parent / "fixtures" / "refserver.py",
                                                        brk="wrong-json"))
    m = catalog.load_catalog(tmp_path / "servers").servers["ref"]
    store = Store(tmp_path / "r.db")
    opts = _opts()
    opts.servers = ["ref"]
    res = run_matrix(store, opts, manifests=[m], workloads=[_workload(tmp_path)], fingerprint={"test": True})
    cells = store.cells(res.run_id)
    assert [c.status for c in cells] == ["skipped", "skipped"]
    assert cells[0].error.startswith("failed verification on the server machine (json"), cells[0].error
    v = store.verdict("ref")
    failed = {c["name"]: c["detail"] for c in v.checks if not c["passed"]} if v else {}
    assert v is not None and not v.passed and "json" in failed, failed
    assert len(v.checks) > 10 and v.folder_hash  # the whole suite ran there, against this folder


def test_a_harness_that_stops_renewing_its_lease_has_its_server_stopped() -> None:
    from serverbench.cluster.load_cluster import LoadCluster
    from serverbench.cluster.remote_server import ServerHost
    m = catalog.load_catalog(runfix.SERVERS).servers["py-ok"]
    with LoadCluster("local:1", server=True) as c:
        addr = c.server_worker()
        fut = c.client.submit(ServerHost, m, 2.0, actor=True, workers=[addr], allow_other_workers=False)
        host = fut.result(timeout=30)
        info = host.start(None, None, 10.0, None, "lease-test.log").result(timeout=30)
        assert psutil.pid_exists(info["pid"]) and info["url"].startswith("http://127.0.0.1:")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and psutil.pid_exists(info["pid"]):
            time.sleep(0.2)
        assert not psutil.pid_exists(info["pid"]), "the lease ran out but the server still runs"
        assert host.renew().result(timeout=10) is False  # nothing left running on the worker
        (paths.LOGS / "lease-test.log").unlink(missing_ok=True)


def test_a_server_worker_killed_mid_cell_fails_that_cell_and_the_next_start_runs_on_its_successor(
        tmp_path: Path, monkeypatch) -> None:
    import signal
    import threading
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    m = catalog.load_catalog(runfix.SERVERS).servers["py-ok"]
    store = Store(tmp_path / "r.db")
    killed: list[int] = []

    def kill_the_server_worker(event: object) -> None:  # during repetition 1's first point
        if "c=2 · r1" in str(getattr(event, "what", "")) and not killed:
            def later() -> None:
                time.sleep(0.3)
                for p in psutil.Process().children(recursive=True):
                    try:
                        if "tiny_server.py" in " ".join(p.cmdline()):
                            worker = p.parent()
                            killed.append(worker.pid)
                            os.kill(worker.pid, signal.SIGKILL)
                            return
                    except psutil.Error:
                        continue
            threading.Thread(target=later, daemon=True).start()

    opts = _opts(allow_unverified=True)
    opts.repeat = 2
    res = run_matrix(store, opts, manifests=[m], workloads=[_workload(tmp_path)], fingerprint={"test": True},
                     on_event=kill_the_server_worker)
    assert killed and res.status == "finished"
    cells = {(c.point, c.repetition): c for c in store.cells(res.run_id)}
    first = cells[("c=2", 1)]
    assert first.status == "failed" and ("Dask worker" in first.error or "exited" in first.error), first.error
    assert cells[("c=2", 2)].status == "ok" and cells[("c=4", 2)].status == "ok", \
        [(k, c.status, c.error) for k, c in cells.items()]
