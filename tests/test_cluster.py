"""Load shards on a LocalCluster of 2 Dask workers (loopback), the real loadgen, the reference server."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from serverbench import paths
from serverbench.rules import shards
from serverbench.processes.loadgen import LoadgenError, run_loadgen
from serverbench.catalog.workloads import Point

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
from runfix import SPLIT_WORKLOAD as RUN_WORKLOAD  # noqa: E402
pytestmark = pytest.mark.skipif(not paths.loadgen_binary().is_file(), reason="loadgen not built (make loadgen)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    err = tempfile.TemporaryFile()
    p = subprocess.Popen([sys.executable, str(REFSERVER)], env={"PORT": str(port), "HOST": "127.0.0.1",
                                                                "PATH": "/usr/bin:/bin"},
                         stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise RuntimeError("refserver did not start listening")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        p.terminate()  # this PID only
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
        err.close()


@pytest.fixture(scope="module")
def cluster():
    from serverbench.cluster.load_cluster import LoadCluster
    c = LoadCluster("local:2")
    try:
        c.start()
        yield c
    finally:
        c.close()


def _counter(url: str) -> int:
    with urllib.request.urlopen(url + "/tenth?ms=0", timeout=5) as r:
        return int(r.read())


def test_shards_start_together_and_add_up_to_what_the_server_counted(cluster, server: str) -> None:
    p = Point(label="c=4", connections=4, duration="1s")
    before = _counter(server)
    lg = cluster.run(server, p, default_path="/tenth?ms=0", client_cpus=None)
    after = _counter(server)
    rep = lg.report.dump()
    assert len(rep["shards"]) == 2 and lg.extra["shards"] == 2
    assert {s["pid"] for s in rep["shards"]} == set(cluster.client.run(os.getpid).values())
    assert rep["start_skew_ms"] is not None and rep["start_skew_ms"] < 5.0, rep["start_skew_ms"]
    parts = [s["loadgen"]["summary"]["requests"] for s in rep["shards"]]
    assert rep["summary"]["requests"] == sum(parts) and min(parts) > 0
    assert [s["loadgen"]["config"]["shard"]["index"] for s in rep["shards"]] == [0, 1]
    served = after - before - 1  # the second read counts itself
    in_flight = rep["summary"]["in_flight"]
    # the server also answered requests in flight at the window's edges (at most one per connection)
    assert 0 <= served - rep["summary"]["requests"] <= max(in_flight, 4), (served, rep["summary"])
    assert rep["summary"]["latency_us"]["p99"] >= rep["summary"]["latency_us"]["p50"] > 0
    assert rep["timeline"] and rep["timeline"][0]["hist"]


def test_two_shards_agree_with_one_process_at_the_same_total_load(cluster, server: str) -> None:
    p = Point(label="rate=400", mode="open", rate=400, duration="2s", threads=1)
    one = run_loadgen(server, p, default_path="/", client_cpus=None).report.summary
    two = cluster.run(server, p, default_path="/", client_cpus=None).report.summary
    assert abs(two.responses - one.responses) <= 8, (one.responses, two.responses)  # same schedule, split
    # Both measured every due request (the schedule, not the machine's speed, decides the count).
    # Whether their latencies agree is a timing comparison: bench/shard_latency.py measures it
    # (it failed here once while another program used the second core).
    assert abs(one.due - 800) <= 2 and abs(two.due - 800) <= 2, (one.due, two.due)


def test_a_worker_killed_mid_point_fails_it_clearly_and_the_next_point_runs(cluster, server: str) -> None:
    pids = cluster.client.run(os.getpid)
    victim = sorted(pids.values())[-1]
    killer = threading.Timer(cluster_lead() + 0.5, lambda: os.kill(victim, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(LoadgenError, match=r"shard \d/2 on tcp://127\.0\.0\.1:\d+: KilledWorker"):
            cluster.run(server, Point(label="c=2", connections=2, duration="2s"), default_path="/",
                        client_cpus=None)
    finally:
        killer.cancel()
    lg = cluster.run(server, Point(label="c=2", connections=2, duration="500ms"), default_path="/",
                     client_cpus=None)
    assert lg.report.summary.ok > 0 and lg.extra["shards"] == 2


def cluster_lead() -> float:
    from serverbench.cluster.load_cluster import LEAD_S
    return LEAD_S


def _report(t: list[dict], requests: int, start: float, late_us: int) -> dict:
    from hdrh.histogram import HdrHistogram
    h = HdrHistogram(1, 3_600_000_000, 3)
    for _ in range(requests):
        h.record_value(100)
    enc = h.encode().decode()
    return {"schema": "loadgen/1", "config": {"connections": 4}, "duration_s": 2.0, "started_at_unix_s": start,
            "start_late_us": late_us,
            "summary": {"requests": requests, "responses": requests, "ok": requests, "errors": 0, "rps": 0,
                        "latency_us": {}},
            "error_classes": {"timeout": 0}, "status_codes": {"200": requests},
            "histograms": {"latency": enc, "answered": enc, "service": None}, "timeline": t}


def test_timelines_merge_second_by_second_and_skew_is_the_spread_of_actual_starts() -> None:
    from hdrh.histogram import HdrHistogram

    def sec(t: int, n: int, us: int) -> dict:
        h = HdrHistogram(1, 3_600_000_000, 2)
        h.record_value(us, n)
        return {"t": t, "completed": n, "ok": n, "errors": {"timeout": 0}, "active_connections": 2,
                "hist": h.encode().decode()}

    a = _report([sec(1, 10, 100), sec(2, 10, 100)], 20, 1000.0, 100)
    b = _report([sec(1, 30, 5000)], 30, 1000.0, 2100)
    m = shards.merge([a, b])
    assert [s["completed"] for s in m["timeline"]] == [40, 10]
    assert m["timeline"][0]["active_connections"] == 4
    assert m["timeline"][0]["p50_us"] >= 4900 and m["timeline"][1]["p99_us"] < 200
    assert m["summary"]["requests"] == 50 and m["status_codes"] == {"200": 50} and m["summary"]["rps"] == 25.0
    assert shards.start_skew_ms([a, b]) == 2.0


def test_run_with_a_cluster_stores_the_shards_and_a_killed_worker_fails_only_its_cell(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    import json

    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
    import runfix

    from serverbench.catalog import manifests as catalog
    from serverbench.catalog import workloads as wl
    from serverbench.results.aggregate import load
    from serverbench.exporters import to_json
    from serverbench.model import RunOptions
    from serverbench.run.runner import run_matrix
    from serverbench.store import Store

    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "split.toml").write_text(RUN_WORKLOAD)
    m = catalog.load_catalog(runfix.SERVERS).servers["py-ok"]
    store = Store(tmp_path / "r.db")
    cpus = sorted(os.sched_getaffinity(0))
    opts = RunOptions(servers=["py-ok"], workloads=["split"], repeat=1, allow_unverified=True, ready_timeout=10,
                      server_cpus=[cpus[0]], client_cpus=[cpus[-1]], cluster="local:2")
    killed: list[int] = []

    def kill_one_worker(event) -> None:  # once the first point's shards run: SIGKILL one Dask worker
        if "c=2 ·" in str(getattr(event, "what", "")) and not killed:
            def later() -> None:
                import psutil
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    for p in psutil.Process().children(recursive=True):
                        try:
                            if p.name() == "loadgen" and "--shard" in p.cmdline():
                                worker = p.parent()  # the Dask worker process running this shard
                                time.sleep(0.5)
                                killed.append(worker.pid)
                                os.kill(worker.pid, signal.SIGKILL)
                                return
                        except psutil.Error:
                            continue
                    time.sleep(0.05)
            threading.Thread(target=later, daemon=True).start()

    res = run_matrix(store, opts, manifests=[m], workloads=[wl.load_workloads(tmp_path / "w")["split"]],
                     fingerprint={"test": True}, on_event=kill_one_worker)
    cells = {c.point: c for c in store.cells(res.run_id)}
    assert killed, "a worker was killed"
    assert cells["c=2"].status == "failed" and "KilledWorker" in cells["c=2"].error, cells["c=2"].error
    ok = cells["c=4"]
    assert ok.status == "ok", ok.error
    assert ok.metrics.client.shards == 2 and ok.metrics.client.shard_start_skew_ms < 5.0
    run, results = load(store, res.run_id)
    doc = json.loads(to_json.render(run, results))
    from serverbench.exporters import to_markdown
    head = to_markdown.render(run, results).decode().split("## Environment and options\n\n", 1)[1].splitlines()[0]
    assert "server on CPU" in head and "load from 2 loadgen shards on Dask (local:2: this machine's CPU" in head, head
    cell = next(c for c in doc["cells"] if c["point"] == "c=4")
    assert len(cell["shards"]) == 2
    assert all({"host", "pid", "started_at", "loadgen"} <= s.keys() for s in cell["shards"])
    assert cell["loadgen"]["summary"]["requests"] == sum(s["loadgen"]["summary"]["requests"] for s in cell["shards"])


def test_target_measures_a_running_server_without_a_cluster_and_says_it_has_no_cpu_figures(
        tmp_path: Path, monkeypatch, server: str) -> None:
    from serverbench.catalog import workloads as wl
    from serverbench.model import RunOptions
    from serverbench.run.runner import run_matrix
    from serverbench.store import Store

    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "split.toml").write_text(RUN_WORKLOAD.replace('duration = "2s"', 'duration = "300ms"'))
    cpus = sorted(os.sched_getaffinity(0))
    store = Store(tmp_path / "r.db")
    opts = RunOptions(workloads=["split"], repeat=1, server_cpus=[cpus[0]], client_cpus=[cpus[-1]], target=server)
    res = run_matrix(store, opts, workloads=[wl.load_workloads(tmp_path / "w")["split"]], fingerprint={"test": True})
    cells = store.cells(res.run_id)
    assert [c.status for c in cells] == ["ok", "ok"], [c.error for c in cells]
    for c in cells:
        assert c.server == "target" and c.metrics.client.target_url == server
        assert c.metrics.counts.ok > 0 and c.metrics.usage.cpu_percent is None and c.usage is None
        assert c.metrics.client.shards is None


def test_a_local_cluster_listens_on_loopback_only(cluster) -> None:
    import psutil
    pids = [os.getpid(), *cluster.client.run(os.getpid).values()]
    listening = [c.laddr for p in pids for c in psutil.Process(p).net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening and all(a.ip == "127.0.0.1" for a in listening), listening
    assert all(a.port != 8787 for a in listening), "the scheduler's HTTP server took the dashboard's usual port"


def test_shards_on_one_machine_are_client_bound_together() -> None:
    from serverbench.cluster.load_cluster import merged_result
    rep = _report([], 10, 1000.0, 0)
    shard = {"host": "a", "pid": 1, "started_at": None, "wall_s": 1.0, "client_cpu_s": 0.48,
             "client_cpu_percent": 48.0, "client_saturated": False, "client_cores": 1, "host_cpus": 1, "loadgen": rep}
    lg = merged_result([{**shard, "index": 0}, {**shard, "index": 1, "pid": 2}])
    assert lg.client_saturated and lg.client_cores == 1, "two shards at 48 % of the one client CPU"
    lg = merged_result([{**shard, "index": 0}, {**shard, "index": 1, "host": "b"}])
    assert not lg.client_saturated and lg.client_cores == 2, "48 % on each of two machines"


def _tls_files(folder: Path) -> dict[str, str]:
    """A CA and one certificate it signed for 127.0.0.1 (scheduler, worker and client share it)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    span = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(hours=1))

    def cert(subject: str, key, issuer: str, signer, ca: bool) -> x509.Certificate:
        b = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
             .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(span[0]).not_valid_after(span[1])
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                             x509.DNSName("localhost")]), critical=False)
        return b.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = cert("serverbench test CA", ca_key, "serverbench test CA", ca_key, True)
    leaf = cert("127.0.0.1", key, "serverbench test CA", ca_key, False)
    pem = serialization.Encoding.PEM
    files = {"ca_file": folder / "ca.pem", "cert": folder / "cert.pem", "key": folder / "key.pem"}
    files["ca_file"].write_bytes(ca.public_bytes(pem))
    files["cert"].write_bytes(leaf.public_bytes(pem))
    files["key"].write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    return {k: str(v) for k, v in files.items()}


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):  # these PIDs only
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def test_shards_run_through_a_tls_scheduler_and_a_plain_client_is_refused(tmp_path: Path, server: str) -> None:
    from serverbench.cluster.load_cluster import LoadCluster, security
    tls = _tls_files(tmp_path)
    flags = ["--tls-ca-file", tls["ca_file"], "--tls-cert", tls["cert"], "--tls-key", tls["key"]]
    dask = str(Path(sys.executable).parent / "dask")
    sched_file = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(subprocess.Popen([dask, "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0",
                                       "--no-dashboard", "--scheduler-file", str(sched_file), *flags],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 30
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        import json
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tls://127.0.0.1:")
        procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(sched_file), "--host", "127.0.0.1",
                                       "--nthreads", "1", "--no-dashboard", "--resources", "loadgen=1", *flags],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with LoadCluster(address, security=security(tls)) as c:
            c.client.wait_for_workers(1, timeout=30)
            lg = c.run(server, Point(label="c=2", connections=2, duration="500ms"), default_path="/",
                       client_cpus=None)
            assert lg.extra["shards"] == 1 and lg.report.summary.ok > 0
        # the same scheduler without the client's certificate: no connection
        from distributed import Client
        with pytest.raises(Exception):
            Client(address.replace("tls://", "tcp://"), timeout=3)
    finally:
        _stop(procs)
